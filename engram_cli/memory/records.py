"""The engine's rules about memory rows that are not storage: what an id looks like, what a
user may type for one, and what a memory's keyword row is made of.

Rows themselves are read and written through the store's repositories (``store.memories``,
``store.sources``, ``store.events``, ``store.keywords``, ``store.vectors``).
"""

from __future__ import annotations

import uuid

from engram_cli.errors import AmbiguousId, InvalidInput, NotFound
from engram_cli.lang import text as textmod
from engram_cli.store.db import Store

__all__ = ["MIN_PREFIX", "new_id", "reindex", "resolve_pk"]

MIN_PREFIX = 4
# Matches shown when a prefix is ambiguous (one more is read to know there are more).
SHOWN = 5


def new_id() -> str:
    return str(uuid.uuid4())


def resolve_pk(store: Store, ref: str) -> int:
    """Map a full id or a unique prefix (at least 4 characters) to the row's pk."""
    ref = ref.strip().lower().lstrip("#")
    if len(ref) < MIN_PREFIX:
        raise InvalidInput(f"id prefix {ref!r} is too short", hint=f"give at least {MIN_PREFIX} characters of the id")
    if not all(c in "0123456789abcdef-" for c in ref):
        raise InvalidInput(f"{ref!r} is not a memory id", hint="ids look like 3f2a9c1e-…; `engram list` shows them")
    rows = store.memories.with_id_prefix(ref, SHOWN + 1)
    if not rows:
        raise NotFound(f"no memory with id {ref}", hint="`engram list --all` shows the ids, archived ones included")
    if len(rows) > 1:
        shown = ", ".join(memory_id[:12] for _, memory_id in rows[:SHOWN])
        raise AmbiguousId(f"id prefix {ref} matches several memories ({shown}…)", hint="type more characters of the id")
    return rows[0][0]


def reindex(store: Store, pk: int) -> None:
    """Rebuild the keyword row of a memory: its key, text, summary, kept supplements and tags.

    Its metadata (a chat turn's neighbours, see ``model.CONTEXT_KEY``) stays out.
    """
    parts = store.memories.index_parts(pk)
    if parts is None:
        return
    terms = textmod.index_text(
        parts.key or "", parts.content, parts.summary or "", *parts.supplements, " ".join(parts.tags)
    )
    store.keywords.put(pk, terms)
