"""A damaged or read-only database: a clear error naming the file and the way out, never a traceback."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import pytest
from damaged_db import corrupt, digest, pages, place, raw, read_only, records, root_page
from damaged_db import pristine as pristine_path

from engram_cli import Engram
from engram_cli import config as configmod
from engram_cli.errors import DatabaseDamaged, ReadOnlyDatabase, StoreError
from engram_cli.store import connect
from engram_cli.store.migrations import MIGRATIONS

MINILM = "all-minilm-l6-v2-q8-v1"


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pristine_path(tmp_path_factory)


@pytest.fixture(scope="session")
def memory_ids(pristine: Path) -> list[str]:
    conn = raw(pristine)
    try:
        return [str(r[0]) for r in conn.execute("SELECT id FROM memories ORDER BY pk")]
    finally:
        conn.close()


def flat(text: str) -> str:
    return " ".join(text.split())


def files_in(directory: Path) -> set[str]:
    # Lock files of compact and ingest are made before the database is read, and are meant to stay; so is
    # ENGRAM_HOME's cache directory: the embedding cache (vectors made before the write found the damage) and the
    # vector index (rebuilt from the database whenever it does not match).
    return {p.name for p in directory.iterdir() if not p.name.endswith(".lock") and p.name != "cache"}


def assert_damage_error(result: Any, db: Path) -> None:
    err = flat(result.stderr)
    assert result.exit_code == 1, result.output
    assert f"Error: the database {db} is damaged" in err
    assert f"Hint: `engram --db {db} recover` copies what can still be read into a new database" in err
    assert "restore a backup" in err
    assert "Traceback" not in result.output and "apsw" not in result.output


# -- damage -----------------------------------------------------------------------------------


@pytest.fixture
def damaged(pristine: Path, db_path: Path) -> Path:
    """The default database, with the root pages of memories, events and an index of memories overwritten."""
    place(pristine, db_path)
    corrupt(
        db_path, [root_page(db_path, "memories"), root_page(db_path, "events"), root_page(db_path, "memories_model")]
    )
    return db_path


@pytest.fixture
def leaf_damaged(pristine: Path, db_path: Path) -> Path:
    """Three leaf pages in the middle of the memories table overwritten; the rest of the file is sound."""
    place(pristine, db_path)
    leaves = pages(db_path, "memories", "leaf")
    middle = len(leaves) // 2
    corrupt(db_path, leaves[middle : middle + 2] + leaves[middle + 4 : middle + 5])
    return db_path


COMMANDS = [
    ["list"],
    ["recall", "when does the backup job run"],
    ["inspect", "{id}"],
    ["history"],
    ["history", "{id}"],
    ["export", "--all-namespaces"],
    ["export", "--all-namespaces", "{out}/export.jsonl"],
    ["audit"],
    ["audit", "--json"],
    ["audit", "--fix"],
    ["decay"],
    ["compact"],
    ["add", "the backup disk was replaced on Monday"],
    ["forget", "{id}"],
    ["touch", "{id}"],
    ["reembed", "--model", MINILM],
    ["ingest", "notes", "--path", "{out}/notes"],
    ["models"],
    ["eval", "{out}/queries.jsonl"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_on_a_damaged_file_names_it_and_the_way_out(
    command: list[str], damaged: Path, memory_ids: list[str], tmp_path: Path, cli: Any
) -> None:
    out = tmp_path / "elsewhere"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "deploy.md").write_text("# Deploy\n\nWe deploy with `make release` on Fridays.\n")
    (out / "queries.jsonl").write_text(json.dumps({"query": "backup", "expected": {"contains": ["backup"]}}) + "\n")
    before, beside, around = digest(damaged), files_in(damaged.parent), files_in(out)
    args = [part.format(id=memory_ids[0], out=out) for part in command]
    assert_damage_error(cli(*args, ok=False), damaged)
    assert digest(damaged) == before  # a failed write changed nothing
    assert files_in(damaged.parent) == beside
    assert files_in(out) == around  # no export.jsonl, no export.jsonl.tmp


def test_damage_in_the_middle_fails_a_full_read_not_the_undamaged_rows(leaf_damaged: Path, cli: Any) -> None:
    newest = cli("list", "--limit", "3")
    assert newest.exit_code == 0 and "Note 298" in newest.stdout  # its page is sound
    assert_damage_error(cli("list", "--all", "--limit", "1000", ok=False), leaf_damaged)
    assert_damage_error(cli("export", "--all-namespaces", ok=False), leaf_damaged)


def test_the_library_raises_database_damaged_never_apsw(damaged: Path) -> None:
    with Engram.open(damaged) as mem:
        with pytest.raises(DatabaseDamaged, match=str(damaged)) as caught:
            mem.list(limit=10)
        assert "engram recover" in (caught.value.hint or "") or "recover" in (caught.value.hint or "")
        for call in (lambda: mem.recall("backup"), lambda: mem.events(), lambda: mem.add("a new fact")):
            with pytest.raises(DatabaseDamaged):
                call()


def test_rows_read_lazily_raise_database_damaged_when_they_reach_the_bad_page(leaf_damaged: Path) -> None:
    with Engram.open(leaf_damaged) as mem:
        lines = mem.export(all_namespaces=True)  # a generator: nothing is read yet
        with pytest.raises(DatabaseDamaged):
            next(iter(lines))
        read: list[int] = []
        with pytest.raises(DatabaseDamaged):
            for (pk,) in mem.store.execute("SELECT pk FROM memories ORDER BY pk"):
                read.append(pk)
        assert read[:3] == [1, 2, 3] and 100 < len(read) < len(records())


@pytest.mark.parametrize("index", [True, False], ids=["vector-index", "sqlite-vec"])
def test_a_damaged_vector_page_is_damage_too(pristine: Path, db_path: Path, index: bool) -> None:
    place(pristine, db_path)
    with Engram.open(db_path) as mem:
        table = f"vec_{mem.active_model.replace('-', '_')}_vector_chunks00"
    overflow = pages(db_path, table, "overflow")
    corrupt(db_path, overflow[len(overflow) // 4 : len(overflow) // 4 + 1])
    # The vector index reads the page as SQLite's; without it, sqlite-vec reads it and says so its own way.
    config = configmod.load()
    store = replace(config.settings.store, vector_index=index)
    config = replace(config, settings=replace(config.settings, store=store))
    expected = "is damaged" if index else "vector index page"
    with Engram.open(db_path, config=config) as mem, pytest.raises(DatabaseDamaged, match=expected):
        mem.recall("Note 290 about backup")


def test_a_damaged_keyword_index_is_damage_too(pristine: Path, db_path: Path) -> None:
    place(pristine, db_path)
    corrupt(db_path, pages(db_path, "memory_fts_data", "leaf")[1:3])
    with Engram.open(db_path) as mem, pytest.raises(DatabaseDamaged):
        mem.recall("host service team")


class _FailingReads(apsw.VFS):
    """The default file system, except that reading the given pages fails like a bad sector."""

    NAME = "engram-test-bad-sectors"

    def __init__(self, bad_pages: set[int]) -> None:
        self.bad_pages = bad_pages
        super().__init__(self.NAME, "")

    def xOpen(self, name: Any, flags: Any) -> apsw.VFSFile:
        vfs = self

        class File(apsw.VFSFile):
            def xRead(self, amount: int, offset: int) -> bytes:
                if offset // 4096 + 1 in vfs.bad_pages:
                    raise apsw.exception_for(apsw.SQLITE_IOERR_READ)
                return bytes(super().xRead(amount, offset))

        return File("", name, flags)


def test_a_disk_that_cannot_read_a_page_is_damage(pristine: Path, db_path: Path) -> None:
    from engram_cli import config as configmod
    from engram_cli.store.db import Store

    place(pristine, db_path)
    vfs = _FailingReads(set(pages(db_path, "memories", "leaf")[3:4]))
    try:
        conn = apsw.Connection(str(db_path), vfs=_FailingReads.NAME, flags=apsw.SQLITE_OPEN_READWRITE)
        mem = Engram(Store(conn, db_path), configmod.load(configmod.Paths.resolve(db_path)))
        with pytest.raises(DatabaseDamaged, match="the disk could not read part of it") as caught:
            mem.list(limit=1000, all_namespaces=True)
        assert str(db_path) in caught.value.message and "recover" in (caught.value.hint or "")
        mem.close()
    finally:
        vfs.unregister()


def test_a_garbled_first_page_is_damage_not_a_foreign_file(pristine: Path, db_path: Path, cli: Any) -> None:
    place(pristine, db_path)
    with open(db_path, "r+b") as fh:
        fh.seek(16)  # after the 16-byte "SQLite format 3" header string
        fh.write(os.urandom(4000))
    with pytest.raises(DatabaseDamaged, match="header or table list"):
        Engram.open(db_path)
    assert_damage_error(cli("list", ok=False), db_path)


def test_audit_reports_damage_in_its_integrity_check(leaf_damaged: Path, cli: Any) -> None:
    with Engram.open(leaf_damaged) as mem:
        report = mem.audit()
    integrity = report.check("integrity")
    assert integrity.problem and integrity.details["damaged"] is True
    assert "engram recover" in (integrity.hint or "")
    assert any("btreeInitPage" in e["detail"] or "Tree" in e["detail"] for e in integrity.examples)
    assert isinstance(report.damage, DatabaseDamaged)
    result = cli("audit", "--json", ok=False)
    data = json.loads(result.stdout)  # the report as far as it could read, then the error
    assert data["problems"] == ["integrity"] and data["checks"][0]["details"]["damaged"] is True
    assert_damage_error(result, leaf_damaged)


def test_audit_runs_the_other_checks_when_only_an_index_is_damaged(pristine: Path, db_path: Path, cli: Any) -> None:
    place(pristine, db_path)
    corrupt(db_path, pages(db_path, "memories_created", "leaf")[:1])
    before = digest(db_path)
    with Engram.open(db_path) as mem:
        report = mem.audit(fix=True)
    assert report.damage is not None and report.check("integrity").count > 0
    assert {c.name for c in report.checks} > {"integrity", "secrets", "missing_index"}  # these still read
    assert report.actions == []  # --fix repaired nothing: every repair writes
    assert any("--fix repaired nothing" in e["detail"] for e in report.check("integrity").examples)
    assert digest(db_path) == before
    assert_damage_error(cli("audit", "--fix", ok=False), db_path)
    assert digest(db_path) == before


def test_doctor_points_a_damaged_database_to_recover(leaf_damaged: Path, cli: Any) -> None:
    result = cli("doctor", "--json", ok=False)
    assert result.exit_code == 1
    database = next(c for c in json.loads(result.stdout) if c["check"] == "database")
    assert database["status"] == "fail" and "damaged" in database["detail"]
    assert "recover" in database["hint"]


def test_a_file_that_is_not_sqlite_is_still_refused_as_such(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"not a database at all\n" * 300)
    with pytest.raises(StoreError, match="not an engram database") as caught:
        connect(junk)
    assert not isinstance(caught.value, DatabaseDamaged)


# -- read-only ----------------------------------------------------------------------------------


def access_counts(db: Path) -> list[int]:
    conn = raw(db)
    try:
        return [int(r[0]) for r in conn.execute("SELECT access_count FROM memories ORDER BY pk")]
    finally:
        conn.close()


@pytest.fixture(params=["file", "directory"])
def locked(request: pytest.FixtureRequest, pristine: Path, db_path: Path) -> Any:
    """The default database, read-only itself or inside a read-only directory (no -wal or -shm beside it)."""
    place(pristine, db_path)
    with read_only(db_path if request.param == "file" else db_path.parent):
        yield db_path


def test_reads_work_on_a_read_only_database(locked: Path, memory_ids: list[str], cli: Any, tmp_path: Path) -> None:
    before, beside = access_counts(locked), files_in(locked.parent)
    recall = cli("recall", "when does the backup job run")
    assert "Note" in recall.stdout
    assert flat(recall.stderr).count("is read-only: access counts are not updated") == 1
    assert cli("recall", "backup", "--no-touch").stderr == ""
    assert memory_ids[5][:8] in cli("list", "--all", "--limit", "1000").stdout
    assert cli("inspect", memory_ids[5]).exit_code == 0
    assert cli("history", memory_ids[5]).exit_code == 0
    cli("export", "--all-namespaces", str(tmp_path / "out.jsonl"))
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == len(records())
    assert "no problems" in cli("audit").stdout
    assert cli("decay", "--dry-run").exit_code == 0
    assert cli("compact", "--dry-run").exit_code == 0
    assert access_counts(locked) == before
    if not os.access(locked.parent, os.W_OK):
        assert files_in(locked.parent) == beside  # nothing was made in the read-only directory


WRITES = [
    ["add", "a new fact"],
    ["forget", "{id}"],
    ["touch", "{id}"],
    ["decay"],
    ["compact"],
    ["import", "{out}/in.jsonl"],
    ["ingest", "notes", "--path", "{out}/notes"],
    ["reembed", "--model", MINILM],
    ["audit", "--fix"],
]


@pytest.mark.parametrize("command", WRITES, ids=[" ".join(c) for c in WRITES])
def test_writes_on_a_read_only_database_say_how_to_fix_it(
    command: list[str], locked: Path, memory_ids: list[str], tmp_path: Path, cli: Any
) -> None:
    out = tmp_path / "elsewhere"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "deploy.md").write_text("# Deploy\n\nWe deploy with `make release` on Fridays.\n")
    (out / "in.jsonl").write_text("")
    before = digest(locked)
    result = cli(*[part.format(id=memory_ids[0], out=out) for part in command], ok=False)
    err = flat(result.stderr)
    assert result.exit_code == 1, result.output
    assert f"Error: cannot change {locked}:" in err and "read-only" in err
    assert "Hint: make it writable (chmod u+w" in err
    assert "Traceback" not in result.output
    assert digest(locked) == before


def test_the_library_reads_a_read_only_database_and_refuses_changes(locked: Path) -> None:
    before = access_counts(locked)
    with Engram.open(locked) as mem:
        assert mem.read_only is True
        assert mem.recall("backup", bump=True)
        with pytest.raises(ReadOnlyDatabase, match=str(locked)):
            mem.add("a new fact")
        with pytest.raises(ReadOnlyDatabase):
            mem.store.set_setting("k", "v")
    assert access_counts(locked) == before


def test_a_writable_database_is_not_read_only(engram: Engram) -> None:
    assert engram.read_only is False


def test_pending_migrations_on_a_read_only_file_are_a_clear_error(db_path: Path) -> None:
    connect(db_path, create_dirs=True, migrations=MIGRATIONS[:1]).close()
    with read_only(db_path):
        with pytest.raises(ReadOnlyDatabase, match="needs a schema upgrade") as caught:
            Engram.open(db_path)
        assert "chmod u+w" in (caught.value.hint or "")


def test_doctor_warns_about_a_read_only_database(locked: Path, cli: Any) -> None:
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["writable"]["status"] == "warn" and "chmod u+w" in checks["writable"]["hint"]
    assert checks["database"]["status"] == "ok"
