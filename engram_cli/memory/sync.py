"""sync: what makes two databases that exchange exports (in both directions) end up equal.

An export line carries a memory as it is now, with its version, its update time and its whole
history; a tombstone line says that a memory was removed (purged, or folded into another). Import
merges each line into the local copy by rules that give the same result on both sides, whichever
side applies them:

- a tombstone always wins: the memory is removed here too (a purge with ``forget --hard``'s
  removal of every copy, dated and signed as the original), and no line can bring it back;
- a line newer than the local copy (higher version; on a tie the later update, then a hash of
  the line) replaces it: fields, status, links, tags and sources; histories are merged, each event
  once (by kind, time and note), whichever copy won;
- two memories with the same text under different ids (learned on both machines) become one:
  the one remembered first stays, the other leaves a tombstone pointing at it;
- two active memories of one namespace holding the same key (set on both machines): the later
  value stays, the other is superseded by it.

Changes that happen here because of a line are dated by the line (the later of the two memories'
update times), never by the clock, so both sides write the same values.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from engram_cli.memory import manage, records
from engram_cli.memory.model import Event, Memory
from engram_cli.serialize import to_json
from engram_cli.store.codec import dumps
from engram_cli.store.db import Store

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

IMPORTED, UPDATED, SKIPPED, FOLDED = "imported", "updated", "skipped", "folded"
ACTOR = "import"
# Links are followed through tombstones' "into" at most this far (a chain of folds).
MAX_HOPS = 16

# A memory -> (model id, vector of its passage); the importer embeds in batches and hands them out.
VectorFor = Callable[[Memory], "tuple[str, np.ndarray]"]


@dataclass(frozen=True)
class Tombstone:
    """A memory that is gone from a database: purged (``hard``), or folded into the memory ``into``."""

    id: str
    purged_at: str
    version: int
    hard: bool = True
    into: str | None = None
    namespace: str | None = None
    actor: str | None = None
    # The memory's history as exported (a purged one's values are blank): the other side keeps it too,
    # so both hold the same events for a memory that is gone.
    events: tuple[dict[str, Any], ...] = ()

    def line(self) -> dict[str, Any]:
        """The export line."""
        return {
            "id": self.id, "tombstone": True, "purged_at": self.purged_at, "version": self.version,
            "hard": self.hard, "into": self.into, "namespace": self.namespace, "actor": self.actor,
            "events": list(self.events),
        }  # fmt: skip

    def payload(self) -> dict[str, Any]:
        """What the ``deleted`` event that records it holds."""
        out: dict[str, Any] = {"version": self.version, "hard": self.hard, "namespace": self.namespace}
        if self.into is not None:
            out["into"] = self.into
        return out


def _tombstone_of(memory_id: str, events: Sequence[Event]) -> Tombstone:
    """One tombstone from a memory's ``deleted`` events: the first removal, the highest version.

    Events written before tombstones carried values say only in their note whether they purged.
    """
    first = min(events, key=lambda e: e.at)
    values = [e.after or {} for e in events]
    versions = [int(v["version"]) for v in values if isinstance(v.get("version"), int)]
    hard = any(
        bool(v["hard"]) if isinstance(v.get("hard"), bool) else (e.note or "").startswith("purged")
        for e, v in zip(events, values, strict=True)
    )
    into = (first.after or {}).get("into")
    namespace = next((str(v["namespace"]) for v in values if v.get("namespace")), None)
    return Tombstone(memory_id, first.at, max(versions, default=1), hard, None if into is None else str(into),
                     namespace, first.actor)  # fmt: skip


def tombstones(store: Store, namespaces: Sequence[str] | None) -> list[Tombstone]:
    """The memories removed here, by id (those of ``namespaces`` and those whose namespace was not
    recorded), each with its whole history."""
    by_id: dict[str, list[Event]] = {}
    for event in store.events.tombstones():
        by_id.setdefault(event.memory_id, []).append(event)
    out = [_tombstone_of(memory_id, events) for memory_id, events in sorted(by_id.items())]
    if namespaces is not None:
        out = [t for t in out if t.namespace is None or t.namespace in namespaces]
    return [replace(t, events=tuple(history(store, t.id))) for t in out]


def history(store: Store, memory_id: str) -> list[dict[str, Any]]:
    """A memory's events as an export writes them: without the memory's id, in ``event_order``."""
    events = to_json(store.events.of(memory_id))
    for event in events:
        del event["memory_id"]
    return sorted(events, key=event_order)


def event_order(event: dict[str, Any]) -> tuple[str, ...]:
    """A history's order in an export: by time, then by everything else, so two databases holding the
    same events write them in the same order whatever order they were stored in."""
    return (
        str(event.get("at")), str(event.get("kind")), event.get("note") or "", event.get("actor") or "",
        dumps(event.get("before")), dumps(event.get("after")),
    )  # fmt: skip


def rank(memory: Memory) -> tuple[int, str, str]:
    """Which copy of a memory is newer: the higher version, then the later update, then (for copies
    changed apart at the same moment) the larger hash of their JSON, so both sides pick the same."""
    canonical = json.dumps(to_json(memory), sort_keys=True, ensure_ascii=False)
    return memory.version, memory.updated_at, hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Merger:
    """Applies tombstones and lines to a store, inside the caller's transactions; then ``link()``."""

    def __init__(self, store: Store, vector_for: VectorFor, embedder: manage.Embedder | None) -> None:
        self.store = store
        self.vector_for = vector_for
        self.embedder = embedder
        self.purged_hard = False  # a purge happened: the caller scrubs the file afterwards
        # (memory id, superseded_by, consolidated_into) of the lines written, set once every line is in.
        self.links: list[tuple[str, str | None, str | None]] = []
        # (memory id, link column) of links to memories folded away here, pointed at the survivor at the end.
        self.moved: list[tuple[str, str, str]] = []

    # -- tombstones --------------------------------------------------------------------------

    def tombstone(self, t: Tombstone) -> bool:
        """Remove the memory ``t`` names, if it is here, and keep the tombstone; True when a memory went."""
        memories, events = self.store.memories, self.store.events
        # The removal's own event as the other side wrote it, when the line carries the history.
        removal = next((e for e in t.events if e.get("kind") == "deleted" and e.get("at") == t.purged_at), None)
        note = _note(t) if removal is None else removal.get("note")
        pk = memories.pk_of(t.id)
        went = pk is not None
        if pk is None:
            if not any(e.at == t.purged_at for e in events.tombstones(t.id)):
                events.add(t.id, "deleted", t.purged_at, after=t.payload(), note=note, actor=t.actor)
        elif t.hard:
            memory = memories.load(pk, with_sources=False)
            # The purge writes its own `deleted` event: given the original's note, it is the same event.
            prefix = _note(t) + "; "
            extra = note[len(prefix) :] if note and note.startswith(prefix) else None
            manage.purge_as_elsewhere(
                self.store, memory, at=t.purged_at, actor=t.actor or "user", version=t.version,
                embedder=self.embedder, note=extra,
            )  # fmt: skip
            self.purged_hard = True
        else:
            self._remember_links(t.id)
            memories.delete(memories.load(pk, with_sources=False))
            events.add(t.id, "deleted", t.purged_at, after=t.payload(), note=note, actor=t.actor)
        # A purged memory's history keeps kinds and times only, whatever the line says.
        carried = [e if not t.hard or e is removal else {**e, "before": None, "after": None} for e in t.events]
        self._add_events(t.id, carried)
        return went

    # -- lines -------------------------------------------------------------------------------

    def line(self, remote: Memory, history: list[dict[str, Any]], vector: tuple[str, np.ndarray] | None) -> str:
        """Merge one exported memory: IMPORTED (new here), UPDATED (it was newer), SKIPPED or FOLDED."""
        memories = self.store.memories
        if self.store.events.tombstoned(remote.id):
            return SKIPPED  # removed here; the tombstone goes back with the next export
        pk = memories.pk_of(remote.id)
        local = None if pk is None else memories.load(pk)
        if local is not None:
            self._add_events(remote.id, history)
            if rank(remote) <= rank(local):
                return SKIPPED
        if remote.key is None:
            twin = memories.duplicate_of(remote.namespace, remote.agent, remote.content_hash, other_than=pk)
            if twin is not None:
                other = memories.load(twin)
                if (other.created_at, other.id) < (remote.created_at, remote.id):
                    self._fold(remote, into=other, here=local is not None)
                    return FOLDED
                self._fold(other, into=remote, here=True)
        elif remote.status == "active":
            holder = memories.keyed(remote.namespace, remote.key)
            if holder is not None and holder != pk:
                other = memories.load(holder)
                if (other.updated_at, other.id) > (remote.updated_at, remote.id):
                    history = [*history, self._lose_key(remote, other)]
                else:
                    self._lose_key_here(other, remote)
        self._write(remote, local, history, vector)
        return UPDATED if local is not None else IMPORTED

    def _write(
        self, remote: Memory, local: Memory | None, history: list[dict[str, Any]], given: tuple[str, np.ndarray] | None
    ) -> None:
        store = self.store
        if given is not None:
            model_id, vector = given
        elif local is not None and local.embedding_model and local.passage == remote.passage:
            stored = store.vectors.get(local.embedding_model, [local.pk]).get(local.pk)
            model_id, vector = (local.embedding_model, stored) if stored is not None else self.vector_for(remote)
        else:
            model_id, vector = self.vector_for(remote)
        row = replace(remote, embedding_model=model_id, superseded_by=None, consolidated_into=None)
        if local is None:
            pk = store.memories.insert(row)
        else:
            pk = row.pk = local.pk
            store.memories.overwrite(row)
            if local.embedding_model and local.embedding_model != model_id:
                store.vectors.delete(local.embedding_model, pk)
        store.memories.set_tags(pk, remote.tags)
        store.sources.replace(pk, [replace(s, created_at=s.created_at or remote.created_at) for s in remote.sources])
        store.vectors.put(
            model_id, pk, vector,
            namespace=remote.namespace, status=remote.status, memory_type=remote.type, agent=remote.agent,
        )  # fmt: skip
        records.reindex(store, pk)
        self._add_events(remote.id, history)
        self.links.append((remote.id, remote.superseded_by, remote.consolidated_into))

    def _add_events(self, memory_id: str, history: list[dict[str, Any]]) -> None:
        """The events of ``history`` this memory's history lacks (the same kind, time and note is the same event)."""
        events = self.store.events
        for e in history:
            if not events.has(memory_id, e["kind"], e["at"], e.get("note")):
                events.add(memory_id, e["kind"], e["at"], before=e.get("before"), after=e.get("after"),
                           note=e.get("note"), actor=e.get("actor"))  # fmt: skip

    # -- conflicts ---------------------------------------------------------------------------

    def _fold(self, loser: Memory, *, into: Memory, here: bool) -> None:
        """Two memories with one text: ``loser`` goes, leaving a tombstone that points at ``into``.

        ``here``: the loser has a row in this database, which is removed (its links follow it).
        """
        at = max(loser.updated_at, into.updated_at)
        t = Tombstone(loser.id, at, loser.version + 1, hard=False, into=into.id, namespace=loser.namespace,
                      actor=ACTOR)  # fmt: skip
        if here:
            pk = self.store.memories.pk_of(loser.id)
            if pk is not None:
                self._remember_links(loser.id)
                self.store.memories.delete(self.store.memories.load(pk, with_sources=False))
        self.store.events.add(loser.id, "deleted", at, after=t.payload(), note=_note(t), actor=ACTOR)

    def _key_event(self, loser: Memory, winner: Memory, at: str) -> dict[str, Any]:
        return {
            "kind": "superseded", "at": at, "actor": ACTOR,
            "before": {"status": "active"}, "after": {"status": "superseded", "superseded_by": winner.id},
            "note": f"key '{loser.key}' was also set elsewhere; the later value stays",
        }  # fmt: skip

    def _lose_key(self, remote: Memory, holder: Memory) -> dict[str, Any]:
        """The incoming memory holds a key that a later memory here holds too: it arrives superseded."""
        at = max(remote.updated_at, holder.updated_at)
        event = self._key_event(remote, holder, at)
        remote.status, remote.superseded_by = "superseded", holder.id
        remote.version, remote.updated_at = remote.version + 1, at
        return event

    def _lose_key_here(self, holder: Memory, remote: Memory) -> None:
        """The memory here holding the key is older than the incoming one: it is superseded by it."""
        at = max(remote.updated_at, holder.updated_at)
        event = self._key_event(holder, remote, at)
        self.store.memories.set_status(holder, "superseded", at)
        self.store.events.add(holder.id, "superseded", at, before=event["before"], after=event["after"],
                              note=event["note"], actor=ACTOR)  # fmt: skip
        self.moved.append((holder.id, "superseded_by", remote.id))

    def _remember_links(self, memory_id: str) -> None:
        """Links to a memory about to go are pointed, at the end, wherever its tombstone leads."""
        for holder, column in self.store.memories.linked_to(memory_id):
            self.moved.append((holder, column, memory_id))

    # -- links -------------------------------------------------------------------------------

    def resolve(self, target: str | None) -> str | None:
        """The memory a link to ``target`` means here: itself, or the memory it was folded into."""
        for _ in range(MAX_HOPS):
            if target is None or self.store.memories.pk_of(target) is not None:
                return target
            into = next((t.into for t in self._tombstones_of(target) if t.into), None)
            if into is None:
                return None
            target = into
        return None

    def _tombstones_of(self, memory_id: str) -> list[Tombstone]:
        events = self.store.events.tombstones(memory_id)
        return [_tombstone_of(memory_id, events)] if events else []

    def link(self) -> None:
        """Set the links of the lines written and of the memories whose link target went."""
        for memory_id, superseded_by, consolidated_into in self.links:
            if self.store.memories.pk_of(memory_id) is not None:
                self.store.memories.link(memory_id, self.resolve(superseded_by), self.resolve(consolidated_into))
        for holder, column, target in self.moved:
            if self.store.memories.pk_of(holder) is not None:
                self.store.memories.set_link(holder, column, self.resolve(target))


def _note(t: Tombstone) -> str:
    if t.hard:
        return "purged with forget --hard; content removed"
    return f"merged into {t.into}" if t.into else "removed"
