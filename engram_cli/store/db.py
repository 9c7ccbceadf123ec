"""The one place that opens the database."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw

from engram_cli.errors import StoreError
from engram_cli.store.migrations import MIGRATIONS, Migration
from engram_cli.timeutil import iso_now

log = logging.getLogger(__name__)

MIGRATIONS_TABLE = "schema_migrations"


class Store:
    """An open engram database: one apsw connection with sqlite-vec loaded."""

    def __init__(self, conn: apsw.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._depth = 0

    # -- queries ---------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> apsw.Cursor:
        return self.conn.execute(sql, params)

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, params))

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple[Any, ...] | None:
        for row in self.conn.execute(sql, params):
            return tuple(row)
        return None

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    # -- transactions ----------------------------------------------------------------

    @contextlib.contextmanager
    def write(self) -> Iterator[Store]:
        """A write transaction. BEGIN IMMEDIATE takes the write lock up front, so two
        writers queue on the busy timeout instead of failing half-way. Nested use joins
        the outer transaction."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except apsw.BusyError as exc:
            raise StoreError(
                f"the database {self.path} is locked by another engram process",
                hint="try again in a moment",
            ) from exc
        self._depth = 1
        try:
            yield self
        except BaseException:
            self._depth = 0
            self.conn.execute("ROLLBACK")
            raise
        self._depth = 0
        try:
            self.conn.execute("COMMIT")
        except apsw.Error:
            if not self.conn.getautocommit():
                self.conn.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def read(self) -> Iterator[Store]:
        """A read transaction: a consistent snapshot across several queries."""
        if self._depth or not self.conn.getautocommit():
            yield self
            return
        self.conn.execute("BEGIN")
        self._depth = 1
        try:
            yield self
        finally:
            self._depth = 0
            if not self.conn.getautocommit():
                self.conn.execute("COMMIT")

    # -- settings --------------------------------------------------------------------

    def setting(self, key: str) -> str | None:
        value = self.scalar("SELECT value FROM settings WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set_setting(self, key: str, value: str) -> None:
        with self.write():
            self.execute(
                "INSERT INTO settings (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def delete_setting(self, key: str) -> None:
        with self.write():
            self.execute("DELETE FROM settings WHERE key = ?", (key,))

    def schema_version(self) -> int:
        return int(self.scalar(f"SELECT coalesce(max(id), 0) FROM {MIGRATIONS_TABLE}") or 0)

    def close(self) -> None:
        self.conn.close()


def _prepare_file(path: Path, create_dirs: bool) -> None:
    parent = path.parent
    if not parent.exists():
        if not create_dirs:
            raise StoreError(
                f"the directory {parent} does not exist",
                hint="create it first, or choose another location with --db or ENGRAM_DB",
            )
        try:
            parent.mkdir(parents=True, mode=0o700)
        except OSError as exc:
            raise StoreError(
                f"cannot create the data directory {parent}: {exc.strerror}",
                hint="set ENGRAM_HOME or --db to a writable location",
            ) from exc
    if not parent.is_dir():
        raise StoreError(f"{parent} is not a directory", hint="choose another location with --db")
    if path.exists():
        if path.is_dir():
            raise StoreError(f"{path} is a directory, not a database file", hint="pass a file path to --db")
        return
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(
            f"cannot create the database in {parent}: permission denied",
            hint="choose a writable location with --db or ENGRAM_DB",
        )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreError(f"cannot create {path}: {exc.strerror}", hint="check the path and permissions") from exc
    os.close(fd)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def _load_vec(conn: apsw.Connection) -> None:
    try:
        import sqlite_vec
    except ImportError as exc:  # pragma: no cover - a broken install
        raise StoreError("the sqlite-vec package is not installed", hint="pip install sqlite-vec") from exc
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
    except apsw.Error as exc:
        raise StoreError(
            f"cannot load the sqlite-vec extension: {exc}",
            hint="reinstall it with `pip install --force-reinstall sqlite-vec`; `engram doctor` checks it",
        ) from exc


def migrate(conn: apsw.Connection, path: Path, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Apply pending migrations; each with its record in one transaction. Returns the ids applied."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
        "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    applied = {int(r[0]) for r in conn.execute(f"SELECT id FROM {MIGRATIONS_TABLE}")}
    known = {m.id for m in migrations}
    newer = applied - known
    if newer:
        raise StoreError(
            f"{path} was written by a newer engram (schema {max(newer)})",
            hint="upgrade engram (`pip install -U engram-localmem`) to open it",
        )
    done: list[int] = []
    for migration in sorted(migrations, key=lambda m: m.id):
        if migration.id in applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check inside the lock: another process may have just applied it.
            if conn.execute(f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE id = ?", (migration.id,)).fetchone():
                conn.execute("COMMIT")
                continue
            migration.apply(conn)
            conn.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (id, name, applied_at) VALUES (?, ?, ?)",
                (migration.id, migration.name, iso_now()),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        log.info("applied migration %s (%s)", migration.id, migration.name)
        done.append(migration.id)
    return done


def _is_foreign(conn: apsw.Connection) -> bool:
    """A SQLite file that holds tables but was never an engram database."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return bool(names) and MIGRATIONS_TABLE not in names


def connect(
    path: Path,
    *,
    create_dirs: bool = False,
    busy_timeout_ms: int = 10000,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> Store:
    """Open (creating if needed) the database at ``path`` and bring its schema up to date."""
    path = Path(path)
    _prepare_file(path, create_dirs)
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.CantOpenError as exc:
        raise StoreError(f"cannot open {path}", hint="check the path and its permissions") from exc
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise StoreError(
                f"{path} is not an engram database (not a SQLite file, or damaged)",
                hint="move the file away, or point --db / ENGRAM_DB at your engram database",
            ) from exc
        except apsw.ReadOnlyError as exc:
            raise StoreError(f"{path} is read-only", hint="fix its permissions (chmod 600)") from exc
        log.debug("journal mode %s", mode)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        # A purged memory (forget --hard, a redacted secret) must not linger in free pages.
        conn.execute("PRAGMA secure_delete = ON")
        _load_vec(conn)
        if _is_foreign(conn):
            raise StoreError(
                f"{path} is a SQLite database that engram did not create",
                hint="point --db / ENGRAM_DB at an engram database or at a new file",
            )
        migrate(conn, path, migrations)
    except BaseException:
        conn.close()
        raise
    return Store(conn, path)
