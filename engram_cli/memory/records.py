"""Row-level operations on memories shared by every engine verb.

These run inside the caller's transaction; none of them commits.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from engram_cli.errors import AmbiguousId, ConflictError, InvalidInput, NotFound
from engram_cli.lang import text as textmod
from engram_cli.memory.model import MEMORY_COLUMNS, Event, Memory, Source
from engram_cli.store import vectors
from engram_cli.store.db import Store

MIN_PREFIX = 4


def new_id() -> str:
    return str(uuid.uuid4())


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def resolve_pk(store: Store, ref: str) -> int:
    """Map a full id or a unique prefix (at least 4 characters) to the row's pk."""
    ref = ref.strip().lower().lstrip("#")
    if len(ref) < MIN_PREFIX:
        raise InvalidInput(f"id prefix {ref!r} is too short", hint=f"give at least {MIN_PREFIX} characters of the id")
    if not all(c in "0123456789abcdef-" for c in ref):
        raise InvalidInput(f"{ref!r} is not a memory id", hint="ids look like 3f2a9c1e-…; `engram list` shows them")
    upper = ref + "\uffff"
    rows = store.rows("SELECT pk, id FROM memories WHERE id >= ? AND id < ? LIMIT 6", (ref, upper))
    if not rows:
        raise NotFound(f"no memory with id {ref}", hint="`engram list --all` shows the ids, archived ones included")
    if len(rows) > 1:
        shown = ", ".join(str(r[1])[:12] for r in rows[:5])
        raise AmbiguousId(f"id prefix {ref} matches several memories ({shown}…)", hint="type more characters of the id")
    return int(rows[0][0])


def load(store: Store, pk: int, *, with_sources: bool = True) -> Memory:
    row = store.one(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE pk = ?", (pk,))
    if row is None:
        raise NotFound(f"memory {pk} no longer exists")
    memory = Memory.from_row(row)
    memory.tags = tags_of(store, pk)
    if with_sources:
        memory.sources = sources_of(store, pk)
    return memory


def load_many(store: Store, pks: Sequence[int], *, with_sources: bool = False) -> dict[int, Memory]:
    out: dict[int, Memory] = {}
    for chunk_start in range(0, len(pks), 500):
        chunk = list(pks[chunk_start : chunk_start + 500])
        marks = ", ".join("?" for _ in chunk)
        for row in store.rows(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE pk IN ({marks})", chunk):
            memory = Memory.from_row(row)
            out[memory.pk] = memory
        for pk, tag in store.rows(f"SELECT memory_pk, tag FROM tags WHERE memory_pk IN ({marks}) ORDER BY tag", chunk):
            if pk in out:
                out[pk].tags.append(tag)
    if with_sources:
        for memory in out.values():
            memory.sources = sources_of(store, memory.pk)
    return out


def tags_of(store: Store, pk: int) -> list[str]:
    return [str(r[0]) for r in store.rows("SELECT tag FROM tags WHERE memory_pk = ? ORDER BY tag", (pk,))]


def sources_of(store: Store, pk: int) -> list[Source]:
    rows = store.rows(
        "SELECT kind, ref, message_id, session_id, content, metadata, created_at "
        "FROM sources WHERE memory_pk = ? ORDER BY pk",
        (pk,),
    )
    return [
        Source(
            kind=r[0], ref=r[1], message_id=r[2], session=r[3], content=r[4], metadata=json.loads(r[5]), created_at=r[6]
        )
        for r in rows
    ]


def add_tags(store: Store, pk: int, tags: Iterable[str]) -> None:
    for tag in tags:
        store.execute("INSERT OR IGNORE INTO tags (memory_pk, tag) VALUES (?, ?)", (pk, tag))


def add_source(store: Store, pk: int, source: Source, at: str) -> None:
    store.execute(
        "INSERT INTO sources (memory_pk, kind, ref, message_id, session_id, content, metadata, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (pk, source.kind, source.ref, source.message_id, source.session, source.content, dumps(source.metadata), at),
    )


def add_event(
    store: Store,
    memory_id: str,
    kind: str,
    at: str,
    *,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    note: str | None = None,
    actor: str | None = None,
) -> None:
    store.execute(
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


def events_of(store: Store, memory_id: str) -> list[Event]:
    rows = store.rows(
        "SELECT memory_id, kind, at, actor, before, after, note FROM events WHERE memory_id = ? ORDER BY pk",
        (memory_id,),
    )
    return [event_from_row(r) for r in rows]


def event_from_row(r: tuple[Any, ...]) -> Event:
    return Event(
        memory_id=r[0],
        kind=r[1],
        at=r[2],
        actor=r[3],
        before=json.loads(r[4]) if r[4] else None,
        after=json.loads(r[5]) if r[5] else None,
        note=r[6],
    )


def update(store: Store, memory: Memory, at: str, **fields: Any) -> None:
    """Change columns of one memory if nobody else changed it since it was read.

    The version column is the optimistic lock: a stale ``memory.version`` raises
    ConflictError, and the caller re-reads and retries.
    """
    if not fields:
        return
    sets = ", ".join(f"{column} = ?" for column in fields)
    params = [*fields.values(), at, memory.pk, memory.version]
    cursor = store.execute(
        f"UPDATE memories SET {sets}, updated_at = ?, version = version + 1 WHERE pk = ? AND version = ?",
        params,
    )
    changed = store.conn.changes()
    del cursor
    if changed != 1:
        raise ConflictError(f"memory {memory.id[:8]} was changed by another writer", hint="run the command again")
    memory.version += 1
    memory.updated_at = at


def reindex(store: Store, pk: int) -> None:
    """Rebuild the keyword row of a memory: its text, summary, tags and kept supplements."""
    row = store.one("SELECT content, summary FROM memories WHERE pk = ?", (pk,))
    if row is None:
        return
    extra = [
        str(r[0]) for r in store.rows("SELECT content FROM sources WHERE memory_pk = ? AND content IS NOT NULL", (pk,))
    ]
    tags = tags_of(store, pk)
    terms = textmod.index_text(row[0], row[1] or "", *extra, " ".join(tags))
    store.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
    store.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)", (pk, terms))


def set_status(store: Store, memory: Memory, status: str, at: str, **extra: Any) -> None:
    update(store, memory, at, status=status, **extra)
    memory.status = status
    if memory.embedding_model:
        table = vectors.table_for(store, memory.embedding_model)
        if table:
            vectors.set_status(store, table, memory.pk, status)


def purge(store: Store, memory: Memory) -> None:
    """Remove a memory and every row of its own that carries its content (tags and sources cascade).

    Copies of the text in other memories' rows are :func:`engram_cli.memory.manage.forget`'s to remove.
    """
    if memory.embedding_model:
        table = vectors.table_for(store, memory.embedding_model)
        if table:
            vectors.delete(store, table, memory.pk)
    store.execute("DELETE FROM memory_fts WHERE rowid = ?", (memory.pk,))
    store.execute("DELETE FROM memories WHERE pk = ?", (memory.pk,))
    # Earlier events may quote the text (a merge records the wording it replaced).
    store.execute("UPDATE events SET before = NULL, after = NULL WHERE memory_id = ?", (memory.id,))
