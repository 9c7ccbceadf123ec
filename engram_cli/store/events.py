"""Events: the history of every change to a memory, kept after the memory itself is purged.

Nothing here commits: each method runs inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from engram_cli.memory.model import Event
from engram_cli.store.codec import dumps
from engram_cli.store.sql import marks

if TYPE_CHECKING:
    from engram_cli.store.database import Database

_COLUMNS = "memory_id, kind, at, actor, before, after, note"


def _event(r: Sequence[Any]) -> Event:
    return Event(
        memory_id=r[0],
        kind=r[1],
        at=r[2],
        actor=r[3],
        before=json.loads(r[4]) if r[4] else None,
        after=json.loads(r[5]) if r[5] else None,
        note=r[6],
    )


class StoredEvent(NamedTuple):
    """An event as stored: its pk, and its values as the JSON text they are kept in."""

    pk: int
    memory_id: str
    before: str | None
    after: str | None
    note: str | None


class Events:
    def __init__(self, store: Database) -> None:
        self.store = store

    def add(
        self,
        memory_id: str,
        kind: str,
        at: str,
        *,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        note: str | None = None,
        actor: str | None = None,
    ) -> None:
        self.store.execute(
            "INSERT INTO events (memory_id, kind, at, actor, before, after, note) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                kind,
                at,
                actor,
                None if before is None else dumps(before),
                None if after is None else dumps(after),
                note,
            ),
        )

    def of(self, memory_id: str) -> list[Event]:
        """A memory's history, oldest first."""
        rows = self.store.rows(f"SELECT {_COLUMNS} FROM events WHERE memory_id = ? ORDER BY pk", (memory_id,))
        return [_event(r) for r in rows]

    def recent(self, limit: int, kinds: Sequence[str] | None = None) -> list[Event]:
        """The latest events across the database (of these kinds, if given), newest first."""
        if kinds:
            rows = self.store.rows(
                f"SELECT {_COLUMNS} FROM events WHERE kind IN ({marks(kinds)}) ORDER BY pk DESC LIMIT ?",
                [*kinds, limit],
            )
        else:
            rows = self.store.rows(f"SELECT {_COLUMNS} FROM events ORDER BY pk DESC LIMIT ?", (limit,))
        return [_event(r) for r in rows]

    def created_by(self, actor: str, mentioning: str) -> list[tuple[str, dict[str, Any]]]:
        """(memory id, values after) of the ``created`` events by ``actor`` whose values mention ``mentioning``."""
        rows = self.store.rows(
            "SELECT memory_id, after FROM events WHERE kind = 'created' AND actor = ? AND instr(after, ?) > 0",
            (actor, mentioning),
        )
        return [(str(memory_id), json.loads(after or "{}")) for memory_id, after in rows]

    def quoting(self, json_text: str, text: str, *, other_than: str) -> list[StoredEvent]:
        """Events of other memories than ``other_than`` whose values hold ``json_text`` or whose note holds ``text``."""
        rows = self.store.rows(
            "SELECT pk, memory_id, before, after, note FROM events WHERE memory_id != ? "
            "AND (instr(before, ?) > 0 OR instr(after, ?) > 0 OR instr(note, ?) > 0)",
            (other_than, json_text, json_text, text),
        )
        return [StoredEvent(int(r[0]), str(r[1]), r[2], r[3], r[4]) for r in rows]

    def rewrite(self, pk: int, before: str | None, after: str | None, note: str | None) -> None:
        """Replace an event's values (JSON text, as StoredEvent holds them) and note."""
        self.store.execute("UPDATE events SET before = ?, after = ?, note = ? WHERE pk = ?", (before, after, note, pk))

    def has(self, memory_id: str, kind: str, at: str, note: str | None) -> bool:
        """Whether the memory's history already holds an event of this kind, time and note."""
        row = self.store.one(
            "SELECT 1 FROM events WHERE memory_id = ? AND kind = ? AND at = ? AND note IS ?",
            (memory_id, kind, at, note),
        )
        return row is not None

    def tombstoned(self, memory_id: str) -> bool:
        """Whether the memory was removed here (it has a ``deleted`` event and no row)."""
        row = self.store.one(
            "SELECT 1 FROM events e WHERE e.kind = 'deleted' AND e.memory_id = ? "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.memory_id)",
            (memory_id,),
        )
        return row is not None

    def tombstones(self, memory_id: str | None = None) -> list[Event]:
        """The ``deleted`` events of memories that have no row (of one memory, when given), oldest first."""
        sql = (
            f"SELECT {_COLUMNS} FROM events e WHERE e.kind = 'deleted' "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.memory_id)"
        )
        params: tuple[Any, ...] = ()
        if memory_id is not None:
            sql += " AND e.memory_id = ?"
            params = (memory_id,)
        return [_event(r) for r in self.store.rows(sql + " ORDER BY e.memory_id, e.at, e.pk", params)]

    def blank_payloads(self, memory_id: str) -> None:
        """A memory's history keeps its kinds and times but no values (they may quote its text)."""
        self.store.execute("UPDATE events SET before = NULL, after = NULL WHERE memory_id = ?", (memory_id,))
