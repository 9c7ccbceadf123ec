"""The embedding cache: a small SQLite file of vectors keyed by a hash of the text the model saw.

It is a cache and nothing else. It lives apart from the memory database (engram's cache directory),
holds no text (only sha256 digests and float32 vectors), and any trouble with it (a read-only
directory, a damaged file, a writer holding the lock too long) costs only the time of embedding
again: every failure is logged at debug level and the call goes on as if the cache were empty.
A file that is not a readable SQLite database is deleted and made again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from engram_cli.store.sql import chunks, marks

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

CACHE_FILENAME = "embeddings.db"
# Bumped when the table changes shape: a file of another version is emptied, not migrated.
SCHEMA_VERSION = 1
# A cache waits this long for another process's write; longer, and embedding again is cheaper.
BUSY_TIMEOUT_MS = 2000

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors ("
    " id INTEGER PRIMARY KEY,"
    " model TEXT NOT NULL,"  # model id and a digest of its files: a rebuilt model never reads old vectors
    " digest BLOB NOT NULL,"  # sha256 of the exact text the model sees (prefix included)
    " vector BLOB NOT NULL,"  # float32, native byte order
    " used INTEGER NOT NULL)",  # unix ns of the last read or write: the least recently used go first
    "CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors(model, digest)",
    "CREATE INDEX IF NOT EXISTS vectors_used ON vectors(used)",
)
_DAMAGED = (apsw.CorruptError, apsw.NotADBError)


class VectorCache:
    """Vectors by (model key, text digest), at most ``max_entries`` of them, in the SQLite file ``path``.

    Opened on first use. Safe to share between processes: WAL, a short busy timeout, and every
    read or write in its own short transaction.
    """

    def __init__(self, path: Path, max_entries: int) -> None:
        self.path = path
        self.max_entries = max_entries
        self._conn: apsw.Connection | None = None
        self._broken = max_entries <= 0  # a cache of no entries is no cache

    @property
    def usable(self) -> bool:
        return not self._broken

    def get(self, model: str, digests: Sequence[bytes], dim: int) -> dict[bytes, np.ndarray]:
        """The cached vectors of those ``digests`` that have one (of ``dim`` floats); marks them as just used."""
        import numpy as np

        found: dict[bytes, np.ndarray] = {}
        if not digests or self._broken:
            return found
        with self._connection() as conn:
            if conn is None:
                return found
            with conn:
                for part in chunks(list(dict.fromkeys(digests))):
                    sql = f"SELECT id, digest, vector FROM vectors WHERE model = ? AND digest IN ({marks(part)})"
                    hits = _rows(conn, sql, (model, *part))
                    ids = []
                    for row_id, digest, blob in hits:
                        if len(blob) == dim * 4:
                            found[bytes(digest)] = np.frombuffer(blob, dtype=np.float32).copy()
                            ids.append(row_id)
                    if ids:
                        conn.execute(f"UPDATE vectors SET used = ? WHERE id IN ({marks(ids)})", (_now(), *ids))
        return found

    def put(self, model: str, rows: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Keep ``rows`` (digest, vector); the least recently used entries go when there are too many."""
        import numpy as np

        if not rows or self._broken:
            return
        now = _now()
        values = [(model, digest, np.ascontiguousarray(v, dtype=np.float32).tobytes(), now) for digest, v in rows]
        with self._connection() as conn:
            if conn is None:
                return
            with conn:
                conn.executemany(
                    "INSERT INTO vectors(model, digest, vector, used) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(model, digest) DO UPDATE SET vector = excluded.vector, used = excluded.used",
                    values,
                )
                extra = _count(conn) - self.max_entries
                if extra > 0:
                    conn.execute(
                        "DELETE FROM vectors WHERE id IN (SELECT id FROM vectors ORDER BY used, id LIMIT ?)", (extra,)
                    )

    def count(self) -> int:
        """How many vectors the cache holds (0 when it cannot be read)."""
        counted = 0
        with self._connection() as conn:
            if conn is not None:
                counted = _count(conn)
        return counted

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except apsw.Error:
                log.debug("closing the embedding cache failed", exc_info=True)
            self._conn = None

    @contextlib.contextmanager
    def _connection(self) -> Iterator[apsw.Connection | None]:
        """The open connection, or None when the cache cannot be used.

        An error inside the caller's block ends the block and is handled here: a
        damaged file is deleted so that the next use starts a fresh one; any other failure (the
        disk, permissions, a lock held too long) is logged and the cache is left for next time.
        """
        try:
            conn = self._open()
        except (apsw.Error, OSError) as exc:
            log.debug("the embedding cache %s cannot be opened (%s); embedding without it", self.path, exc)
            self.close()
            if isinstance(exc, _DAMAGED) and self._discard():
                try:
                    conn = self._open()
                except (apsw.Error, OSError):
                    self._broken = True
                    yield None
                    return
            else:
                self._broken = not isinstance(exc, apsw.BusyError)
                yield None
                return
        try:
            yield conn
        except _DAMAGED as exc:
            log.debug("the embedding cache %s is damaged (%s); starting a new one", self.path, exc)
            self.close()
            self._discard()
        except (apsw.Error, OSError) as exc:
            log.debug("the embedding cache %s failed (%s); going on without it", self.path, exc)

    def _open(self) -> apsw.Connection:
        if self._conn is not None:
            return self._conn
        # Vectors say something about the texts they came from: private, like the database.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))  # SQLite gives its -wal the same mode
        conn = apsw.Connection(str(self.path))
        try:
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            conn.execute("PRAGMA synchronous = NORMAL")
            version = int(_rows(conn, "PRAGMA user_version")[0][0])
            if version != SCHEMA_VERSION:
                with conn:
                    if version:
                        conn.execute("DROP TABLE IF EXISTS vectors")
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _discard(self) -> bool:
        """Delete the cache file and its WAL; True when it is gone."""
        try:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        except OSError as exc:
            log.debug("the damaged embedding cache %s cannot be deleted (%s)", self.path, exc)
            self._broken = True
            return False
        return True


def _count(conn: apsw.Connection) -> int:
    return int(_rows(conn, "SELECT count(*) FROM vectors")[0][0])


def _rows(conn: apsw.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    return list(conn.execute(sql, params).fetchall())


def _now() -> int:
    return time.time_ns()
