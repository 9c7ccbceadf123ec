"""connect(): file creation, permissions, pragmas, migrations, refusal of foreign files; transactions."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from damaged_db import read_only

from engram_cli import Engram
from engram_cli.errors import ConflictError, StoreError
from engram_cli.memory.remember import Writer
from engram_cli.store import Store, connect
from engram_cli.store.migrations import MIGRATIONS, Migration


def test_creates_private_file_in_private_directory(tmp_path: Path) -> None:
    db = tmp_path / "data" / "engram.db"
    store = connect(db, create_dirs=True)
    store.close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700


def test_pragmas_and_extension(tmp_path: Path) -> None:
    store = connect(tmp_path / "e.db")
    try:
        assert store.scalar("PRAGMA journal_mode") == "wal"
        assert store.scalar("PRAGMA foreign_keys") == 1
        assert store.scalar("SELECT vec_version()").startswith("v")
        assert store.schema_version() == max(m.id for m in MIGRATIONS)
        names = [r[1] for r in store.rows("SELECT id, name FROM schema_migrations ORDER BY id")]
        assert names == [m.name for m in MIGRATIONS]
    finally:
        store.close()


def test_reopening_applies_nothing_twice(tmp_path: Path) -> None:
    connect(tmp_path / "e.db").close()
    store = connect(tmp_path / "e.db")
    try:
        assert store.scalar("SELECT count(*) FROM schema_migrations") == len(MIGRATIONS)
    finally:
        store.close()


def test_failing_migration_rolls_back_with_its_record(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    connect(db).close()

    def broken(conn: apsw.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        conn.execute("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(apsw.SQLError):
        connect(db, migrations=[*MIGRATIONS, Migration(999, "broken", broken)])
    store = connect(db)
    try:
        assert store.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'") == 0
        assert store.scalar("SELECT max(id) FROM schema_migrations") == max(m.id for m in MIGRATIONS)
    finally:
        store.close()


def test_database_from_a_newer_engram_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    store = connect(db)
    store.execute("INSERT INTO schema_migrations VALUES (9999, 'future', '2030-01-01T00:00:00Z')")
    store.close()
    with pytest.raises(StoreError, match="newer engram"):
        connect(db)


def test_missing_directory_is_an_error_not_a_surprise_mkdir(tmp_path: Path) -> None:
    db = tmp_path / "nope" / "engram.db"
    with pytest.raises(StoreError, match="does not exist") as info:
        connect(db)
    assert info.value.hint and "--db" in info.value.hint
    assert not db.parent.exists()


def test_parent_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError):
        connect(blocker / "engram.db")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into any directory")
def test_unwritable_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(StoreError, match="permission denied"):
        connect(locked / "engram.db")


def test_file_that_is_not_sqlite_is_refused_and_untouched(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    payload = b"these are my notes, not a database\n" * 100
    junk.write_bytes(payload)
    with pytest.raises(StoreError, match="not an engram database"):
        connect(junk)
    assert junk.read_bytes() == payload


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.close()
    with pytest.raises(StoreError, match="did not create"):
        connect(other)
    conn = apsw.Connection(str(other))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables == {"customers"}


def test_write_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    store = connect(tmp_path / "e.db")
    try:
        with pytest.raises(RuntimeError), store.write():
            store.execute("INSERT INTO settings (key, value) VALUES ('a', '1')")
            raise RuntimeError("boom")
        assert store.setting("a") is None
    finally:
        store.close()


def _settings(store: Store) -> dict[str, str]:
    return {str(k): str(v) for k, v in store.rows("SELECT key, value FROM settings ORDER BY key")}


def test_a_failed_nested_write_undoes_only_its_own_work(tmp_path: Path) -> None:
    store = connect(tmp_path / "e.db")
    try:
        with store.write():
            store.set_setting("outer", "1")
            with pytest.raises(RuntimeError), store.write():
                store.set_setting("inner", "1")
                store.set_setting("outer", "changed inside")
                raise RuntimeError("boom")
            assert _settings(store) == {"outer": "1"}
            store.set_setting("after", "1")
        assert _settings(store) == {"after": "1", "outer": "1"}
    finally:
        store.close()


def test_a_nested_write_that_succeeded_is_undone_with_its_outer_transaction(tmp_path: Path) -> None:
    store = connect(tmp_path / "e.db")
    try:
        with pytest.raises(RuntimeError), store.write():
            with store.write():
                store.set_setting("inner", "1")
            raise RuntimeError("boom")
        assert _settings(store) == {}
    finally:
        store.close()


def test_a_retry_inside_an_outer_transaction_keeps_the_outer_work(tmp_path: Path) -> None:
    # The shape of the ingest loader: one transaction per file, and inside it a writer that
    # retries its batch on a write conflict.
    store = connect(tmp_path / "e.db")
    attempts: list[int] = []
    try:
        with store.write():
            store.set_setting("cursor", "file read up to byte 10")
            for attempt in range(3):
                try:
                    with store.write():
                        attempts.append(attempt)
                        store.set_setting(f"attempt {attempt}", "written")
                        if attempt < 2:
                            raise ConflictError("changed by another writer")
                    break
                except ConflictError:
                    continue
        assert attempts == [0, 1, 2]
        assert _settings(store) == {"attempt 2": "written", "cursor": "file read up to byte 10"}
    finally:
        store.close()


def test_a_conflict_retried_by_write_batch_inside_an_outer_transaction_writes_each_memory_once(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = engram.add("the staging database lives on db-stage-2")
    writer = engram._writer(no_merge=False)
    real = Writer._write_one
    calls = {"n": 0}

    def conflicting(self: Writer, *args: Any, **kwargs: Any) -> Any:
        result = real(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:  # the memory is written, then another writer wins the race
            raise ConflictError("changed by another writer")
        return result

    monkeypatch.setattr(Writer, "_write_one", conflicting)
    item = engram._prepare({"content": "deploys go out on Tuesdays after the standup"})
    with engram.store.write():
        engram.store.set_setting("outer", "kept")
        (result,) = writer.write_batch([item])
    assert calls["n"] == 2
    assert result.action == "created"
    assert engram.store.setting("outer") == "kept"
    contents = [str(r[0]) for r in engram.store.rows("SELECT content FROM memories ORDER BY pk")]
    assert contents == [first.memory.content, "deploys go out on Tuesdays after the standup"]
    kinds = [str(r[0]) for r in engram.store.rows("SELECT kind FROM events WHERE memory_id = ?", (result.id,))]
    assert kinds == ["created"]


# -- bulk: when the write-ahead log is copied into the file ----------------------------------------

PAGE = 4096


def _write_pages(store: Store, transactions: int, pages: int) -> None:
    """``transactions`` commits of about ``pages`` new pages each (a scratch table in a test database)."""
    store.execute("CREATE TABLE IF NOT EXISTS scratch (x BLOB)")
    for _ in range(transactions):
        with store.write():
            store.execute("INSERT INTO scratch (x) VALUES (randomblob(?))", (pages * PAGE,))


def _sizes(path: Path) -> tuple[int, int]:
    """(database file, log file) sizes in pages."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size // PAGE, (wal.stat().st_size // PAGE if wal.exists() else 0)


