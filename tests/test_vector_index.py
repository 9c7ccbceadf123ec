"""The vector index: a cache of each model's vectors outside the database, searched by numpy.

It must answer what sqlite-vec answers, follow every write (its own connection's, another's, a
rollback), and never trust a file that does not match the database.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli import Engram
from engram_cli import config as configmod
from engram_cli.config import schema
from engram_cli.store import connect
from engram_cli.store.db import Store, connect_read_only
from engram_cli.store.knn import IndexOptions
from engram_cli.store.vector_index import LOG_TABLE, Base, index_file

MODEL = "test-model"
DIM = 32
NAMESPACES = ["alpha", "beta", "gamma"]
STATUSES = ["active", "active", "active", "superseded", "archived"]
TYPES = ["semantic", "episodic", "procedural"]
AGENTS = ["user", "bot"]
DATA = Path(__file__).parent / "data"


def _open(path: Path, cache: Path | None, **options: Any) -> Store:
    return connect(path, create_dirs=True, index=IndexOptions(cache_dir=cache, **options))


def _fill(store: Store, n: int, seed: int = 1, start: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    with store.write():
        for i, vector in enumerate(vectors):
            store.vectors.put(
                MODEL, start + i, vector, namespace=NAMESPACES[i % 3], status=STATUSES[i % 5],
                memory_type=TYPES[i % 3], agent=AGENTS[i % 2],
            )  # fmt: skip
    return vectors


FILTERS: list[dict[str, Any]] = [
    {},
    {"namespaces": ["beta"]},
    {"namespaces": ["alpha", "gamma"], "statuses": ["active"]},
    {"statuses": ["active"], "types": ["semantic", "procedural"], "agent": "bot"},
    {"namespaces": ["nowhere"]},
]


def _same_as_vec0(store: Store, queries: np.ndarray, k: int = 10) -> None:
    for filters in FILTERS:
        for q in queries:
            ours = store.vectors.knn(MODEL, q, k, **filters)
            # With several namespaces vec0 answers k per namespace (partition); the index, k in all.
            theirs = store.vectors.knn_vec0(MODEL, q, k, **filters)[:k]
            assert [pk for pk, _ in ours] == [pk for pk, _ in theirs], filters
            assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-5)


def _queries(n: int = 5, seed: int = 99) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


def test_exact_search_answers_what_sqlite_vec_answers(db_path: Path, tmp_path: Path) -> None:
    store = _open(db_path, tmp_path / "cache")
    try:
        _fill(store, 600)
        _same_as_vec0(store, _queries())
        # Several queries in one pass give each query's own answer.
        queries = _queries(3)
        together = store.vectors.knn_many(MODEL, queries, 7, namespaces=["alpha"])
        for hits, q in zip(together, queries, strict=True):
            alone = store.vectors.knn(MODEL, q, 7, namespaces=["alpha"])
            assert [pk for pk, _ in hits] == [pk for pk, _ in alone]
            assert [s for _, s in hits] == pytest.approx([s for _, s in alone], abs=1e-5)
    finally:
        store.close()


@pytest.mark.parametrize("approx", [False, True], ids=["exact", "sign-bits"])
def test_a_shifted_query_is_searched_as_the_moved_vector_would_be(db_path: Path, tmp_path: Path, approx: bool) -> None:
    store = _open(db_path, tmp_path / "cache", approx_min_rows=1 if approx else 0, rerank=10**6)
    try:
        _fill(store, 600)
        rng = np.random.default_rng(5)
        shifts = [rng.normal(size=DIM).astype(np.float32) * scale for scale in (0.1, 1.0)]

        def same() -> None:
            for filters in [*FILTERS, {"statuses": ["superseded"]}]:  # the last: few rows pass, scored alone
                for q in _queries(3):
                    for shift in shifts:
                        first, moved = store.vectors.knn_many(MODEL, [q], 9, shift=shift, **filters)
                        unit = q / np.linalg.norm(q)
                        target = (unit + shift) / np.linalg.norm(unit + shift)
                        alone = store.vectors.knn(MODEL, target, 9, exact=True, **filters)
                        assert first == store.vectors.knn(MODEL, q, 9, **filters)
                        assert [pk for pk, _ in moved] == [pk for pk, _ in alone], filters
                        assert [s for _, s in moved] == pytest.approx([s for _, s in alone], abs=1e-5)

        same()
        with store.write():  # changed and new rows, beside the base
            for pk in range(1, 60, 3):
                store.vectors.put(MODEL, pk, rng.normal(size=DIM).astype(np.float32), namespace="beta",
                                  status="active", memory_type="semantic", agent="bot")  # fmt: skip
            store.vectors.delete(MODEL, 100)
        same()
    finally:
        store.close()


def test_the_cache_file_is_written_and_read_back_by_the_next_connection(db_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store = _open(db_path, cache)
    _fill(store, 300)
    store.vectors.knn(MODEL, _queries(1)[0], 5)
    table = store.vectors.table_for(MODEL)
    assert table is not None
    path = index_file(cache, db_path, table)
    assert path.is_file()
    store.close()

    again = _open(db_path, cache)
    try:
        index = again.vectors.index(MODEL)
        assert index is not None
        index.refresh()
        assert index.saved and index.base is not None and index.base.n == 300
        assert isinstance(index.base.a["matrix"], np.memmap | np.ndarray)
        _same_as_vec0(again, _queries())
    finally:
        again.close()


def test_writes_are_applied_as_a_delta_without_rereading_the_table(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    store = _open(db_path, cache)
    try:
        _fill(store, 300)
        store.vectors.knn(MODEL, _queries(1)[0], 5)
        index = store.vectors.index(MODEL)
        assert index is not None
        from engram_cli.store import vector_index

        def no_full_read(self: Any) -> Any:
            raise AssertionError("the whole table was read again")

        monkeypatch.setattr(vector_index.VectorIndex, "_read_all", no_full_read)
        with store.write():
            store.vectors.put(MODEL, 5000, _queries(1, 5)[0], namespace="beta", status="active",
                              memory_type="semantic", agent="bot")  # fmt: skip
            store.vectors.set_status(MODEL, 1, "archived")
            store.vectors.set_type(MODEL, 2, "episodic")
            store.vectors.delete(MODEL, 3)
        _same_as_vec0(store, _queries())
        assert index.seq == store.scalar(f"SELECT max(seq) FROM {LOG_TABLE}")
    finally:
        store.close()


def test_a_connections_own_writes_reach_its_index_without_being_read_back(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _open(db_path, tmp_path / "cache")
    try:
        _fill(store, 300)
        store.vectors.knn(MODEL, _queries(1)[0], 5)
        from engram_cli.store import vector_index

        def no_read_back(self: Any, pks: Any) -> Any:
            raise AssertionError(f"rows {list(pks)} were read back")

        monkeypatch.setattr(vector_index.VectorIndex, "rows_of", no_read_back)
        with store.write():
            store.vectors.put(MODEL, 5000, _queries(1, 5)[0], namespace="beta", status="active",
                              memory_type="semantic", agent="bot")  # fmt: skip
            store.vectors.put(MODEL, 4, _queries(1, 6)[0], namespace="alpha", status="active",
                              memory_type="episodic", agent="user")  # fmt: skip
            store.vectors.set_status(MODEL, 1, "archived")
            store.vectors.set_type(MODEL, 2, "episodic")
            store.vectors.delete(MODEL, 3)
            _same_as_vec0(store, _queries())  # inside the transaction, as the writer sees it
        _same_as_vec0(store, _queries())
        index = store.vectors.index(MODEL)
        assert index is not None and index.seq == store.scalar(f"SELECT max(seq) FROM {LOG_TABLE}")
    finally:
        store.close()


@pytest.mark.parametrize("keep", [None, 10])
def test_neighbours_found_before_a_run_of_writes_stay_exact_across_folds(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int | None
) -> None:
    """A run of batches keeps what it found before it exact, even when the index folds its changes
    into its file between batches; when it no longer holds the changes since (``keep``), it searches again."""
    from engram_cli.store import vector_index

    if keep is not None:
        monkeypatch.setattr(vector_index, "CHANGES_KEEP", keep)
    store = _open(db_path, tmp_path / "cache")
    try:
        _fill(store, 300)
        queries = _queries(4, seed=7)
        spec = {"namespaces": ["beta"], "statuses": ["active"], "agent": "bot"}
        found = store.vectors.prefetch(MODEL, queries, 5, namespace="beta", status="active", agent="bot", spare=4)
        assert found is not None
        index = store.vectors.index(MODEL)
        assert index is not None
        folds = searches = 0
        fold, search = vector_index.VectorIndex._fold, vector_index.VectorIndex.search

        def counted_fold(self: Any) -> None:
            nonlocal folds
            folds += 1
            fold(self)

        def counted_search(self: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal searches
            searches += 1
            return search(self, *args, **kwargs)

        monkeypatch.setattr(vector_index.VectorIndex, "_fold", counted_fold)
        rng = np.random.default_rng(3)
        lost = int(found.lists[0][0][0])  # the best neighbour of the first query leaves the filter
        for batch in range(4):
            with store.write():
                if batch == 1:
                    store.vectors.set_status(MODEL, lost, "archived")
                for i in range(100):  # new rows near the queries, some passing the filter, some not
                    near = queries[i % 4] + rng.normal(scale=0.5 + i / 50, size=DIM).astype(np.float32)
                    agent = "bot" if i % 3 else "user"
                    store.vectors.put(MODEL, 10_000 + 100 * batch + i, near, namespace="beta",
                                      status="active", memory_type="semantic", agent=agent)  # fmt: skip
            index.refresh()  # between batches, outside a transaction: the index may fold and save here
        assert folds >= 1
        monkeypatch.setattr(vector_index.VectorIndex, "search", counted_search)
        for j, q in enumerate(queries):
            expected = search(index, q[None, :], 5, vector_index.Filter(**spec), exact=True)[0]
            answer = found.near(j)
            assert [pk for pk, _ in answer] == [pk for pk, _ in expected]
            assert [s for _, s in answer] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert lost not in {pk for j in range(4) for pk, _ in found.near(j)}
        # With every change since at hand, nothing is searched again.
        assert (searches == 0) == (keep is None)
    finally:
        store.close()


def test_add_many_finds_a_whole_runs_neighbours_in_one_product_per_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram_cli.store import vector_index

    made: list[int] = []
    init = vector_index.Prefetched.__init__

    def counted(self: Any, index: Any, queries: np.ndarray, *args: Any, **kwargs: Any) -> None:
        made.append(len(queries))
        init(self, index, queries, *args, **kwargs)

    monkeypatch.setattr(vector_index.Prefetched, "__init__", counted)
    texts = [f"note {i}: the {w} service restarts after {i} minutes" for i, w in enumerate(["auth", "web"] * 50)]
    with _engram(tmp_path / "run.db", index=True) as mem:
        mem.add_many([{"content": t, "namespace": "proj"} for t in texts[:8]])  # the table exists, the index too
        made.clear()
        mem.add_many(
            [{"content": t, "namespace": "proj" if i % 4 else "other"} for i, t in enumerate(texts[8:])], batch_size=16
        )
    assert sorted(made) == [23, 69]  # per namespace, for the whole run of six batches


def test_a_second_connection_sees_what_another_one_wrote(db_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    reader = _open(db_path, cache)
    writer = _open(db_path, cache)
    try:
        _fill(writer, 200)
        _same_as_vec0(reader, _queries())
        _fill(writer, 50, seed=7, start=1000)  # the writer's index is not the reader's
        with writer.write():
            for pk in range(1, 40):
                writer.vectors.delete(MODEL, pk)
        _same_as_vec0(reader, _queries())
        # Enough changes make a reader fold them in and rewrite the file; the writer then catches up from it.
        _fill(writer, 400, seed=8, start=2000)
        _same_as_vec0(reader, _queries())
        _same_as_vec0(writer, _queries())
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("saved", [True, False], ids=["with-file", "memory-only"])
def test_the_index_counts_the_rows_the_table_holds(db_path: Path, tmp_path: Path, saved: bool) -> None:
    cache = tmp_path / "cache" if saved else None  # memory-only: changes stay beside the base, never folded
    reader = _open(db_path, cache)
    writer = _open(db_path, cache)
    try:

        def same() -> None:
            table = writer.vectors.table_for(MODEL)
            held = int(writer.scalar(f"SELECT count(*) FROM {table}"))
            assert writer.vectors.count(MODEL) == held
            assert reader.vectors.count(MODEL) == held

        _fill(writer, 120)
        same()
        with writer.write():
            writer.vectors.put(MODEL, 3, np.ones(DIM, dtype=np.float32), namespace="beta", status="active",
                               memory_type="semantic", agent="user")  # a row rewritten is still one row  # fmt: skip
            for pk in range(10, 30):
                writer.vectors.delete(MODEL, pk)
        same()
        _fill(writer, 40, seed=5, start=500)  # new rows, seen by the reader through the change log
        same()
    finally:
        reader.close()
        writer.close()
    store = _open(db_path, None, enabled=False)  # no index to ask: the caller counts another way
    try:
        assert store.vectors.count(MODEL) is None
    finally:
        store.close()


def test_a_rolled_back_write_leaves_no_trace(db_path: Path, tmp_path: Path) -> None:
    store = _open(db_path, tmp_path / "cache")
    try:
        _fill(store, 100)
        q = _queries(1)[0]
        before = store.vectors.knn(MODEL, q, 10)
        with pytest.raises(RuntimeError), store.write():
            store.vectors.put(MODEL, 999, q, namespace="alpha", status="active", memory_type="semantic",
                              agent="user")  # fmt: skip
            assert store.vectors.knn(MODEL, q, 1)[0][0] == 999  # seen inside its own transaction
            raise RuntimeError("boom")
        assert store.vectors.knn(MODEL, q, 10) == before
        _same_as_vec0(store, _queries())
    finally:
        store.close()


@pytest.mark.parametrize(
    "damage",
    ["truncated", "garbage", "empty", "another_database", "older_than_the_log"],
)
def test_a_file_that_does_not_match_is_rebuilt(db_path: Path, tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    store = _open(db_path, cache)
    _fill(store, 300)
    store.vectors.knn(MODEL, _queries(1)[0], 5)
    table = store.vectors.table_for(MODEL)
    assert table is not None
    path = index_file(cache, db_path, table)
    if damage == "truncated":
        os.truncate(path, path.stat().st_size // 2)
    elif damage == "garbage":
        path.write_bytes(b"not an index" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "another_database":
        other_db = tmp_path / "other.db"
        other = _open(other_db, cache)
        _fill(other, 300)  # same model, same rows: only the database differs
        other.vectors.knn(MODEL, _queries(1)[0], 5)
        other.close()
        shutil.copy(index_file(cache, other_db, table), path)
        with store.write():
            store.vectors.delete(MODEL, 1)
            store.execute(f"DELETE FROM {LOG_TABLE}")  # as if the log had moved on
    elif damage == "older_than_the_log":
        stale = path.read_bytes()
        with store.write():
            store.vectors.delete(MODEL, 10)
        store.vectors.knn(MODEL, _queries(1)[0], 5)
        with store.write():
            store.execute(f"DELETE FROM {LOG_TABLE}")  # the log was trimmed past the file
            store.vectors.delete(MODEL, 11)
        path.write_bytes(stale)
    store.close()

    again = _open(db_path, cache)
    try:
        _same_as_vec0(again, _queries())
        index = again.vectors.index(MODEL)
        assert index is not None and index.check() is None  # rewritten whole
    finally:
        again.close()


def test_a_database_restored_from_a_backup_is_not_mistaken_for_the_index(db_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store = _open(db_path, cache)
    _fill(store, 100)
    store.close()
    backup = tmp_path / "backup.db"
    shutil.copy(db_path, backup)
    store = _open(db_path, cache)
    with store.write():
        for pk in range(1, 30):
            store.vectors.delete(MODEL, pk)
    store.vectors.knn(MODEL, _queries(1)[0], 5)  # the file now reflects the deletions
    store.close()
    with open(backup, "rb") as src, open(db_path, "r+b") as dst:  # restored in place: same inode
        dst.write(src.read())
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    store = _open(db_path, cache)
    try:
        # Written again after the restore: the same sequence numbers now stand for other changes.
        with store.write():
            for pk in range(50, 79):
                store.vectors.set_status(MODEL, pk, "archived")
        _same_as_vec0(store, _queries())
    finally:
        store.close()


def test_a_read_only_database_and_an_unwritable_cache_still_search(db_path: Path, tmp_path: Path) -> None:
    store = _open(db_path, None)
    _fill(store, 200)
    store.close()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    ro = connect_read_only(db_path)
    ro.vectors.options = IndexOptions(cache_dir=blocked)
    try:
        _same_as_vec0(ro, _queries())
        index = ro.vectors.index(MODEL)
        assert index is not None and not index.saved
    finally:
        ro.close()


def test_approximate_search_keeps_recall_at_10(db_path: Path, tmp_path: Path) -> None:
    """Anisotropic vectors, as e5 makes them (a shared direction, topic clusters, per-text noise)."""
    rng = np.random.default_rng(3)
    dim, n = 384, 4000
    shared = rng.normal(size=dim)
    topics = rng.normal(size=(60, dim))
    vectors = 3.0 * shared + topics[rng.integers(0, 60, n)] + 0.8 * rng.normal(size=(n, dim))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    store = _open(db_path, tmp_path / "cache", approx_min_rows=1000, rerank=300)
    try:
        with store.write():
            for pk, vector in enumerate(vectors, start=1):
                store.vectors.put("e5-like", pk, vector, namespace="global", status="active",
                                  memory_type="semantic", agent="user")  # fmt: skip
        queries = 3.0 * shared + topics[rng.integers(0, 60, 100)] + 0.8 * rng.normal(size=(100, dim))
        found = store.vectors.knn_many("e5-like", queries, 10)
        exact = store.vectors.index("e5-like").search(queries, 10, _all(), exact=True)  # type: ignore[union-attr]
        recall = np.mean([len({p for p, _ in a} & {p for p, _ in b}) / 10 for a, b in zip(found, exact, strict=True)])
        assert recall >= 0.98
        mean_cos = float(np.mean(vectors[:500] @ vectors[:500].T))
        assert mean_cos > 0.5  # the test data is as anisotropic as the real thing
    finally:
        store.close()


def _all() -> Any:
    from engram_cli.store.knn import Filter

    return Filter()


def _flip_a_vector(file: Path, row: int) -> None:
    """Rewrite the index file with the vector of ``row`` negated, as something other than the index might."""
    loaded = Base.load(file)
    assert loaded is not None
    base, identity = loaded
    arrays = {name: np.array(a) for name, a in base.a.items()}
    arrays["matrix"][row] *= -1
    Base(arrays, base.vocab, base.dim).save(file, identity)


def test_audit_reports_and_repairs_a_stale_index(engram: Engram, tmp_path: Path) -> None:
    engram.add_many([{"content": f"The service number {i} listens on port {8000 + i}"} for i in range(5)])
    engram.recall("which port")
    model = engram.store.vectors.in_use()[0][0]
    index = engram.store.vectors.index(model)
    assert index is not None and index.file is not None and index.file.exists()
    index.rebuild()  # the file now holds the five rows, not only the changes since it was first written
    report = engram.audit()
    assert report.check("vector_index").count == 0
    _flip_a_vector(index.file, 0)  # bytes of a vector changed behind the index's back
    index.reset()
    assert engram.audit().check("vector_index").count == 1
    fixed = engram.audit(fix=True)
    assert any(a.name == "rebuilt_vector_index" for a in fixed.actions)
    assert engram.audit().check("vector_index").count == 0


def test_check_of_a_file_this_process_built_compares_it_with_that_read(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram_cli.store import vector_index

    store = _open(db_path, tmp_path / "cache")
    try:
        _fill(store, 300)
        store.vectors.knn(MODEL, _queries(1)[0], 5)  # read whole, then written to the file
        index = store.vectors.index(MODEL)
        assert index is not None and index.file is not None and index.saved
        read_all = vector_index.VectorIndex._read_all
        reads: list[int] = []

        def counted(self: Any, **kwargs: Any) -> Any:
            reads.append(1)
            return read_all(self, **kwargs)

        monkeypatch.setattr(vector_index.VectorIndex, "_read_all", counted)
        with store.write():  # a change since: left out of the comparison, as always
            store.vectors.set_status(MODEL, 1, "archived")
        assert index.check() is None
        assert reads == []
        # The file rewritten behind the index's back (another version of it): the table is read again.
        _flip_a_vector(index.file, 3)
        assert index.check() == "a vector differs from the table"
        assert reads == [1]
    finally:
        store.close()


def test_purge_and_reembed_keep_the_index_exact(db_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store = _open(db_path, cache)
    try:
        vectors = _fill(store, 200)
        store.vectors.knn(MODEL, vectors[0], 1)
        # A purge: the row goes, and the file is rewritten without it at the next search.
        with store.write():
            store.vectors.delete(MODEL, 1)
        assert store.vectors.knn(MODEL, vectors[0], 1)[0][0] != 1
        table = store.vectors.table_for(MODEL)
        assert table is not None
        loaded = Base.load(index_file(cache, db_path, table))
        assert loaded is not None and 1 not in set(loaded[0].a["pks"].tolist())
        # A reembed moves rows to another model's table: both indexes follow.
        with store.write():
            for pk in range(2, 120):
                store.vectors.delete(MODEL, pk)
                store.vectors.put("other-model", pk, vectors[pk - 1][::-1].copy(), namespace="alpha",
                                  status="active", memory_type="semantic", agent="user")  # fmt: skip
        _same_as_vec0(store, _queries())
        q = _queries(1)[0]
        ours, theirs = store.vectors.knn("other-model", q, 10), store.vectors.knn_vec0("other-model", q, 10)
        assert [pk for pk, _ in ours] == [pk for pk, _ in theirs]
        assert {pk for pk, _ in store.vectors.knn(MODEL, q, 500)} == set(range(120, 201))
    finally:
        store.close()


def _engram(path: Path, *, index: bool) -> Engram:
    paths = configmod.Paths.resolve(path)
    cfg = configmod.load(paths)
    cfg = dataclasses.replace(cfg, settings=schema.with_values(cfg.settings, {"store.vector_index": index}))
    return Engram.open(path, config=cfg, paths=paths)


def test_batch_writes_merge_and_supersede_exactly_as_one_knn_per_item(tmp_path: Path) -> None:
    pairs = [json.loads(line) for line in (DATA / "merge_pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    # Pairs side by side (the second meets the first in the same batch) and pairs a batch apart.
    texts = [t for p in pairs[:40] for t in (p["a"], p["b"])]
    texts += [p["a"] for p in pairs[40:80]] + [p["b"] for p in pairs[40:80]]
    texts += ["The API is deployed with Capistrano", "From now on the API is deployed with Kamal, not Capistrano"]
    outcomes = []
    for index in (True, False):
        with _engram(tmp_path / f"index-{index}.db", index=index) as mem:
            results = mem.add_many([{"content": t, "namespace": "proj"} for t in texts], batch_size=48)
            by_id = {r.memory.id: r.memory.content for r in results}
            outcomes.append(
                [
                    (r.action, r.memory.content, sorted(by_id.get(i, i) for i in r.superseded), r.similarity)
                    for r in results
                ]
            )  # fmt: skip
    assert [o[:3] for o in outcomes[0]] == [o[:3] for o in outcomes[1]]
    # The same cosine, up to float32 rounding (numpy and sqlite-vec sum in different orders).
    assert [o[3] or 0.0 for o in outcomes[0]] == pytest.approx([o[3] or 0.0 for o in outcomes[1]], abs=2e-4)
    actions = [o[0] for o in outcomes[0]]
    assert "merged" in actions and any(o[2] for o in outcomes[0])  # the data exercises both


def test_lookup_reads_the_same_vectors_as_the_table_through_every_change(db_path: Path, tmp_path: Path) -> None:
    store = _open(db_path, tmp_path / "cache")
    try:
        vectors = _fill(store, 300)
        pks = [*range(1, 301), 999]  # 999 has no vector
        store.vectors.knn(MODEL, _queries(1)[0], 5)  # the index is built

        def same() -> None:
            ours = store.vectors.lookup(MODEL, pks)
            theirs = store.vectors.get(MODEL, pks)
            assert sorted(ours) == sorted(theirs)
            for pk, vector in theirs.items():
                assert ours[pk].dtype == np.float32 and ours[pk].tobytes() == vector.tobytes()

        same()
        assert store.vectors.lookup(MODEL, [5])[5].tobytes() == vectors[4].tobytes()
        with store.write():
            store.vectors.put(MODEL, 7, np.ones(DIM, dtype=np.float32), namespace="beta", status="active",
                              memory_type="semantic", agent="user")  # fmt: skip
            store.vectors.delete(MODEL, 11)
            store.vectors.put(MODEL, 400, np.full(DIM, 2.0, dtype=np.float32), namespace="alpha",
                              status="active", memory_type="semantic", agent="user")  # fmt: skip
        pks.append(400)
        same()
        got = store.vectors.lookup(MODEL, [7, 11, 400])
        assert sorted(got) == [7, 400] and float(got[7][0]) == 1.0
        # What the caller does with a vector it was given does not reach the index.
        got[7][:] = 0
        assert float(store.vectors.lookup(MODEL, [7])[7][0]) == 1.0
        kept = store.vectors.lookup(MODEL, [5])
        kept[5][:] = 0
        assert store.vectors.lookup(MODEL, [5])[5].tobytes() == vectors[4].tobytes()
    finally:
        store.close()


def _same_vectors_as_vec0(store: Store, pks: list[int]) -> None:
    """matrix_of and current answer what Vectors.get and of_namespace read from the vec0 table, byte for byte."""
    assert store.vectors.index(MODEL) is not None
    truth = store.vectors.get(MODEL, pks)
    found, matrix = store.vectors.matrix_of(MODEL, pks)
    assert found.tolist() == [pk for pk in pks if pk in truth]
    assert matrix.dtype == np.float32 and matrix.shape == (len(found), DIM)
    assert all(np.array_equal(row, truth[pk]) for pk, row in zip(found.tolist(), matrix, strict=True))
    current = store.vectors.current(MODEL, pks)
    assert current.keys() == truth.keys()
    assert all(np.array_equal(current[pk], truth[pk]) for pk in truth)
    for namespace in [*NAMESPACES, "nowhere"]:
        theirs = store.vectors.of_namespace(MODEL, namespace, set(pks))
        found, matrix = store.vectors.matrix_of(MODEL, pks, namespace=namespace)
        assert found.tolist() == [pk for pk in pks if pk in theirs], namespace
        assert all(np.array_equal(row, theirs[pk]) for pk, row in zip(found.tolist(), matrix, strict=True))


@pytest.mark.parametrize("saved", [True, False], ids=["with-file", "memory-only"])
def test_vectors_by_pk_from_the_index_are_exactly_the_tables(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved: bool
) -> None:
    from engram_cli.store import vector_index

    cache = tmp_path / "cache" if saved else None
    store = _open(db_path, cache)
    rng = np.random.default_rng(3)
    # Asked in no particular order, with pks that never existed among them.
    asked = [int(pk) for pk in rng.permutation(np.arange(1, 400))] + [10_000, 0, -5]
    try:
        vectors = _fill(store, 300)
        _same_vectors_as_vec0(store, asked)
        if saved:
            table = store.vectors.table_for(MODEL)
            assert table is not None and index_file(cache, db_path, table).is_file()  # type: ignore[arg-type]
        with store.write():
            _fill(store, 50, seed=5, start=301)  # added
            store.vectors.put(MODEL, 7, -vectors[6], namespace="beta", status="active", memory_type="semantic",
                              agent="bot")  # replaced, and moved to another namespace  # fmt: skip
            store.vectors.set_status(MODEL, 8, "archived")
            store.vectors.set_type(MODEL, 9, "episodic")
            store.vectors.delete(MODEL, 10)
        _same_vectors_as_vec0(store, asked)
        # A purge: the row goes and the file is rewritten without it.
        with store.write():
            store.vectors.delete(MODEL, 11)
        _same_vectors_as_vec0(store, asked)
        # A reembed moves rows to another model's table.
        with store.write():
            for pk in range(20, 60):
                store.vectors.delete(MODEL, pk)
                store.vectors.put("other-model", pk, vectors[pk - 1][::-1].copy(), namespace="alpha",
                                  status="active", memory_type="semantic", agent="user")  # fmt: skip
        _same_vectors_as_vec0(store, asked)
        found, matrix = store.vectors.matrix_of("other-model", asked)
        assert sorted(found.tolist()) == list(range(20, 60))
        assert all(np.array_equal(row, vectors[pk - 1][::-1]) for pk, row in zip(found.tolist(), matrix, strict=True))
        # Changes folded into a new base (as many changes do) read the same.
        monkeypatch.setattr(vector_index, "OVERLAY_LIMIT", 8)
        monkeypatch.setattr(vector_index, "PERSIST_DELTA", 8)
        with store.write():
            for pk in range(100, 130):
                store.vectors.put(MODEL, pk, vectors[pk], namespace="gamma", status="active", memory_type="semantic",
                                  agent="user")  # fmt: skip
        _same_vectors_as_vec0(store, asked)
        index = store.vectors.index(MODEL)
        assert index is not None and not index.overlay
    finally:
        store.close()
    if saved:
        # The next connection reads the file and the changes logged since it was written.
        writer = _open(db_path, tmp_path / "elsewhere")
        try:
            with writer.write():
                writer.vectors.set_status(MODEL, 200, "archived")
                writer.vectors.put(MODEL, 201, vectors[0], namespace="alpha", status="active",
                                   memory_type="semantic", agent="user")  # fmt: skip
        finally:
            writer.close()
        again = _open(db_path, cache)
        try:
            index = again.vectors.index(MODEL)
            assert index is not None
            index.refresh()
            assert index.saved and index.overlay
            _same_vectors_as_vec0(again, asked)
        finally:
            again.close()


def test_vectors_by_pk_without_the_index_read_the_table(db_path: Path, tmp_path: Path) -> None:
    store = _open(db_path, tmp_path / "cache", enabled=False)
    try:
        vectors = _fill(store, 60)
        assert store.vectors.index(MODEL) is None
        found, matrix = store.vectors.matrix_of(MODEL, [5, 999, 3])
        assert found.tolist() == [5, 3]
        assert np.array_equal(matrix, vectors[[4, 2]])
        found, matrix = store.vectors.matrix_of(MODEL, [5, 6, 7], namespace="alpha")  # pk 7: i = 6, alpha
        assert found.tolist() == [7] and np.array_equal(matrix, vectors[[6]])
        found, matrix = store.vectors.matrix_of("no-such-model", [1, 2])
        assert found.tolist() == [] and matrix.shape[0] == 0
    finally:
        store.close()


@pytest.mark.parametrize("per_scan", [0, 10**9])  # every lookup by key / every lookup in one IN scan
def test_changed_rows_read_by_key_or_by_scan_are_the_same(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_scan: int
) -> None:
    from engram_cli.store import vector_index

    monkeypatch.setattr(vector_index, "POINT_LOOKUPS_PER_SCAN", per_scan)
    store = _open(db_path, tmp_path / "cache")
    try:
        vectors = _fill(store, 50)
        index = store.vectors.index(MODEL)
        assert index is not None
        rows = index.rows_of([3, 7, 999, 3])  # 999 has no row; a pk asked twice is read once
        assert sorted(rows) == [3, 7]
        assert rows[7][0].tobytes() == vectors[6].tobytes() and rows[7][1:] == index.rows_of([7])[7][1:]
        with store.write():
            store.vectors.delete(MODEL, 7)
        hits = store.vectors.knn(MODEL, vectors[6], 3)  # the index catches up through rows_of
        assert 7 not in [pk for pk, _ in hits]
    finally:
        store.close()


def test_connections_of_one_process_share_one_mapping_of_an_index_file(tmp_path: Path) -> None:
    """The warm service opens a connection per prompt: each must not map the whole file again."""
    db_path, cache = tmp_path / "m.db", tmp_path / "cache"
    writer = _open(db_path, cache)
    _fill(writer, 300)
    index = writer.vectors.index(MODEL)
    assert index is not None
    index.refresh()
    writer.close()
    first, second = _open(db_path, cache), _open(db_path, cache)
    try:
        a, b = first.vectors.index(MODEL), second.vectors.index(MODEL)
        assert a is not None and b is not None
        a.refresh()
        b.refresh()
        assert a.base is not None and b.base is not None
        assert np.shares_memory(a.base.a["matrix"], b.base.a["matrix"])
        # A rewrite is a new version: the next connection maps the new file, with the new rows.
        with first.write():
            _fill(first, 400, seed=9, start=1000)
        a.refresh()
        assert a.saved and a.base.n == 700
        third = _open(db_path, cache)
        try:
            c = third.vectors.index(MODEL)
            assert c is not None
            c.refresh()
            assert c.base is not None and c.base.n == 700 and not c.overlay
            assert not np.shares_memory(c.base.a["matrix"], b.base.a["matrix"])
        finally:
            third.close()
    finally:
        first.close()
        second.close()


def test_a_single_writes_merge_check_is_exact_where_searches_are_approximate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram_cli.store import vector_index

    path = tmp_path / "approx.db"
    paths = configmod.Paths.resolve(path)
    cfg = configmod.load(paths)
    cfg = dataclasses.replace(cfg, settings=schema.with_values(cfg.settings, {"store.vector_approx_rows": 1}))
    approximate = vector_index.VectorIndex._approx
    calls: list[str] = []

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append("approx")
        approximate(self, *args, **kwargs)

    monkeypatch.setattr(vector_index.VectorIndex, "_approx", counted)
    with Engram.open(path, config=cfg, paths=paths) as mem:
        mem.add("The staging database is restored every night at two", namespace="proj")
        mem.add("Deploys to staging need a green build on main", namespace="proj")
    # Built afresh, the index holds both rows in its base, where the approximate path searches.
    shutil.rmtree(paths.cache_dir / "vectors")
    with Engram.open(path, config=cfg, paths=paths) as mem:
        calls.clear()
        again = mem.add("The staging database is restored every night at two o'clock", namespace="proj")
        assert calls == []  # the merge check searched exactly
        assert again.action == "merged"
        mem.recall("staging database", namespace="proj")
        assert calls  # while a search above the row limit is approximate


def test_the_change_log_keeps_what_grows_with_the_store(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trimmed to eight times the changes after which the index file is rewritten (at least a floor), so a
    small store does not carry a big store's log, and a file a few rewrites old still catches up."""
    from engram_cli.store import vector_index

    monkeypatch.setattr(vector_index, "LOG_TRIM_EVERY", 64)
    monkeypatch.setattr(vector_index, "LOG_KEEP_MIN", 100)
    monkeypatch.setattr(vector_index, "PERSIST_DELTA", 10)
    assert vector_index.log_keep(0) == 100
    assert vector_index.log_keep(100_000) == 8 * 1562
    assert vector_index.log_keep(1_000_000) == 8 * 15_625
    store = _open(db_path, tmp_path / "cache")
    try:
        for round_ in range(3):  # 900 changes of 300 vectors (the store holds no memory rows)
            _fill(store, 300, seed=round_)
        held = store.scalar(f"SELECT count(*) FROM {LOG_TABLE}")
        assert 100 <= held < 100 + 64
        assert store.scalar(f"SELECT max(seq) FROM {LOG_TABLE}") == 900
        _same_as_vec0(store, _queries())
    finally:
        store.close()


