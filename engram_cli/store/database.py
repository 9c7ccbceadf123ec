"""The connection underneath the store: transactions, savepoints, and apsw errors turned into domain errors.

The repositories (memories, sources, events, keywords, vectors, …) run their statements through a
``Database``; ``engram_cli.store.db.Store`` is a Database that carries them.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw

from engram_cli.errors import DatabaseDamaged, EngramError, ReadOnlyDatabase, StoreError
from engram_cli.store.migrations import MIGRATIONS_TABLE

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"

# sqlite-vec reports a vector or metadata chunk it cannot read as a plain SQLITE_ERROR with
# one of these messages (sqlite-vec 0.1.x); underneath is a damaged page of its shadow tables.
_VEC0_READ_FAILURE = re.compile(
    r"blob read error|reading from blob failed|opening blob failed|could not open vectors blob"
    r"|blob size doesn't match|Could not extract metadata value"
)
_READ_IOERRS = {apsw.SQLITE_IOERR_READ, apsw.SQLITE_IOERR_SHORT_READ}

# SQLite copies the write-ahead log into the database file whenever a commit leaves it this long
# (pages; its default), and each copy ends in a sync. A long run of writes (add_many, ingest) copies
# every BULK_CHECKPOINT_PAGES instead (32 MB of 4 KB pages) and once more at its end: a page written
# again and again goes to the file once per copy, and there are fewer syncs. In a bench run of 1,000
# writes into 100k memories, the copies took 0.17-0.21 s at 1,000 pages and 0.11-0.13 s at 8,192.
DEFAULT_CHECKPOINT_PAGES = 1000
BULK_CHECKPOINT_PAGES = 8192
# A long run of writes also keeps more pages in memory: each new memory lands on random leaves of the
# indexes keyed by id, content hash and time (about 30 MB of them at 100k memories), which SQLite's
# default cache of 2 MB keeps re-reading. With 64 MB (KiB here, taken only as pages are read) the SQL
# of 1,000 writes into 100k memories took 530-570 ms instead of 715-720; into 2k, no change.
BULK_CACHE_KIB = 65536


def damaged(path: Path, detail: str) -> DatabaseDamaged:
    """The error for a file whose pages cannot be read; the hint names the way out."""
    return DatabaseDamaged(
        f"the database {path} is damaged ({detail})",
        hint=f"`engram --db {shlex.quote(str(path))} recover` copies what can still be read into a new "
        "database; or restore a backup",
    )


def domain_error(exc: apsw.Error, path: Path) -> StoreError | None:
    """The domain error an apsw error stands for, or None when it is not about the file (a bug)."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        return damaged(path, detail)
    if isinstance(exc, apsw.SQLError) and _VEC0_READ_FAILURE.search(str(exc)):
        return damaged(path, f"a vector index page cannot be read: {detail}")
    if isinstance(exc, apsw.IOError):
        if getattr(exc, "extendedresult", None) in _READ_IOERRS:
            return damaged(path, f"the disk could not read part of it{': ' + str(exc) if str(exc) else ''}")
        return StoreError(
            f"reading or writing {path} failed: {detail}",
            hint="check the disk and its free space; nothing was half-written",
        )
    if isinstance(exc, apsw.FullError):
        return StoreError(f"the disk holding {path} is full", hint="free some space and run the command again")
    if isinstance(exc, apsw.ReadOnlyError):
        return read_only_error(path, "SQLite can only read it (the file, its directory or the disk is read-only)")
    return None


def _translate(store: Database, exc: apsw.Error) -> None:
    """Raise the domain error for ``exc`` (remembering damage on the store); return when there is none."""
    error = domain_error(exc, store.path)
    if isinstance(error, DatabaseDamaged):
        store.damage = error
    if error is not None:
        raise error from exc