@pytest.fixture
def scratch_store(tmp_path: Path) -> Iterator[Store]:
    store = connect(tmp_path / "e.db")
    yield store
    store.close()


def test_without_bulk_sqlite_copies_the_log_every_thousand_pages(scratch_store: Store) -> None:
    _write_pages(scratch_store, 12, 200)
    file_pages, log_pages = _sizes(scratch_store.path)
    assert log_pages < 1400  # reused from the start after each copy
    assert file_pages > 1000  # most of the 2,400 pages are in the file already


def test_bulk_copies_the_log_in_long_stretches_then_once_at_its_end(scratch_store: Store) -> None:
    store, db = scratch_store, scratch_store.path
    before, _ = _sizes(db)
    with store.bulk():
        _write_pages(store, 12, 200)
        file_pages, log_pages = _sizes(db)
        assert log_pages > 2400  # every page still in the log
        assert file_pages == before
        assert store.scalar("SELECT count(*) FROM scratch") == 12
    file_pages, _ = _sizes(db)
    assert file_pages > before + 2400  # copied when the run ended
    # SQLite's own copying is back for what comes next.
    assert store.scalar("PRAGMA wal_autocheckpoint") == 1000
    _write_pages(store, 12, 200)
    assert _sizes(db)[1] < 2600


