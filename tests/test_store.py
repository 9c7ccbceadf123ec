"""connect(): file creation, permissions, pragmas, migrations, refusal of foreign files; transactions."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import apsw
import pytest

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
