"""What ingest keeps between runs, as SQL: where each file's read stopped, each session's digest, each item's memory.

Only the statements live here; what to store is the loader's to decide. Cursor state and
digests pass through as the JSON text of their columns: the loader encodes and decodes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engram_cli.timeutil import iso_now

if TYPE_CHECKING:
    from engram_cli.store.database import Database


@dataclass(frozen=True)
class CursorRow:
    """One file's row of ``ingest_cursors``."""

    path: str
    inode: int | None
    size: int
    mtime_ns: int
    offset: int
    last_id: str | None
    last_at: str | None
    state: str  # JSON text
    updated_at: str


@dataclass(frozen=True)
class KnownItem:
    """The memory an extracted item became, and the hash of the text it had then."""

    memory_id: str
    content_hash: str


class IngestState:
    """The ingest tables (``ingest_cursors``, ``ingest_sessions``, ``ingest_items``) as typed methods.

    Nothing here commits: each method runs inside the caller's transaction.
    """

    def __init__(self, store: Database) -> None:
        self.store = store

    def cursor(self, path: str) -> CursorRow | None:
        row = self.store.one(
            "SELECT inode, size, mtime_ns, byte_offset, last_id, last_at, state, updated_at FROM ingest_cursors "
            "WHERE path = ?",
            (path,),
        )
        if row is None:
            return None
        return CursorRow(
            path=path, inode=row[0], size=int(row[1]), mtime_ns=int(row[2]), offset=int(row[3]), last_id=row[4],
            last_at=row[5], state=row[6], updated_at=row[7],
        )  # fmt: skip

    def save_cursor(
        self, source: str, *, path: str, inode: int | None, size: int, mtime_ns: int, offset: int,
        last_id: str | None, last_at: str | None, state: str,
    ) -> None:  # fmt: skip
        self.store.execute(
            "INSERT INTO ingest_cursors (path, source, inode, size, mtime_ns, byte_offset, last_id, last_at, state, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET source = excluded.source, inode = excluded.inode, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns, "
            "byte_offset = excluded.byte_offset, last_id = excluded.last_id, last_at = excluded.last_at, "
            "state = excluded.state, updated_at = excluded.updated_at",
            (path, source, inode, size, mtime_ns, offset, last_id, last_at, state, iso_now()),
        )

    def digest(self, source: str, session_key: str) -> str | None:
        """The JSON text of a session's digest, None for a session not seen before."""
        value = self.store.scalar(
            "SELECT digest FROM ingest_sessions WHERE source = ? AND session_key = ?", (source, session_key)
        )
        return None if value is None else str(value)

    def digests_of(self, sessions: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
        """(source, session_key, digest JSON text) of the sessions named that have a digest."""
        out: list[tuple[str, str, str]] = []
        for source, key in dict.fromkeys(sessions):
            row = self.store.one(
                "SELECT digest FROM ingest_sessions WHERE source = ? AND session_key = ?", (source, key)
            )
            if row is not None and row[0] is not None:
                out.append((source, key, str(row[0])))
        return out

    def replace_digest(self, source: str, session_key: str, digest: str) -> None:
        """Rewrite a session's digest in place (its path, namespace and time stay)."""
        self.store.execute(
            "UPDATE ingest_sessions SET digest = ? WHERE source = ? AND session_key = ?", (digest, source, session_key)
        )

    def save_digest(self, source: str, session_key: str, *, path: str, namespace: str, digest: str) -> None:
        self.store.execute(
            "INSERT INTO ingest_sessions (source, session_key, path, namespace, digest, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source, session_key) DO UPDATE SET path = excluded.path, "
            "namespace = excluded.namespace, digest = excluded.digest, updated_at = excluded.updated_at",
            (source, session_key, path, namespace, digest, iso_now()),
        )

    def known_item(self, source: str, session_key: str, item_key: str) -> KnownItem | None:
        row = self.store.one(
            "SELECT memory_id, content_hash FROM ingest_items WHERE source = ? AND session_key = ? AND item_key = ?",
            (source, session_key, item_key),
        )
        return None if row is None else KnownItem(str(row[0]), row[1])

    def remember_item(
        self, source: str, session_key: str, item_key: str, *, memory_id: str, content_hash: str, at: str
    ) -> None:
        self.store.execute(
            "INSERT OR REPLACE INTO ingest_items (source, session_key, item_key, memory_id, content_hash, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (source, session_key, item_key, memory_id, content_hash, at),
        )

    def counts(self, source: str) -> tuple[int, int]:
        """(sessions seen, items remembered) for one source."""
        sessions = int(self.store.scalar("SELECT count(*) FROM ingest_sessions WHERE source = ?", (source,)) or 0)
        items = int(self.store.scalar("SELECT count(*) FROM ingest_items WHERE source = ?", (source,)) or 0)
        return sessions, items
