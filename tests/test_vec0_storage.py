"""Reading a vec0 table from sqlite-vec's storage tables: the same rows vec0 answers, or nothing.

The reader relies on an internal layout, so it must agree with vec0 row for row (holes left by
deletes, moved partitions, long and non-ASCII metadata), and give up (None) on anything it does
not recognise, leaving the caller to read through vec0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.store import connect, vec0_storage
from engram_cli.store.db import Store
from engram_cli.store.knn import IndexOptions
from engram_cli.store.vector_index import Base

MODEL = "test-model"
DIM = 8


def _open(path: Path) -> Store:
    return connect(path, create_dirs=True, index=IndexOptions(cache_dir=None))


def _by_vec0(store: Store, table: str) -> dict[int, tuple[bytes, str, str, str, str]]:
    return {
        int(pk): (bytes(blob), ns, status, mtype, agent)
        for pk, blob, ns, status, mtype, agent in store.rows(
            f"SELECT memory_pk, embedding, namespace, status, memory_type, agent_id FROM {table}"
        )
    }


def _by_storage(store: Store, table: str) -> dict[int, tuple[bytes, str, str, str, str]]:
    with store.read():
        got = vec0_storage.read(store, table, DIM)
    assert got is not None
    # Ordered by namespace, then pk, as the index keeps them.
    assert np.array_equal(np.lexsort((got.pks, got.codes["ns"])), np.arange(len(got.pks)))
    for name, values in got.vocab.items():
        assert values == sorted(values), name
    return {
        int(pk): (
            got.matrix[i].tobytes(),
            *(got.vocab[name][int(got.codes[name][i])] for name in ("ns", "status", "mtype", "agent")),
        )
        for i, pk in enumerate(got.pks.tolist())
    }


def _put(store: Store, pk: int, rng: np.random.Generator, ns: str, status: str, mtype: str, agent: str) -> None:
    store.vectors.put(MODEL, pk, rng.normal(size=DIM).astype(np.float32), namespace=ns, status=status,
                      memory_type=mtype, agent=agent)  # fmt: skip


def _one_namespace(tmp_path: Path, rows: int, seed: int, agent: str = "user") -> tuple[Store, str]:
    """A store whose model table holds ``rows`` active rows of one namespace, and that table's name."""
    store = _open(tmp_path / "m.db")
    rng = np.random.default_rng(seed)
    with store.write():
        for pk in range(1, rows + 1):
            _put(store, pk, rng, "n", "active", "semantic", agent)
    table = store.vectors.table_for(MODEL)
    assert table is not None
    return store, table


def test_agrees_with_vec0_after_deletes_moves_and_long_metadata(tmp_path: Path) -> None:
    store = _open(tmp_path / "m.db")
    rng = np.random.default_rng(3)
    agents = ["user", "a-very-long-agent-name-over-twelve-bytes", "代理人名字很长很长", "x" * 12, "y" * 13, "é" * 6]
    with store.write():
        for pk in range(1, 2600):  # more than two chunks in one namespace
            _put(store, pk, rng, ["work", "home", "项目"][pk % 3], ["active", "superseded"][pk % 2],
                 ["semantic", "episodic", "procedural"][pk % 3], agents[pk % len(agents)])  # fmt: skip
    table = store.vectors.table_for(MODEL)
    assert table is not None
    with store.write():
        for pk in range(1, 2600, 7):
            store.vectors.delete(MODEL, pk)  # holes in the validity bitmaps
        for pk in range(2, 2600, 11):
            store.vectors.set_status(MODEL, pk, "archived-because-it-faded")  # a long status, in place
        for pk in range(3, 2600, 13):
            if pk % 7 != 1:
                _put(store, pk, rng, "moved", "active", "semantic", "user")  # a new partition
        for pk in range(5000, 5040):
            _put(store, pk, rng, "home", "active", "working", "")  # an empty agent
    assert _by_storage(store, table) == _by_vec0(store, table)