class _Cursor(apsw.Cursor):
    """Raises domain errors for damage and permissions, also while rows are fetched lazily."""

    store: Database

    def _raise(self, exc: apsw.Error) -> None:
        _translate(self.store, exc)

    def execute(self, *args: Any, **kwargs: Any) -> apsw.Cursor:
        try:
            return super().execute(*args, **kwargs)
        except apsw.Error as exc:
            self._raise(exc)
            raise

    def executemany(self, *args: Any, **kwargs: Any) -> apsw.Cursor:
        try:
            return super().executemany(*args, **kwargs)
        except apsw.Error as exc:
            self._raise(exc)
            raise

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except apsw.Error as exc:
            self._raise(exc)
            raise

    def fetchone(self) -> Any | None:
        try:
            return super().fetchone()
        except apsw.Error as exc:
            self._raise(exc)
            raise

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except apsw.Error as exc:
            self._raise(exc)
            raise


def _cursors_for(store: Database) -> Callable[[apsw.Connection], apsw.Cursor]:
    def make(conn: apsw.Connection) -> apsw.Cursor:
        cursor = _Cursor(conn)
        cursor.store = store
        return cursor

    return make


class Database:
    """An open SQLite connection with engram's transactions and error translation; the repositories' base.


    Every query raises :class:`DatabaseDamaged` for pages that cannot be read and
    :class:`ReadOnlyDatabase` for a write SQLite refuses, never a raw apsw error.
    ``read_only`` says why the file was opened read-only (None when it is writable); ``damage``
    keeps the last damage error raised, so a caller that goes on after per-item failures (ingest
    reports a failing file and carries on) can still tell the database itself is the problem.
    """

    def __init__(self, conn: apsw.Connection, path: Path, read_only: str | None = None) -> None:
        self.conn = conn
        self.path = path
        self.read_only = read_only
        self.damage: DatabaseDamaged | None = None
        self._depth = 0
        self._bulk = False
        conn.cursor_factory = _cursors_for(self)

    # -- queries ---------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> apsw.Cursor:
        return self.conn.execute(sql, params)

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        # A plain cursor fetches every row in C; the connection's cursors translate errors row by row in
        # Python (for callers that iterate lazily), which costs about 2 µs a row. Errors are translated here.
        try:
            rows: list[tuple[Any, ...]] = apsw.Cursor(self.conn).execute(sql, params).fetchall()
        except apsw.Error as exc:
            _translate(self, exc)
            raise
        return rows

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> tuple[Any, ...] | None:
        for row in self.conn.execute(sql, params):
            return tuple(row)
        return None

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    # -- transactions ----------------------------------------------------------------

    def require_writable(self) -> None:
        """Raise ReadOnlyDatabase, naming the file and the fix, when this store cannot be changed."""
        if self.read_only is not None:
            raise read_only_error(self.path, self.read_only)

    @contextlib.contextmanager
    def write(self) -> Iterator[Database]:
        """A write transaction. BEGIN IMMEDIATE takes the write lock up front, so two
        writers queue on the busy timeout instead of failing half-way.

        Nested use is a SAVEPOINT inside the outer transaction: an exception that leaves the
        inner block rolls back the inner block's changes only, so a retry inside an outer
        transaction (a write conflict retried within an ingest file's transaction) never undoes
        work it does not own. The outer transaction still decides whether anything is committed.
        """
        self.require_writable()
        if self._depth:
            with self._savepoint():
                yield self
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
            self._rollback()
            raise
        self._depth = 0
        try:
            self.conn.execute("COMMIT")
        except (apsw.Error, EngramError):
            self._rollback()
            raise

    @contextlib.contextmanager
    def _savepoint(self) -> Iterator[None]:
        name = f"engram_{self._depth}"
        self.conn.execute(f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            # ROLLBACK TO keeps the savepoint open, RELEASE then closes it. Some errors (a full disk,
            # an I/O error) make SQLite roll back the whole transaction, savepoints and all; then
            # neither statement has anything to act on, and the error that got us here is the one
            # to report.
            with contextlib.suppress(apsw.Error, EngramError):
                self.conn.execute(f"ROLLBACK TO {name}")
                self.conn.execute(f"RELEASE {name}")
            self._after_rollback()
            raise
        self._depth -= 1
        self.conn.execute(f"RELEASE {name}")

    def _rollback(self) -> None:
        # On a damaged file ROLLBACK itself may fail; the error that got us here is the one to report.
        if not self.conn.getautocommit():
            with contextlib.suppress(apsw.Error, EngramError):
                self.conn.execute("ROLLBACK")
        # Also when SQLite rolled back by itself (a full disk): a vector table made meanwhile is gone.
        self._after_rollback()

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """A long run of write transactions: the log is copied into the file every BULK_CHECKPOINT_PAGES
        pages rather than SQLite's DEFAULT_CHECKPOINT_PAGES, and once at the end if it is longer than
        that. Each transaction stays whole on its own; only when the log is copied changes. The page
        cache holds at least BULK_CACHE_KIB meanwhile. Nested use and read-only stores change nothing."""
        if self._bulk or self.read_only is not None:
            yield
            return
        pages = 0

        def copy_when_long(conn: apsw.Connection, name: str, length: int) -> int:
            nonlocal pages
            pages = length
            if length >= BULK_CHECKPOINT_PAGES:
                self._checkpoint(name)
                pages = 0
            return apsw.SQLITE_OK

        self._bulk = True
        cache = self._cache_kib()
        if cache < BULK_CACHE_KIB:
            self.conn.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
        self.conn.set_wal_hook(copy_when_long)
        try:
            yield
        finally:
            self._bulk = False
            # Closed meanwhile (from another thread, at shutdown): nothing to restore, and the error that
            # ended the run is the one to report.
            with contextlib.suppress(apsw.ConnectionClosedError):
                self.conn.set_wal_hook(None)
                self.conn.wal_autocheckpoint(DEFAULT_CHECKPOINT_PAGES)
                if cache < BULK_CACHE_KIB:
                    self.conn.execute(f"PRAGMA cache_size = {-cache}")
                if pages >= DEFAULT_CHECKPOINT_PAGES and self.conn.getautocommit():
                    self._checkpoint("main")

    def _cache_kib(self) -> int:
        """The page cache's size in KiB (``PRAGMA cache_size`` counts pages when positive, KiB when negative)."""
        size = int(self.scalar("PRAGMA cache_size"))
        return -size if size < 0 else size * int(self.scalar("PRAGMA page_size")) // 1024

    def _checkpoint(self, name: str) -> None:
        """Copy what it can of the log into the file without waiting for readers (as SQLite's own does)."""
        try:
            self.conn.wal_checkpoint(name, apsw.SQLITE_CHECKPOINT_PASSIVE)
        except apsw.Error as exc:  # the log keeps every page; a later checkpoint copies it
            log.debug("checkpoint of %s: %s", self.path, exc)

    @contextlib.contextmanager
    def read(self) -> Iterator[Database]:
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
            # After a read met a damaged page, COMMIT fails with that damage again (and still ends
            # the transaction); a read has nothing to commit, and the reader has seen the error.
            with contextlib.suppress(DatabaseDamaged):
                if not self.conn.getautocommit():
                    self.conn.execute("COMMIT")
            if not self.conn.getautocommit():
                self._rollback()

    def _after_rollback(self) -> None:
        """What a subclass must forget when a transaction or savepoint is rolled back (a cached table)."""

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

    def interrupt(self) -> None:
        """Stop the statement running on this connection (from another thread); nothing when it is closed."""
        with contextlib.suppress(apsw.ConnectionClosedError):
            self.conn.interrupt()

    def close(self) -> None:
        try:
            self.conn.close()
        except apsw.Error as exc:  # a failed checkpoint on close: the WAL keeps the data
            log.warning("closing %s: %s", self.path, exc)


def read_only_error(path: Path, reason: str) -> ReadOnlyDatabase:
    target = path.parent if reason.startswith("its directory") else path
    return ReadOnlyDatabase(
        f"cannot change {path}: {reason}",
        hint=f"make it writable (chmod u+w {shlex.quote(str(target))}), or copy the database somewhere "
        "writable and pass --db",
    )
