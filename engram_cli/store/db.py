"""The one place that opens the database."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shlex
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from engram_cli.config.settings import Settings
from engram_cli.errors import DatabaseDamaged, ReadOnlyDatabase, StoreError
from engram_cli.store.database import SQLITE_HEADER, Database, damaged, read_only_error
from engram_cli.store.events import Events
from engram_cli.store.keywords import Keywords
from engram_cli.store.memories import Memories
from engram_cli.store.migrations import MIGRATIONS, MIGRATIONS_TABLE, Migration
from engram_cli.store.sources import Sources
from engram_cli.store.vectors import Vectors

if TYPE_CHECKING:
    from engram_cli.store.evidence import EvidenceRows
    from engram_cli.store.ingest_state import IngestState
    from engram_cli.store.knn import IndexOptions
    from engram_cli.store.maintenance import Maintenance
from engram_cli.timeutil import iso_now

log = logging.getLogger(__name__)


class Store(Database):
    """An open engram database: one apsw connection with sqlite-vec loaded.

    The engine reads and writes through the repositories it exposes, one per area:
    ``memories`` (rows, tags, selection by Filters), ``sources``, ``events``, ``keywords`` (the
    FTS5 index), ``vectors`` (a vec0 table per model), ``maintenance`` (integrity, the WAL,
    tables by name), ``ingest`` (cursors, session digests, items) and ``evidence`` (the kept turns of
    ingested conversations). They hold every SQL
    statement; the engine holds the decisions.
    """

    def __init__(
        self, conn: apsw.Connection, path: Path, read_only: str | None = None, index: IndexOptions | None = None
    ) -> None:
        super().__init__(conn, path, read_only)
        self.sources = Sources(self)
        self.events = Events(self)
        self.keywords = Keywords(self)
        self.vectors = Vectors(self, index)
        self.memories = Memories(self, sources=self.sources, events=self.events, keywords=self.keywords,
                                 vectors=self.vectors)  # fmt: skip

    # The other repositories are made when first used: `engram get` or `list` never loads their modules.
    @functools.cached_property
    def maintenance(self) -> Maintenance:
        from engram_cli.store.maintenance import Maintenance

        return Maintenance(self)

    @functools.cached_property
    def ingest(self) -> IngestState:
        from engram_cli.store.ingest_state import IngestState

        return IngestState(self)

    @functools.cached_property
    def evidence(self) -> EvidenceRows:
        from engram_cli.store.evidence import EvidenceRows

        return EvidenceRows(self, self.vectors)

    def _after_rollback(self) -> None:
        # A vector table made inside the rolled-back work is gone again.
        self.vectors.forget()
        if "evidence" in self.__dict__:  # made already (see the cached property)
            self.evidence.forget()


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


def _vec_path() -> str:
    """Where the sqlite-vec extension is, found without importing the package: its ``__init__``
    imports numpy, which `engram get` (an exact lookup) must not pay for. Same path as
    ``sqlite_vec.loadable_path()``: the ``vec0`` library beside the package's ``__init__``."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:  # pragma: no cover - a broken install
        raise StoreError("the sqlite-vec package is not installed", hint="pip install sqlite-vec")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def _load_vec(conn: apsw.Connection) -> None:
    path = _vec_path()
    try:
        conn.enable_load_extension(True)
        conn.load_extension(path)
        conn.enable_load_extension(False)
    except apsw.Error as exc:
        raise StoreError(
            f"cannot load the sqlite-vec extension: {exc}",
            hint="reinstall it with `pip install --force-reinstall sqlite-vec`; `engram doctor` checks it",
        ) from exc