def test_an_empty_table_reads_as_no_rows(tmp_path: Path) -> None:
    store = _open(tmp_path / "m.db")
    with store.write():
        _put(store, 1, np.random.default_rng(1), "a", "active", "semantic", "user")
        store.vectors.delete(MODEL, 1)
    table = store.vectors.table_for(MODEL)
    assert table is not None
    assert _by_storage(store, table) == {} == _by_vec0(store, table)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(
            st.integers(1, 60),
            st.sampled_from(["put", "delete", "status"]),
            st.sampled_from(["n1", "n2", "命名空间"]),
            st.text(min_size=0, max_size=20),
        ),
        min_size=1,
        max_size=80,
    )
)
def test_any_history_of_writes_reads_as_vec0_answers(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[int, str, str, str]]
) -> None:
    store = _open(tmp_path_factory.mktemp("h") / "m.db")
    rng = np.random.default_rng(0)
    with store.write():
        for pk, op, ns, text in ops:
            text = text.replace("\0", "")
            if op == "put":
                _put(store, pk, rng, ns, "active", "semantic", text)
            elif op == "delete":
                store.vectors.delete(MODEL, pk)
            else:
                store.vectors.set_status(MODEL, pk, text or "archived")
    table = store.vectors.table_for(MODEL)
    if table is not None:
        assert _by_storage(store, table) == _by_vec0(store, table)


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE {t}_vector_chunks00 SET vectors = x'00'",  # a blob of the wrong length
        "UPDATE {t}_chunks SET validity = zeroblob(length(validity))",  # rows vec0 still lists
        "DELETE FROM {t}_metadatachunks01",  # a metadata column's chunk gone
        "UPDATE {t}_metadatatext02 SET data = 'short'",  # a long text that no longer fits its length
    ],
)
def test_anything_unexpected_gives_up_instead_of_guessing(tmp_path: Path, damage: str) -> None:
    store, table = _one_namespace(tmp_path, 39, seed=5, agent="an-agent-name-longer-than-the-slot")
    with store.write():
        store.execute(damage.format(t=table))
    with store.read():
        assert vec0_storage.read(store, table, DIM) is None


def test_a_vector_that_differs_from_vec0s_answer_is_caught(tmp_path: Path) -> None:
    """The spot check: the storage tables read consistently, but a sampled row is not what vec0 answers."""
    store, table = _one_namespace(tmp_path, 4, seed=6)
    with store.read():
        got = vec0_storage.read(store, table, DIM)
        assert got is not None
        got.matrix[0] += 1.0
        with pytest.raises(vec0_storage.Layout):
            vec0_storage._spot_check(store, table, got)


def test_the_index_built_from_storage_is_the_index_built_from_vec0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _open(tmp_path / "m.db")
    rng = np.random.default_rng(7)
    with store.write():
        for pk in range(1, 1500):
            _put(store, pk, rng, f"ns{pk % 4}", ["active", "archived"][pk % 2], "semantic", f"agent-{pk % 3}")
        for pk in range(1, 1500, 5):
            store.vectors.delete(MODEL, pk)
    index = store.vectors.index(MODEL)
    assert index is not None
    with store.read():
        fast = index._read_all()
    monkeypatch.setattr(vec0_storage, "read", lambda *a: None)
    with store.read():
        slow = index._read_all()
    assert isinstance(fast, Base) and isinstance(slow, Base)
    assert fast.vocab == slow.vocab
    for name in fast.a:
        assert np.array_equal(fast.a[name], slow.a[name]), name


