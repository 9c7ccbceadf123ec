"""connect(): file creation, permissions, pragmas, migrations, refusal of foreign files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import apsw
import pytest

from engram_cli.errors import StoreError
from engram_cli.store import connect
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