def test_two_writers_making_a_models_table_at_once_both_go_on(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second looked for the table before the first made it, then waited for the write lock."""
    from engram_cli.errors import ModelError
    from engram_cli.store.vectors import Vectors, table_name

    first, second = _open(db_path, tmp_path / "cache"), _open(db_path, tmp_path / "cache")
    try:
        known = Vectors._known
        looked: list[str] = []

        def looked_too_early(self: Any, model_id: str) -> Any:
            if self is second.vectors and not looked:
                looked.append(model_id)
                return None  # what it found before the first writer committed
            return known(self, model_id)

        monkeypatch.setattr(Vectors, "_known", looked_too_early)
        assert first.vectors.ensure(MODEL, DIM) == table_name(MODEL)
        assert second.vectors.ensure(MODEL, DIM) == table_name(MODEL)
        assert looked == [MODEL]
        assert second.scalar("SELECT count(*) FROM embedding_models") == 1
        with pytest.raises(ModelError):
            second.vectors.ensure(MODEL, DIM + 1)
    finally:
        first.close()
        second.close()


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 6),
    n=st.integers(2, 400),
    k=st.integers(1, 60),
    seed=st.integers(0, 2**31),
    masked=st.floats(0.0, 1.0),
    levels=st.sampled_from([0, 3, 1000]),  # 0: continuous scores; else that many distinct values (ties)
)
def test_each_rows_best_are_what_a_full_sort_finds(
    rows: int, n: int, k: int, seed: int, masked: float, levels: int
) -> None:
    from engram_cli.store.vector_index import _best_of_rows

    if k >= n:
        k = n - 1
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(rows, n)).astype(np.float32)
    if levels:
        scores = np.round(scores * levels / 4) / levels
    scores[rng.random((rows, n)) < masked] = -np.inf  # rows the filters leave out
    picked = _best_of_rows(scores, k)
    assert picked.shape == (rows, k)
    for j in range(rows):
        assert len(set(picked[j].tolist())) == k
        assert sorted(scores[j][picked[j]].tolist()) == sorted(scores[j].tolist())[n - k :]