def test_bulk_holds_a_larger_page_cache_then_gives_it_back(scratch_store: Store) -> None:
    from engram_cli.store.database import BULK_CACHE_KIB

    store = scratch_store
    before = store.scalar("PRAGMA cache_size")
    with store.bulk():
        assert store.scalar("PRAGMA cache_size") == -BULK_CACHE_KIB
    assert store.scalar("PRAGMA cache_size") == before
    # A cache already larger (set in pages here) is left as it is.
    pages = 4 * BULK_CACHE_KIB * 1024 // store.scalar("PRAGMA page_size")
    store.execute(f"PRAGMA cache_size = {pages}")
    with store.bulk():
        assert store.scalar("PRAGMA cache_size") == pages
    assert store.scalar("PRAGMA cache_size") == pages


def test_bulk_still_copies_once_the_log_reaches_its_own_limit(
    scratch_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram_cli.store import database

    monkeypatch.setattr(database, "BULK_CHECKPOINT_PAGES", 1500)
    with scratch_store.bulk():
        _write_pages(scratch_store, 12, 200)
        file_pages, log_pages = _sizes(scratch_store.path)
        assert log_pages < 1800
        assert file_pages > 1400


def test_what_a_bulk_run_committed_survives_a_crash_before_any_copy(scratch_store: Store, tmp_path: Path) -> None:
    import shutil

    store, db = scratch_store, scratch_store.path
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    with store.bulk():
        _write_pages(store, 6, 200)
        # The process dies here: the files are left as they are, the log never copied.
        for suffix in ("", "-wal"):
            shutil.copyfile(f"{db}{suffix}", crashed / f"e.db{suffix}")
        with store.write():  # a transaction in flight at the crash is not in the copy
            store.execute("INSERT INTO scratch (x) VALUES (zeroblob(1))")
    reopened = connect(crashed / "e.db")
    try:
        assert reopened.scalar("SELECT count(*) FROM scratch") == 6
        assert reopened.scalar("PRAGMA integrity_check") == "ok"
    finally:
        reopened.close()


def test_nested_bulk_leaves_the_outer_run_in_charge(scratch_store: Store) -> None:
    store, db = scratch_store, scratch_store.path
    before, _ = _sizes(db)
    with store.bulk():
        with store.bulk():
            _write_pages(store, 4, 200)
        _write_pages(store, 4, 200)
        assert _sizes(db)[0] == before  # the inner end copied nothing
    assert _sizes(db)[0] > before + 1600


def test_a_connection_closed_during_a_bulk_run_leaves_the_run_s_own_error(tmp_path: Path) -> None:
    store = connect(tmp_path / "e.db")
    with pytest.raises(RuntimeError, match="the run's own"), store.bulk():
        _write_pages(store, 2, 10)
        store.close()
        raise RuntimeError("the run's own")


def test_bulk_on_a_read_only_store_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    connect(db).close()
    with read_only(db):
        store = connect(db)
        try:
            assert store.read_only is not None
            with store.bulk():
                assert store.scalar("SELECT count(*) FROM memories") == 0
        finally:
            store.close()


def test_add_many_import_and_ingest_each_run_as_one_bulk_run(engram: Engram, tmp_path: Path) -> None:
    import contextlib

    store = engram.store
    runs: list[str] = []
    inner = store.bulk

    @contextlib.contextmanager
    def spy() -> Iterator[None]:
        runs.append("start")
        with inner():
            yield
        runs.append("end")

    store.bulk = spy  # type: ignore[method-assign]
    engram.add_many([{"content": f"note number {i} about the build"} for i in range(3)])
    assert runs == ["start", "end"]
    engram.import_lines(json.dumps(record) for record in engram.export())
    assert runs == ["start", "end"] * 2
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Build\n\nThe build uses nox sessions for tests and lint.\n")
    engram.ingest("notes", path=notes)
    assert runs == ["start", "end"] * 3