def test_rows_read_by_pk_are_what_vec0_answers(tmp_path: Path) -> None:
    store = _open(tmp_path / "m.db")
    rng = np.random.default_rng(8)
    agents = ["user", "an-agent-name-longer-than-the-slot", "代理"]
    with store.write():
        for pk in range(1, 1300):
            _put(store, pk, rng, ["a", "b"][pk % 2], "active", "semantic", agents[pk % 3])
        for pk in range(1, 1300, 4):
            store.vectors.delete(MODEL, pk)
        for pk in range(2, 1300, 9):
            store.vectors.set_status(MODEL, pk, "superseded")
    table = store.vectors.table_for(MODEL)
    assert table is not None
    asked = [*range(1, 1300, 3), 99_999]  # deleted rows and one that never was among them
    with store.read():
        got = vec0_storage.read_rows(store, table, DIM, asked)
        assert got is not None
        truth = _by_vec0(store, table)
        assert {pk: (row[0].tobytes(), *row[1:]) for pk, row in got.items()} == {
            pk: truth[pk] for pk in asked if pk in truth
        }
        assert all(vec0_storage.same_as_vec0(store, table, pk, got.get(pk)) for pk in asked[:50])
        store.execute(f"UPDATE {table}_vector_chunks00 SET vectors = x'00'")
        assert vec0_storage.read_rows(store, table, DIM, asked) is None


def test_the_index_catches_up_through_storage_or_vec0_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second connection's writes reach an open index the same way whichever reader it uses."""
    path = tmp_path / "m.db"
    writer = _open(path)
    rng = np.random.default_rng(9)
    with writer.write():
        for pk in range(1, 400):
            _put(writer, pk, rng, "n", "active", "semantic", "user")
    readers = [_open(path), _open(path)]
    indexes = [r.vectors.index(MODEL) for r in readers]
    assert all(i is not None for i in indexes)
    for index in indexes:
        assert index is not None
        index.refresh()
    assert indexes[1] is not None
    indexes[1]._storage = False  # this one reads changed rows through vec0
    with writer.write():
        for pk in range(1, 400, 3):
            _put(writer, pk, rng, "m", "superseded", "episodic", "a-long-agent-name-here")
        for pk in range(2, 400, 7):
            writer.vectors.delete(MODEL, pk)
    found = []
    for index in indexes:
        assert index is not None
        index.refresh()
        pks, matrix = index.vectors_of(list(range(1, 400)))
        found.append((pks.tolist(), matrix.tobytes(), dict(index.overlay.items()).keys(), set(index.gone)))
    assert found[0][:2] == found[1][:2]
    assert found[0][2] == found[1][2] and found[0][3] == found[1][3]
    assert indexes[0] is not None and indexes[0]._storage is True


def test_filters_of_a_model_are_what_vec0_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _open(tmp_path / "m.db")
    rng = np.random.default_rng(10)
    with store.write():
        for pk in range(1, 700):
            _put(store, pk, rng, f"ns{pk % 3}", ["active", "archived"][pk % 2], "semantic", "agent-" * (pk % 4))
        for pk in range(1, 700, 6):
            store.vectors.delete(MODEL, pk)
    fast = store.vectors.filters_of(MODEL)
    monkeypatch.setattr(vec0_storage, "read", lambda *a, **k: None)
    assert fast == store.vectors.filters_of(MODEL)
    assert len(fast) == 699 - len(range(1, 700, 6))


def test_a_slot_reused_after_a_delete_is_read_as_its_new_row(tmp_path: Path) -> None:
    """sqlite-vec gives a deleted row's slot to the next row of its partition: a read by pk follows the rowid table."""
    store, table = _one_namespace(tmp_path, 5, seed=11)
    with store.write():
        store.vectors.delete(MODEL, 3)
        _put(store, 7, np.random.default_rng(12), "n", "archived", "episodic", "someone-with-a-long-name")
    with store.read():
        got = vec0_storage.read_rows(store, table, DIM, [3, 7])
        assert got is not None and sorted(got) == [7]
        assert vec0_storage.same_as_vec0(store, table, 7, got[7])
    # A rowid table that still points a deleted row at the reused slot is not trusted.
    with store.write():
        store.execute(f"INSERT INTO {table}_rowids (rowid, chunk_id, chunk_offset) "
                      f"SELECT 3, chunk_id, chunk_offset FROM {table}_rowids WHERE rowid = 7")  # fmt: skip
    with store.read():
        assert vec0_storage.read_rows(store, table, DIM, [3]) is None
