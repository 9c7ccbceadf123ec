"""engram recover: every row that still reads goes into a new database; what is lost is reported."""

from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
from damaged_db import corrupt, digest, pages, place, raw, read_only, records, root_page, rowids_on
from damaged_db import pristine as pristine_path

from engram_cli import Engram
from engram_cli.errors import DatabaseDamaged, InvalidInput
from engram_cli.memory import recover as recovermod
from engram_cli.store.db import connect_read_only
from engram_cli.store.salvage import salvage

Rows = list[tuple[Any, ...]]


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pristine_path(tmp_path_factory)


def read(db: Path, sql: str, params: Sequence[Any] = ()) -> Rows:
    conn = raw(db)
    try:
        conn.enable_load_extension(True)
        import sqlite_vec

        conn.load_extension(sqlite_vec.loadable_path())
        return [tuple(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def vec_table(db: Path) -> str:
    return str(read(db, "SELECT vec_table FROM embedding_models")[0][0])


def intact_vectors(damaged: Path, pristine: Path, table: str) -> set[int]:
    """Memories whose vector bytes still read unchanged from the damaged file, found with SQLite's blob
    API rather than through vec0. A page in the middle of a chunk reads without error, as garbage."""
    original = {int(r[0]): bytes(r[1]) for r in read(pristine, f"SELECT memory_pk, embedding FROM {table}")}
    conn = raw(damaged)
    out = set()
    try:
        positions = read(pristine, f"SELECT rowid, chunk_id, chunk_offset FROM {table}_rowids")
        for pk, chunk, offset in positions:
            size = len(original[pk])
            blob = conn.blob_open("main", f"{table}_vector_chunks00", "vectors", chunk, False)
            try:
                blob.seek(offset * size)
                if blob.read(size) == original[pk]:
                    out.add(int(pk))
            except apsw.Error:
                pass
            finally:
                with contextlib.suppress(apsw.Error):
                    blob.close()
    finally:
        conn.close()
    return out


class Damage:
    """A copy of the pristine database with pages of several tables overwritten, and what they held."""

    def __init__(self, pristine: Path, db: Path) -> None:
        place(pristine, db)
        self.db = db
        leaves = pages(db, "memories", "leaf")
        middle = len(leaves) // 2
        # Two neighbouring leaves and one more after two sound ones: the sound ones between must come back.
        memory_pages = leaves[middle : middle + 2] + leaves[middle + 4 : middle + 5]
        event_pages = pages(db, "events", "leaf")[2:3]
        self.lost_pks = {pk for p in memory_pages for pk in rowids_on(db, p)}
        self.lost_event_pks = {pk for p in event_pages for pk in rowids_on(db, p)}
        overflow = pages(db, f"{vec_table(db)}_vector_chunks00", "overflow")
        index_page = pages(db, "memories_created", "leaf")[0]
        corrupt(db, [*memory_pages, *event_pages, index_page, overflow[len(overflow) // 8]])


@pytest.fixture
def damage(pristine: Path, db_path: Path) -> Damage:
    return Damage(pristine, db_path)


def test_recover_keeps_every_row_of_the_sound_pages_and_reports_the_rest(
    pristine: Path, damage: Damage, tmp_path: Path
) -> None:
    before, beside = digest(damage.db), sorted(p.name for p in damage.db.parent.iterdir())
    out = tmp_path / "recovered.db"
    report = Engram.recover(damage.db, out)
    assert digest(damage.db) == before  # the damaged file was only read
    assert sorted(p.name for p in damage.db.parent.iterdir()) == beside  # not even a -wal or -shm beside it
    assert 20 < len(damage.lost_pks) < 60

    memories = report.table("memories")
    assert memories.lost == len(damage.lost_pks) and memories.read == len(records()) - len(damage.lost_pks)
    all_rows = read(pristine, "SELECT * FROM memories ORDER BY pk")
    kept = [r for r in all_rows if r[0] not in damage.lost_pks]
    assert read(out, "SELECT * FROM memories ORDER BY pk") == kept  # identical ids, content and every column
    assert report.lost_memory_ids == sorted(r[1] for r in all_rows if r[0] in damage.lost_pks)

    for table in ("tags", "sources"):
        rows = read(pristine, f"SELECT * FROM {table} ORDER BY 1, 2")
        of_lost = [r for r in rows if r[1 if table == "sources" else 0] in damage.lost_pks]
        assert read(out, f"SELECT * FROM {table} ORDER BY 1, 2") == [r for r in rows if r not in of_lost]
        assert report.table(table).dropped == len(of_lost) and report.table(table).lost == 0

    events = read(pristine, "SELECT * FROM events ORDER BY pk")
    assert read(out, "SELECT * FROM events ORDER BY pk") == [e for e in events if e[0] not in damage.lost_event_pks]
    assert report.table("events").lost == len(damage.lost_event_pks) > 0
    assert read(out, "SELECT key, value FROM settings") == read(pristine, "SELECT key, value FROM settings")

    # Vectors: the ones before the damaged page of the chunk are copied, the rest made again.
    table = vec_table(pristine)
    vectors = report.table(table)
    readable = intact_vectors(damage.db, pristine, table) & {r[0] for r in kept}
    assert 0 < vectors.read == len(readable) and vectors.reembedded == memories.read - len(readable) > 0
    old = {
        r[0]: np.frombuffer(r[1], dtype=np.float32) for r in read(pristine, f"SELECT memory_pk, embedding FROM {table}")
    }
    new = {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in read(out, f"SELECT memory_pk, embedding FROM {table}")}
    assert set(new) == {r[0] for r in kept}
    assert all(np.array_equal(new[pk], old[pk]) for pk in readable)
    assert all(float(np.dot(new[pk], old[pk])) > 0.95 for pk in new)

    # The keyword index is rebuilt from the recovered rows, and recall finds them again.
    assert read(out, "SELECT count(*) FROM memory_fts_docsize") == [(memories.read,)]
    with Engram.open(out) as mem:
        hit = mem.recall(records()[20]["content"], k=1)[0]
        assert hit.memory.content == records()[20]["content"]
        audit = mem.audit(quick=True)
    assert audit.damage is None
    assert {c.name: c.count for c in audit.checks if c.name in ("integrity", "missing_index", "orphan_index")} == {
        "integrity": 0, "missing_index": 0, "orphan_index": 0,
    }  # fmt: skip


def test_the_cli_recovers_beside_the_database_and_says_how_to_switch(damage: Damage, cli: Any) -> None:
    result = cli("recover")
    made = [p for p in damage.db.parent.iterdir() if p.name.startswith("engram.db.recovered-")]
    assert len(made) == 1 and made[0].suffix == ".db"
    out = result.stdout
    assert f"recovered {damage.db} into {made[0]}" in out
    assert re.search(rf"memories\s+{len(records()) - len(damage.lost_pks)}\s+{len(damage.lost_pks)}\n", out)
    assert "re-embedded" in out and "left out with their lost memory" in out
    assert f"mv {damage.db} {damage.db}.damaged && mv {made[0]} {damage.db}" in out
    assert f"engram --db {made[0]}" in out
    audit = json.loads(cli("--db", str(made[0]), "audit", "--json").stdout)
    assert audit["checks"][0]["name"] == "integrity" and audit["checks"][0]["count"] == 0
    assert "Note 20 about deploy" in cli("--db", str(made[0]), "recall", records()[20]["content"], "-k", "1").stdout


def test_recover_json_lists_every_table_and_the_lost_ids(damage: Damage, tmp_path: Path, cli: Any) -> None:
    data = json.loads(cli("recover", str(tmp_path / "new.db"), "--json").stdout)
    assert data["complete"] is False and data["output"] == str(tmp_path / "new.db")
    tables = {t["table"]: t for t in data["tables"]}
    assert set(tables) >= {"memories", "tags", "sources", "events", "settings", "embedding_models",
                           "ingest_cursors", "ingest_sessions", "ingest_items", "schema_migrations"}  # fmt: skip
    assert tables["memories"]["lost"] == len(damage.lost_pks) == len(data["lost_memory_ids"])
    assert tables["memories"]["lost_ranges"]


def test_an_undamaged_database_is_copied_whole(pristine: Path, db_path: Path, tmp_path: Path) -> None:
    place(pristine, db_path)
    report = Engram.recover(db_path, tmp_path / "copy.db")
    assert report.complete and report.lost_memory_ids == []
    assert all(t.lost == 0 and t.reembedded == 0 for t in report.tables)
    for table in ("memories", "tags", "sources", "events", "settings", "schema_migrations", "embedding_models"):
        assert read(tmp_path / "copy.db", f"SELECT * FROM {table} ORDER BY 1, 2") == read(
            pristine, f"SELECT * FROM {table} ORDER BY 1, 2"
        ), table


def test_lost_vectors_made_again_lose_nothing(pristine: Path, db_path: Path, tmp_path: Path, cli: Any) -> None:
    place(pristine, db_path)
    overflow = pages(db_path, f"{vec_table(db_path)}_vector_chunks00", "overflow")
    corrupt(db_path, [overflow[len(overflow) // 8]])  # the chunk has room for 1024: 300 fill its first third
    out = cli("recover", str(tmp_path / "new.db")).stdout
    assert re.search(r"vec_\w+\s+\d+\s+(\d+)\s+(\d+) re-embedded", out)
    assert "nothing was lost; " in out and "vectors were made again" in out


def test_recover_never_overwrites(damage: Damage, tmp_path: Path, cli: Any) -> None:
    taken = tmp_path / "taken.db"
    taken.write_text("mine")
    result = cli("recover", str(taken), ok=False)
    assert result.exit_code == 1 and "already exists" in result.stderr and "never overwrites" in result.stderr
    assert taken.read_text() == "mine"
    with pytest.raises(InvalidInput, match="the damaged database itself"):
        Engram.recover(damage.db, damage.db)


def test_a_read_only_database_in_a_read_only_directory_is_recovered_elsewhere(
    damage: Damage, tmp_path: Path, cli: Any
) -> None:
    beside = sorted(p.name for p in damage.db.parent.iterdir())
    with read_only(damage.db), read_only(damage.db.parent):
        refused = cli("recover", ok=False)
        assert refused.exit_code == 1 and "its directory is not writable" in refused.stderr
        assert "engram recover /some/where" in " ".join(refused.stderr.split())
        cli("recover", str(tmp_path / "new.db"))
    assert sorted(p.name for p in damage.db.parent.iterdir()) == beside
    assert read(tmp_path / "new.db", "SELECT count(*) FROM memories") == [(len(records()) - len(damage.lost_pks),)]


def test_rows_still_in_the_wal_are_recovered_and_the_wal_moves_with_the_damaged_file(tmp_path: Path, cli: Any) -> None:
    live, crashed = tmp_path / "live" / "engram.db", tmp_path / "crashed" / "engram.db"
    live.parent.mkdir()
    crashed.parent.mkdir()
    with Engram.open(live) as mem:
        mem.add_many(records(12), no_merge=True)
        # A copy taken while the writer still holds the file: the rows are in engram.db-wal only.
        for suffix in ("", "-wal", "-shm"):
            shutil.copyfile(f"{live}{suffix}", f"{crashed}{suffix}")
    report = Engram.recover(crashed, tmp_path / "new.db")
    assert report.table("memories").read == 12 and report.complete
    assert report.side_files == [f"{crashed}-wal", f"{crashed}-shm"]
    out = cli("--db", str(crashed), "recover", str(tmp_path / "again.db")).stdout
    assert f"mv {crashed}-wal {crashed}.damaged-wal" in out


def test_a_failed_recovery_leaves_nothing_behind(damage: Damage, tmp_path: Path) -> None:
    def broken(model_id: str) -> Any:
        raise RuntimeError("the embedding model crashed")

    out = tmp_path / "new.db"
    with pytest.raises(RuntimeError):
        recovermod.run(damage.db, out, embedder=broken, fallback_model="none")
    assert list(tmp_path.glob("new.db*")) == []


def test_nothing_can_be_recovered_without_the_table_list(pristine: Path, db_path: Path, tmp_path: Path) -> None:
    place(pristine, db_path)
    with open(db_path, "r+b") as fh:  # the table list on page 1, after the 100-byte file header
        fh.seek(100)
        fh.write(random.Random(1).randbytes(4096 - 100))
    with pytest.raises(DatabaseDamaged, match="nothing in") as caught:
        Engram.recover(db_path, tmp_path / "new.db")
    assert "restore a backup" in (caught.value.hint or "")
    assert list(tmp_path.glob("new.db*")) == []


def test_a_lost_root_page_loses_the_table_but_not_the_count(pristine: Path, db_path: Path, tmp_path: Path) -> None:
    place(pristine, db_path)
    corrupt(db_path, [root_page(db_path, "memories")])
    report = Engram.recover(db_path, tmp_path / "new.db")
    assert report.table("memories").read == 0 and report.table("memories").lost == len(records())
    assert len(report.lost_memory_ids or []) == len(records())
    assert report.table("tags").dropped > 0 and report.table("events").lost == 0


# -- the salvage loop on its own ------------------------------------------------------------------


def _table(path: Path, n: int = 3000) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    rnd = random.Random(3)
    with conn:
        for i in range(1, n + 1):
            # Gaps in the keys, as deletes leave them.
            conn.execute("INSERT INTO t VALUES (?, ?)", (i * 3 + rnd.randrange(3), f"row {i} " + "x" * 150))
    conn.close()


def _salvaged(path: Path) -> tuple[Rows, Any]:
    got: Rows = []
    store = connect_read_only(path)
    try:
        result = salvage(store, "t", ["id", "body"], got.append)
    finally:
        store.close()
    return got, result


@pytest.mark.parametrize(
    "which",
    [[0], [-1], [5, 6, 9, 40], [0, -1, 20]],
    ids=["first leaf", "last leaf", "neighbours and islands", "both ends and the middle"],
)
def test_salvage_reads_exactly_the_rows_of_the_sound_pages(tmp_path: Path, which: list[int]) -> None:
    path = tmp_path / "t.db"
    _table(path)
    everything = read(path, "SELECT id, body FROM t ORDER BY id")
    leaves = pages(path, "t", "leaf")
    bad = [leaves[i] for i in which]
    lost = {pk for p in bad for pk in rowids_on(path, p)}
    corrupt(path, bad)
    got, result = _salvaged(path)
    assert got == [r for r in everything if r[0] not in lost]
    assert result.lost is None  # no index to count the rows by: the table's own count fails
    assert all(first <= pk and (last is None or pk <= last) for pk in lost for first, last in [_range_of(result, pk)])


def _range_of(result: Any, pk: int) -> tuple[int, int | None]:
    return next((first, last) for first, last in result.lost_ranges if first <= pk and (last is None or pk <= last))


def test_salvage_of_an_unreadable_root_loses_everything_quickly(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _table(path)
    corrupt(path, [root_page(path, "t")])
    got, result = _salvaged(path)
    assert got == [] and result.lost_ranges == [(1, None)]
