"""get, list and forget."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engram_cli.errors import InvalidInput, ModelError
from engram_cli.lang import text as textmod
from engram_cli.memory import compact as compactmod
from engram_cli.memory import records, repair
from engram_cli.memory.model import Event, Memory, passage_text
from engram_cli.memory.recall import Filters
from engram_cli.store import vectors
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now

log = logging.getLogger(__name__)

# model id -> (embed passages, dimension), as the API hands out its models.
Embedder = Callable[[str], tuple[Callable[[Sequence[str]], np.ndarray], int]]


def get(store: Store, ref: str) -> Memory:
    with store.read():
        return records.load(store, records.resolve_pk(store, ref))


def history(store: Store, ref: str) -> tuple[Memory, list[Event]]:
    with store.read():
        memory = records.load(store, records.resolve_pk(store, ref))
        return memory, records.events_of(store, memory.id)


def list_memories(store: Store, filters: Filters, *, limit: int = 20, offset: int = 0) -> list[Memory]:
    """Newest first."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, not {limit}")
    where, params = filters.sql("m")
    with store.read():
        pks = [
            int(r[0])
            for r in store.rows(
                f"SELECT m.pk FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.pk DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        ]
        found = records.load_many(store, pks)
    return [found[pk] for pk in pks if pk in found]


def count(store: Store, filters: Filters) -> int:
    where, params = filters.sql("m")
    return int(store.scalar(f"SELECT count(*) FROM memories m WHERE {where}", params) or 0)


@dataclass
class ForgetResult:
    id: str
    action: str  # "archived", "purged" or "unchanged"
    # With --hard: the other memories its text was removed from (sources, wording, metadata,
    # history), and the memories it had consolidated, which keep their own text.
    edited: list[str] = field(default_factory=list)
    consolidated: list[str] = field(default_factory=list)
    note: str | None = None  # why a memory nobody named was purged along with one that was


def forget(
    store: Store,
    refs: list[str],
    *,
    hard: bool = False,
    actor: str = "user",
    embedder: Embedder | None = None,
) -> list[ForgetResult]:
    """Archive memories (default) or purge them with every copy of their text (``hard``).

    All ids are resolved before anything changes, and all changes share one
    transaction: a typo in the third id leaves the first two untouched. ``embedder``
    (model id -> passage embedder and dimension) rebuilds the vector of a memory whose
    wording or context held the purged text; without it that vector is dropped, for
    ``audit --fix`` to rebuild.
    """
    if not refs:
        raise InvalidInput("no memory id given", hint="engram forget ID [ID …]; `engram list` shows ids")
    results: list[ForgetResult] = []
    with store.write():
        pks = list(dict.fromkeys(records.resolve_pk(store, ref) for ref in refs))
        now = iso_now()
        purger = _Purger(store, now, actor, embedder)
        for pk in pks:
            if hard:
                if store.scalar("SELECT 1 FROM memories WHERE pk = ?", (pk,)) is None:
                    continue  # purged a moment ago with an earlier id: a fact made of its words only
                results.extend(purger.purge(records.load(store, pk, with_sources=False)))
                continue
            memory = records.load(store, pk, with_sources=False)
            if memory.status == "archived":
                results.append(ForgetResult(memory.id, "unchanged"))
            else:
                before = {"status": memory.status}
                records.set_status(store, memory, "archived", now)
                records.add_event(
                    store, memory.id, "archived", now,
                    before=before, after={"status": "archived"}, note="forgotten", actor=actor,
                )  # fmt: skip
                results.append(ForgetResult(memory.id, "archived"))
        gone = {r.id for r in results if r.action == "purged"}
        for result in results:
            result.edited = [i for i in result.edited if i not in gone]
            result.consolidated = [i for i in result.consolidated if i not in gone]
    if hard and results:
        repair.scrub(store)  # the keyword index's old segments and the WAL still hold the text
    return results


class _Purger:
    """Purges memories and every copy engram made of their text, inside the caller's transaction.

    Copies are: source rows of other memories that name the purged memory (compact keeps each
    consolidated episode's and each folded duplicate's text that way) or hold its exact text (a
    near duplicate ``add`` folded into another memory, kept as a supplement); sentences of it
    that a fact compact wrote quoted; strings of other memories' metadata that contain it (a
    chat turn's neighbours are its ``context``, which its vector is made from); and the history
    of other memories that quotes it. Other memories with the same words are not copies: they
    were remembered in their own right (another namespace or agent) and are forgotten by their
    own id.
    """

    def __init__(self, store: Store, now: str, actor: str, embedder: Embedder | None) -> None:
        self.store = store
        self.now = now
        self.actor = actor
        self.embedder = embedder

    def purge(self, memory: Memory, note: str | None = None) -> list[ForgetResult]:
        result = ForgetResult(memory.id, "purged", note=note)
        results = [result]
        result.consolidated = self._release(memory)
        records.purge(self.store, memory)
        records.add_event(
            self.store, memory.id, "deleted", self.now,
            note="purged with forget --hard; content removed" + (f"; {note}" if note else ""), actor=self.actor,
        )  # fmt: skip
        edited: dict[int, str] = {}
        for pk, memory_id in self.store.rows(
            "SELECT DISTINCT m.pk, m.id FROM sources s JOIN memories m ON m.pk = s.memory_pk "
            "WHERE s.ref = ? OR s.content = ?",
            (memory.id, memory.content),
        ):
            edited[int(pk)] = str(memory_id)
        self.store.execute("DELETE FROM sources WHERE ref = ? OR content = ?", (memory.id, memory.content))
        for fact in self._facts_quoting(memory):
            outcome = self._rewrite(fact, memory)
            if outcome == "edited":
                edited[fact.pk] = fact.id
            elif outcome == "purged":
                edited.pop(fact.pk, None)
                why = f"its wording was {memory.id[:8]}'s words only"
                results.extend(self.purge(records.load(self.store, fact.pk, with_sources=False), why))
        self._strip_metadata(memory.content, edited)
        self._blank_history(memory, edited)
        for pk in edited:
            records.reindex(self.store, pk)  # sources are part of the keyword row
        result.edited = sorted(set(edited.values()) - {r.id for r in results})
        return results

    def _release(self, memory: Memory) -> list[str]:
        """Memories consolidated into this one keep their own text, and the status they have.

        They are not restored: an episode or a near duplicate folded into the purged memory
        often says what it said, and a purge must not bring those words back into recall.
        """
        released: list[str] = []
        for (pk,) in self.store.rows("SELECT pk FROM memories WHERE consolidated_into = ? ORDER BY pk", (memory.id,)):
            other = records.load(self.store, int(pk), with_sources=False)
            records.update(self.store, other, self.now, consolidated_into=None)
            records.add_event(
                self.store, other.id, "updated", self.now,
                before={"consolidated_into": memory.id}, after={"consolidated_into": None},
                note=f"{memory.id[:8]}, which it was consolidated into, was purged with forget --hard",
                actor=self.actor,
            )  # fmt: skip
            released.append(other.id)
        return released

    def _facts_quoting(self, memory: Memory) -> list[Memory]:
        """Facts compact wrote from a cluster this memory was part of: their wording may quote it."""
        facts: list[Memory] = []
        for memory_id, after in self.store.rows(
            "SELECT memory_id, after FROM events WHERE kind = 'created' AND actor = 'compact' AND instr(after, ?) > 0",
            (memory.id,),
        ):
            if memory.id not in (json.loads(after or "{}").get("episodes") or []):
                continue
            pk = self.store.scalar("SELECT pk FROM memories WHERE id = ?", (memory_id,))
            if pk is not None:
                facts.append(records.load(self.store, int(pk), with_sources=False))
        return facts

    def _rewrite(self, fact: Memory, purged: Memory) -> str | None:
        """Take the purged memory's sentences out of a fact's wording: "edited", "purged", or None (none quoted).

        A sentence another episode of the fact also has stays. When nothing is left, the fact is
        summarised again from the episodes it still carries, the way compact made it; when none
        remain, or the new summary is word for word another memory, the fact was only a copy and
        goes too.
        """
        carried = [
            str(r[0])
            for r in self.store.rows(
                "SELECT content FROM sources WHERE memory_pk = ? AND content IS NOT NULL ORDER BY pk", (fact.pk,)
            )
        ]
        wording = without_sentences(fact.content, purged.content, carried)
        if wording == fact.content:
            return None
        if not textmod.analyze(wording):
            episodes = [
                str(r[0])
                for r in self.store.rows(
                    "SELECT content FROM sources WHERE memory_pk = ? AND kind = 'compact' AND content IS NOT NULL "
                    "ORDER BY pk",
                    (fact.pk,),
                )
            ]
            wording = compactmod.extractive_summary(episodes) if episodes else ""
        content_hash = textmod.content_hash(wording)
        taken = self.store.scalar(
            "SELECT 1 FROM memories WHERE namespace = ? AND agent_id = ? AND content_hash = ? AND pk != ?",
            (fact.namespace, fact.agent, content_hash, fact.pk),
        )
        if not textmod.analyze(wording) or taken:
            return "purged"
        records.update(self.store, fact, self.now, content=wording, content_hash=content_hash)
        fact.content = wording
        self._reembed(fact)
        records.add_event(
            self.store, fact.id, "updated", self.now,
            note=f"wording rewritten without the words of {purged.id[:8]}, purged with forget --hard", actor=self.actor,
        )  # fmt: skip
        return "edited"

    def _strip_metadata(self, text: str, edited: dict[int, str]) -> None:
        probe = _json_probe(text)
        for (pk,) in self.store.rows("SELECT pk FROM memories WHERE instr(metadata, ?) > 0", (probe,)):
            memory = records.load(self.store, int(pk), with_sources=False)
            cleaned, changed = _strip(memory.metadata, text)
            if not changed:
                continue
            before = passage_text(memory.content, memory.metadata)
            records.update(self.store, memory, self.now, metadata=records.dumps(cleaned))
            memory.metadata = cleaned
            if passage_text(memory.content, memory.metadata) != before:
                self._reembed(memory)
            edited[memory.pk] = memory.id

    def _blank_history(self, purged: Memory, edited: dict[int, str]) -> None:
        """Other memories' events that quote the purged text lose those values, as the purged one's own did."""
        text = purged.content
        probe = _json_probe(text)
        for event_pk, memory_id, before, after, note in self.store.rows(
            "SELECT pk, memory_id, before, after, note FROM events WHERE memory_id != ? "
            "AND (instr(before, ?) > 0 OR instr(after, ?) > 0 OR instr(note, ?) > 0)",
            (purged.id, probe, probe, text),
        ):
            values = [_blank(raw, text) for raw in (before, after)]
            new_note = note.replace(text, "[forgotten]") if note else note
            if values == [before, after] and new_note == note:
                continue
            self.store.execute(
                "UPDATE events SET before = ?, after = ?, note = ? WHERE pk = ?", (*values, new_note, event_pk)
            )
            pk = self.store.scalar("SELECT pk FROM memories WHERE id = ?", (memory_id,))
            if pk is not None:
                edited[int(pk)] = str(memory_id)

    def _reembed(self, memory: Memory) -> None:
        """A new vector from the memory's new passage; without a model for it, none (audit --fix embeds it)."""
        table = vectors.table_for(self.store, memory.embedding_model) if memory.embedding_model else None
        if self.embedder is not None and memory.embedding_model:
            try:
                embed, dim = self.embedder(memory.embedding_model)
            except ModelError:
                log.warning("model %s is not available: `engram audit --fix` embeds %s", memory.embedding_model,
                            memory.id[:8])  # fmt: skip
            else:
                vector = np.asarray(embed([passage_text(memory.content, memory.metadata)]), dtype=np.float32)[0]
                vectors.put(
                    self.store, table or vectors.ensure_table(self.store, memory.embedding_model, dim), memory.pk,
                    vector, namespace=memory.namespace, status=memory.status, memory_type=memory.type,
                    agent=memory.agent,
                )  # fmt: skip
                return
        if table:
            vectors.delete(self.store, table, memory.pk)


def without_sentences(wording: str, purged: str, keep: Sequence[str]) -> str:
    """``wording`` without the sentences it took from ``purged`` that no text in ``keep`` has too.

    Sentences are split the way compact split them when it chose them, so its summaries come
    apart where they were joined; a summary it clipped at a word may end in the start of one.
    """
    own = [s for s in compactmod._sentences(purged) if not any(s in k for k in keep)]
    clipped = wording.endswith("…")
    out = wording[:-1] if clipped else wording
    for sentence in sorted(own, key=len, reverse=True):
        out = out.replace(sentence, " ")
    if clipped:
        starts = [0, *(i + 1 for i in range(1, len(out)) if out[i] == " " and out[i - 1] in _SENTENCE_END)]
        tail = next((i for i in starts if out[i:].strip() and any(s.startswith(out[i:].strip()) for s in own)), None)
        out = out[:tail] if tail is not None else out + "…"
    if out == wording:
        return wording
    return " ".join(out.split())


_SENTENCE_END = ".!?;。！？；"


def _json_probe(text: str) -> str:
    """The longest stretch of ``text`` that stored JSON holds as is (no quote, backslash or control character)."""
    return max(re.split(r'["\\\x00-\x1f]', text), key=len)


def _strip(value: Any, text: str) -> tuple[Any, bool]:
    """Decoded JSON without ``text`` in its strings; an entry left blank goes."""
    changed = False

    def walk(node: Any) -> Any:
        nonlocal changed
        if isinstance(node, str) and text in node:
            changed = True
            return " ".join(node.replace(text, " ").split())
        if isinstance(node, dict):
            items = {k: walk(v) for k, v in node.items()}
            return {k: v for k, v in items.items() if v != "" or node[k] == ""}
        if isinstance(node, list):
            return [v for v, old in ((walk(v), v) for v in node) if v != "" or old == ""]
        return node

    return walk(value), changed


def _blank(raw: str | None, text: str) -> str | None:
    """A stored event payload with every string that quotes ``text`` blanked (null)."""
    if not raw:
        return raw
    found = False

    def walk(node: Any) -> Any:
        nonlocal found
        if isinstance(node, str) and text in node:
            found = True
            return None
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    data = walk(json.loads(raw))
    return records.dumps(data) if found else raw


def score_factors(memory: Memory) -> dict[str, float | str]:
    """The parts of a recall score that belong to the memory itself (relevance depends on the query)."""
    from engram_cli.memory.recall import IMPORTANCE_BASE
    from engram_cli.timeutil import from_iso, now

    last = memory.last_access_at or memory.created_at
    days = max(0.0, (now() - from_iso(last)).total_seconds() / 86400)
    factor = IMPORTANCE_BASE + memory.importance
    return {
        "importance_factor": round(factor, 6),
        "decay_score": round(memory.decay_score, 6),
        "weight": round(factor * memory.decay_score, 6),
        "days_since_access": round(days, 3),
        "formula": "score = relevance x (0.6 + importance) x decay_score",
    }


def recent_events(store: Store, *, limit: int = 50, kinds: list[str] | None = None) -> list[Event]:
    """The latest events across the database, newest first."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, not {limit}")
    where, params = "1", []
    if kinds:
        where = f"kind IN ({', '.join('?' for _ in kinds)})"
        params = list(kinds)
    rows = store.rows(
        f"SELECT memory_id, kind, at, actor, before, after, note FROM events WHERE {where} ORDER BY pk DESC LIMIT ?",
        [*params, limit],
    )
    return [records.event_from_row(r) for r in rows]