def binding_versions() -> tuple[str, str]:
    """apsw's and SQLite's versions, once FTS5 is seen to work (in a throwaway database in memory)."""
    conn = apsw.Connection(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    finally:
        conn.close()
    return apsw.apsw_version(), apsw.sqlite_lib_version()


def vec_version() -> str:
    """The version of sqlite-vec, loaded into a throwaway database in memory (StoreError when it cannot be)."""
    conn = apsw.Connection(":memory:")
    try:
        _load_vec(conn)
        row = conn.execute("SELECT vec_version()").fetchone()
    finally:
        conn.close()
    return str(row[0]) if row else "?"


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


def _read_only_reason(path: Path) -> str | None:
    """Why an existing database can only be read, or None when it is writable.

    WAL mode keeps two files beside the database (-wal, -shm); SQLite must be able to
    create them, so an unwritable directory makes the database read-only too.
    """
    if not path.exists():
        return None
    if not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"its directory {path.parent} is read-only (SQLite keeps its -wal and -shm files there)"
    return None


def _open_read_only(path: Path, *, immutable: bool = False) -> apsw.Connection:
    """A read-only connection that never writes the file, whatever its directory allows.

    Measured with SQLite 3.54: ``mode=ro`` reads a WAL database, its -wal included, as long as
    SQLite can open or create the -shm; in a read-only directory without one it fails with
    CantOpenError. Then ``immutable=1`` reads the file (and a -wal left beside it) without
    the -shm and without locks, which is safe because nobody can write there either.
    """
    uri = path.absolute().as_uri()
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    if immutable:
        return apsw.Connection(f"{uri}?mode=ro&immutable=1", flags=flags)
    conn = apsw.Connection(f"{uri}?mode=ro", flags=flags)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()  # opening is lazy: the -shm is needed here
        return conn
    except (apsw.CantOpenError, apsw.ReadOnlyError):
        conn.close()
    except BaseException:
        conn.close()
        raise
    log.info("%s: no -shm can be made beside it; reading it as immutable", path)
    return apsw.Connection(f"{uri}?mode=ro&immutable=1", flags=flags)


def _not_a_database(path: Path, exc: BaseException) -> StoreError:
    try:
        with open(path, "rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
    except OSError:
        header = b""
    if header == SQLITE_HEADER:
        return damaged(path, f"its header or table list cannot be read: {exc}")
    return StoreError(
        f"{path} is not an engram database (not a SQLite file)",
        hint="move the file away, or point --db / ENGRAM_DB at your engram database",
    )


def _check_schema(conn: apsw.Connection, path: Path, reason: str, migrations: Sequence[Migration]) -> None:
    """A read-only database must already have the schema this engram expects: it cannot be migrated."""
    applied: set[int] = set()
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (MIGRATIONS_TABLE,)).fetchone():
        applied = {int(r[0]) for r in conn.execute(f"SELECT id FROM {MIGRATIONS_TABLE}")}
    known = {m.id for m in migrations}
    if applied - known:
        raise StoreError(
            f"{path} was written by a newer engram (schema {max(applied - known)})",
            hint="upgrade engram (`pip install -U engram-localmem`) to open it",
        )
    if known - applied:
        target = path.parent if reason.startswith("its directory") else path
        raise ReadOnlyDatabase(
            f"{path} needs a schema upgrade (to version {max(known)}) that cannot be written: {reason}",
            hint=f"make it writable (chmod u+w {shlex.quote(str(target))}) and run any engram command once",
        )


def connect(
    path: Path,
    *,
    create_dirs: bool = False,
    busy_timeout_ms: int = Settings().store.busy_timeout_ms,
    migrations: Sequence[Migration] = MIGRATIONS,
    index: IndexOptions | None = None,
) -> Store:
    """Open (creating if needed) the database at ``path`` and bring its schema up to date.

    A database that cannot be written (see ``Store.read_only``) is opened read-only: it can be
    read, and every write raises ReadOnlyDatabase. ``index`` says where the vector index keeps its
    files and when it goes approximate (default: in memory only, exact up to 200k rows).
    """
    path = Path(path)
    _prepare_file(path, create_dirs)
    reason = _read_only_reason(path)
    try:
        conn = _open_read_only(path) if reason else apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.CantOpenError as exc:
        raise StoreError(f"cannot open {path}", hint="check the path and its permissions") from exc
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        raise _not_a_database(path, exc) from exc
    store = Store(conn, path, read_only=reason, index=index)
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        try:
            if reason is None:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
                log.debug("journal mode %s", mode)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except DatabaseDamaged as exc:
            raise _not_a_database(path, exc.__cause__ or exc) from exc
        except ReadOnlyDatabase as exc:
            raise read_only_error(path, "SQLite can only read it") from exc
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
        if reason is None:
            migrate(conn, path, migrations)
        else:
            _check_schema(conn, path, reason, migrations)
    except BaseException:
        store.close()
        raise
    return store


def _open_existing(path: Path, *, immutable: bool = False) -> apsw.Connection:
    """:func:`_open_read_only` of an existing database, with SQLite's errors on opening it as engram's."""
    try:
        return _open_read_only(path, immutable=immutable)
    except apsw.CantOpenError as exc:
        raise StoreError(f"cannot open {path}", hint="check the path and its permissions") from exc
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        raise _not_a_database(path, exc) from exc


def open_reader(path: Path, busy_timeout_ms: int = Settings().store.busy_timeout_ms) -> Database:
    """A second, read-only connection to the database at ``path`` (already opened and migrated by a Store),
    for reading in another thread while the Store's own connection goes on: apsw connections are not
    shared between threads. Raises StoreError (or DatabaseDamaged) when the file cannot be opened again.
    """
    path = Path(path)
    conn = _open_existing(path)
    reader = Database(conn, path, read_only="a second connection, only to read")
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        _load_vec(conn)
    except BaseException:
        reader.close()
        raise
    return reader


def connect_read_only(path: Path) -> Store:
    """Open an existing database only to read it, whatever its permissions, never migrating
    or writing it: for copying rows out of a damaged file.

    Without a -wal beside it nobody is writing it, so it is read as immutable: not even an
    empty -wal or -shm is left beside it (``mode=ro`` would create both and keep them).
    """
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path} does not exist", hint="pass the path of the database with --db")
    wal = path.with_name(path.name + "-wal")
    conn = _open_existing(path, immutable=not wal.exists())
    store = Store(conn, path, read_only="it was opened only to read it")
    try:
        try:
            store.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except DatabaseDamaged as exc:
            raise _not_a_database(path, exc.__cause__ or exc) from exc
        _load_vec(conn)
    except BaseException:
        store.close()
        raise
    return store
