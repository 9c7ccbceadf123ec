"""The store's repositories: what the engine relies on them to do, stated without the engine."""

from __future__ import annotations

import numpy as np
import pytest

from engram_cli import Engram
from engram_cli.errors import ConflictError
from engram_cli.memory.model import Filters, Source

E5 = "multilingual-e5-small-q4-v1"


def _unit(dim: int, seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_an_update_from_a_stale_read_is_a_conflict_and_changes_nothing(engram: Engram) -> None:
    pk = engram.add("the staging database lives on db-stage-2").memory.pk
    store = engram.store
    first, second = store.memories.load(pk), store.memories.load(pk)
    with store.write():
        store.memories.update(first, "2030-01-01T00:00:00.000000Z", importance=0.9)
    with pytest.raises(ConflictError), store.write():
        store.memories.update(second, "2030-01-02T00:00:00.000000Z", importance=0.1)
    now = store.memories.load(pk)
    assert (now.importance, now.version, now.updated_at) == (0.9, first.version, "2030-01-01T00:00:00.000000Z")


def test_update_takes_metadata_decoded_and_refuses_columns_it_may_not_change(engram: Engram) -> None:
    memory = engram.add("deploys go out on Tuesdays").memory
    store = engram.store
    with store.write():
        store.memories.update(memory, "2030-01-01T00:00:00.000000Z", metadata={"b": 1, "a": "二"})
    assert store.rows("SELECT metadata FROM memories WHERE pk = ?", (memory.pk,)) == [('{"a":"二","b":1}',)]
    for column in ("id", "namespace", "version", "pk; DROP TABLE memories"):
        with pytest.raises(ValueError, match="not a column"), store.write():
            store.memories.update(memory, "2030-01-02T00:00:00.000000Z", **{column: "x"})


def test_load_many_with_sources_reads_what_load_reads(engram: Engram) -> None:
    pks = [r.memory.pk for r in engram.add_many([{"content": t} for t in ("alpha notes", "beta notes", "gamma")])]
    store = engram.store
    with store.write():
        store.sources.add(pks[0], Source(kind="chat", content="a supplement"), "2030-01-01T00:00:00.000000Z")
        store.sources.add(pks[0], Source(kind="file", ref="notes.md"), "2030-01-02T00:00:00.000000Z")
    many = store.memories.load_many(pks, with_sources=True)
    assert [many[pk].to_dict() for pk in pks] == [store.memories.load(pk).to_dict() for pk in pks]
    assert [s.kind for s in many[pks[0]].sources] == ["api", "chat", "file"]


def test_a_vector_table_made_in_a_rolled_back_transaction_is_not_remembered(engram: Engram) -> None:
    store = engram.store
    memory = engram.add("the release bot authenticates with a deploy key").memory
    with pytest.raises(RuntimeError), store.write():
        with store.write():  # a savepoint inside the transaction
            store.vectors.ensure("a-second-model", 4)
        assert store.vectors.table_for("a-second-model") == "vec_a_second_model"
        raise RuntimeError("the transaction fails after the table was made")
    assert store.vectors.table_for("a-second-model") is None
    with store.write():
        with pytest.raises(RuntimeError), store.write():
            store.vectors.ensure("a-second-model", 4)
            raise RuntimeError("only the savepoint fails")
        assert store.vectors.table_for("a-second-model") is None
        # Made again, not taken for made: the vector goes into a table that exists.
        store.vectors.put(
            "a-second-model", memory.pk, _unit(4, 0),
            namespace=memory.namespace, status="active", memory_type=memory.type, agent=memory.agent,
        )  # fmt: skip
    assert store.vectors.get("a-second-model", [memory.pk])[memory.pk].shape == (4,)
    assert [m for m, _ in store.vectors.in_use()] == ["a-second-model", E5]


def test_selection_by_filters_is_the_same_for_every_reader(engram: Engram) -> None:
    engram.add("tagged in one", namespace="one", tags=["ops"])
    engram.add("untagged in one", namespace="one")
    engram.add("tagged in two", namespace="two", tags=["ops"])
    store = engram.store
    filters = Filters(namespaces=["one"], tags=["ops"])
    pks = store.memories.pks(filters, order="pk")
    assert [store.memories.load(pk).content for pk in pks] == ["tagged in one"]
    assert store.memories.count(filters) == 1
    assert {r.content for r in store.memories.scan(filters)} == {"tagged in one"}
    assert store.memories.passing(store.memories.pks(Filters(namespaces=None), order="pk"), filters) == set(pks)
    assert [pk for pk, _ in store.keywords.search(["tagged"], filters, 10)] == pks
    # Any number of candidates, repeated or unknown ones among them; and none at all.
    every = store.memories.pks(Filters(namespaces=None), order="pk")
    assert store.memories.passing([*every, *every, *range(10_000, 11_200)], filters) == set(pks)
    assert store.memories.passing([], filters) == set()
    # The models in scope: those of the memories that pass, none for a namespace that holds nothing.
    assert store.memories.models(Filters(namespaces=["one"])) == [E5]
    assert store.memories.models(Filters(namespaces=["nowhere", "two"], statuses=["archived"])) == []
    assert store.memories.models(Filters(namespaces=None)) == [E5]
