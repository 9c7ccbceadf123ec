"""get, list and forget."""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engram_cli.errors import InvalidInput, ModelError
from engram_cli.lang import text as textmod
from engram_cli.memory import records
from engram_cli.memory.model import Event, Filters, Memory
from engram_cli.store.codec import dumps
from engram_cli.timeutil import iso_now

# Reading (get, list, inspect) needs none of what purging does: numpy, compact, repair.
if TYPE_CHECKING:
    import numpy as np

    from engram_cli.store.db import Store

log = logging.getLogger(__name__)

# model id -> (embed passages, dimension), as the API hands out its models.
Embedder = Callable[[str], tuple[Callable[[Sequence[str]], "np.ndarray"], int]]


def get(store: Store, ref: str) -> Memory:
    with store.read():
        return store.memories.load(records.resolve_pk(store, ref))


def history(store: Store, ref: str) -> tuple[Memory, list[Event]]:
    with store.read():
        memory = store.memories.load(records.resolve_pk(store, ref))
        return memory, store.events.of(memory.id)


def list_memories(store: Store, filters: Filters, *, limit: int = 20, offset: int = 0) -> list[Memory]:
    """Newest first."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, not {limit}")
    with store.read():
        pks = store.memories.pks(filters, order="newest", limit=limit, offset=offset)
        found = store.memories.load_many(pks)
    return [found[pk] for pk in pks if pk in found]


def count(store: Store, filters: Filters) -> int:
    return store.memories.count(filters)


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
    within: list[str] | None = None,
) -> list[ForgetResult]:
    """Archive memories (default) or purge them with every copy of their text (``hard``).

    All ids are resolved before anything changes, and all changes share one
    transaction: a typo in the third id leaves the first two untouched. A memory outside the
    namespaces ``within`` (None: any) is refused the same way. ``embedder``
    (model id -> passage embedder and dimension) rebuilds the vector of a memory whose
    wording or context held the purged text; without it that vector is dropped, for
    ``audit --fix`` to rebuild.
    """
    if not refs:
        raise InvalidInput("no memory id given", hint="engram forget ID [ID …]; `engram list` shows ids")
    results: list[ForgetResult] = []
    with store.write():
        pks = list(dict.fromkeys(records.resolve_pk(store, ref) for ref in refs))
        if within is not None:
            _require_within(store, pks, within)
        now = iso_now()
        purger = _Purger(store, now, actor, embedder)
        for pk in pks:
            if hard:
                if not store.memories.exists(pk):
                    continue  # purged a moment ago with an earlier id: a fact made of its words only
                results.extend(purger.purge(store.memories.load(pk, with_sources=False)))
                continue
            memory = store.memories.load(pk, with_sources=False)
            if memory.status == "archived":
                results.append(ForgetResult(memory.id, "unchanged"))
            else:
                before = {"status": memory.status}
                store.memories.set_status(memory, "archived", now)
                store.events.add(
                    memory.id, "archived", now,
                    before=before, after={"status": "archived"}, note="forgotten", actor=actor,
                )  # fmt: skip
                results.append(ForgetResult(memory.id, "archived"))
        gone = {r.id for r in results if r.action == "purged"}
        for result in results:
            result.edited = [i for i in result.edited if i not in gone]
            result.consolidated = [i for i in result.consolidated if i not in gone]
    if hard and results:
        from engram_cli.memory import repair

        repair.scrub(store)  # the keyword index's old segments and the WAL still hold the text
    return results


def _require_within(store: Store, pks: list[int], within: list[str]) -> None:
    """Refuse to forget a memory of another project by an id typed here: it is named with -n or -A."""
    for memory in store.memories.load_many(pks).values():
        if memory.namespace not in within:
            where = " and ".join(repr(n) for n in within)
            raise InvalidInput(
                f"memory {memory.short_id} is in namespace {memory.namespace!r}, not in {where}",
                hint=f"pass -n {shlex.quote(memory.namespace)} (or -A) to forget it from here",
            )


def purge_as_elsewhere(
    store: Store,
    memory: Memory,
    *,
    at: str,
    actor: str,
    version: int,
    embedder: Embedder | None = None,
    note: str | None = None,
) -> list[ForgetResult]:
    """Purge a memory that another database purged (its tombstone came with an import), in the caller's
    transaction: the same removal as `forget --hard`, dated, signed and noted as the original, so that
    the copies it rewrites here come out as they did there."""
    return _Purger(store, at, actor, embedder).purge(memory, note, version=version)


class _Purger:
    """Purges memories and every copy engram made of their text, inside the caller's transaction.

    Copies are: source rows of other memories that name the purged memory (compact keeps each
    consolidated episode's and each folded duplicate's text that way) or hold its exact text (a
    near duplicate ``add`` folded into another memory, kept as a supplement); sentences of it
    that a fact compact wrote quoted; strings of other memories' metadata that contain it (a
    chat turn's neighbours are its ``context``, which its vector is made from); the history of
    other memories that quotes it; and the turns of conversations (evidence) it was made from that
    no other memory was made from, with every turn that says its text word for word. Other
    memories with the same words are not copies: they were remembered in their own right
    (another namespace or agent) and are forgotten by their own id.
    """

    def __init__(self, store: Store, now: str, actor: str, embedder: Embedder | None) -> None:
        self.store = store
        self.now = now
        self.actor = actor
        self.embedder = embedder

    def purge(self, memory: Memory, note: str | None = None, *, version: int | None = None) -> list[ForgetResult]:
        """Purge ``memory`` and every copy of its text; ``version`` is the tombstone's (default: the memory's + 1)."""
        result = ForgetResult(memory.id, "purged", note=note)
        results = [result]
        result.consolidated = self._release(memory)
        from engram_cli.memory import evidence as evidencemod

        # Before the row goes: its links to the turns it was made from go with it.
        evidencemod.purge_for(self.store, memory.pk, memory.content)
        self.store.memories.purge(memory)
        # The tombstone: what export sends to other databases so that they purge the memory too.
        tombstone = {"version": version or memory.version + 1, "hard": True, "namespace": memory.namespace}
        self.store.events.add(
            memory.id, "deleted", self.now, after=tombstone,
            note="purged with forget --hard; content removed" + (f"; {note}" if note else ""), actor=self.actor,
        )  # fmt: skip
        edited = self.store.sources.holders(memory.id, memory.content)
        self.store.sources.delete_copies(memory.id, memory.content)
        for fact in self._facts_quoting(memory):
            outcome = self._rewrite(fact, memory)
            if outcome == "edited":
                edited[fact.pk] = fact.id
            elif outcome == "purged":
                edited.pop(fact.pk, None)
                why = f"its wording was {memory.id[:8]}'s words only"
                results.extend(self.purge(self.store.memories.load(fact.pk, with_sources=False), why))
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
        for pk in self.store.memories.consolidated_into(memory.id):
            other = self.store.memories.load(pk, with_sources=False)
            self.store.memories.update(other, self.now, consolidated_into=None)
            self.store.events.add(
                other.id, "updated", self.now,
                before={"consolidated_into": memory.id}, after={"consolidated_into": None},
                note=f"{memory.id[:8]}, which it was consolidated into, was purged with forget --hard",
                actor=self.actor,
            )  # fmt: skip
            released.append(other.id)
        return released

    def _facts_quoting(self, memory: Memory) -> list[Memory]:
        """Facts compact wrote from a cluster this memory was part of: their wording may quote it."""
        facts: list[Memory] = []
        for memory_id, after in self.store.events.created_by("compact", memory.id):
            if memory.id not in (after.get("episodes") or []):
                continue
            pk = self.store.memories.pk_of(memory_id)
            if pk is not None:
                facts.append(self.store.memories.load(pk, with_sources=False))
        return facts

    def _rewrite(self, fact: Memory, purged: Memory) -> str | None:
        """Take the purged memory's sentences out of a fact's wording: "edited", "purged", or None (none quoted).

        A sentence another episode of the fact also has stays. When nothing is left, the fact is
        summarised again from the episodes it still carries, the way compact made it; when none
        remain, or the new summary is word for word another memory, the fact was only a copy and
        goes too.
        """
        carried = self.store.sources.supplements(fact.pk)
        wording = without_sentences(fact.content, purged.content, carried)
        if wording == fact.content:
            return None
        if not textmod.analyze(wording):
            from engram_cli.memory import compact as compactmod

            episodes = self.store.sources.supplements(fact.pk, kind="compact")
            wording = compactmod.extractive_summary(episodes) if episodes else ""
        content_hash = textmod.content_hash(wording)
        taken = self.store.memories.duplicate_of(fact.namespace, fact.agent, content_hash, other_than=fact.pk)
        if not textmod.analyze(wording) or taken is not None:
            return "purged"
        self.store.memories.update(fact, self.now, content=wording, content_hash=content_hash)
        fact.content = wording
        self._reembed(fact)
        self.store.events.add(
            fact.id, "updated", self.now,
            note=f"wording rewritten without the words of {purged.id[:8]}, purged with forget --hard", actor=self.actor,
        )  # fmt: skip
        return "edited"

    def _strip_metadata(self, text: str, edited: dict[int, str]) -> None:
        probe = _json_probe(text)
        for pk in self.store.memories.with_metadata_containing(probe):
            memory = self.store.memories.load(pk, with_sources=False)
            cleaned, changed = _strip(memory.metadata, text)
            if not changed:
                continue
            before = memory.passage
            self.store.memories.update(memory, self.now, metadata=cleaned)
            memory.metadata = cleaned
            if memory.passage != before:
                self._reembed(memory)
            edited[memory.pk] = memory.id

    def _blank_history(self, purged: Memory, edited: dict[int, str]) -> None:
        """Other memories' events that quote the purged text lose those values, as the purged one's own did."""
        text = purged.content
        probe = _json_probe(text)
        for event in self.store.events.quoting(probe, text, other_than=purged.id):
            before, after = (_blank(raw, text) for raw in (event.before, event.after))
            note = event.note.replace(text, "[forgotten]") if event.note else event.note
            if (before, after, note) == (event.before, event.after, event.note):
                continue
            self.store.events.rewrite(event.pk, before, after, note)
            pk = self.store.memories.pk_of(event.memory_id)
            if pk is not None:
                edited[pk] = event.memory_id

    def _reembed(self, memory: Memory) -> None:
        """A new vector from the memory's new passage; without a model for it, none (audit --fix embeds it)."""
        if not memory.embedding_model:
            return
        if self.embedder is not None:
            try:
                embed, _ = self.embedder(memory.embedding_model)
            except ModelError:
                log.warning("model %s is not available: `engram audit --fix` embeds %s", memory.embedding_model,
                            memory.id[:8])  # fmt: skip
            else:
                import numpy as np

                vector = np.asarray(embed([memory.passage]), dtype=np.float32)[0]
                self.store.vectors.put(
                    memory.embedding_model, memory.pk, vector, namespace=memory.namespace, status=memory.status,
                    memory_type=memory.type, agent=memory.agent,
                )  # fmt: skip
                return
        self.store.vectors.delete(memory.embedding_model, memory.pk)


def without_sentences(wording: str, purged: str, keep: Sequence[str]) -> str:
    """``wording`` without the sentences it took from ``purged`` that no text in ``keep`` has too.

    Sentences are split the way compact split them when it chose them, so its summaries come
    apart where they were joined; a summary it clipped at a word may end in the start of one.
    """
    from engram_cli.memory import compact as compactmod

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
    return dumps(data) if found else raw


def score_factors(memory: Memory) -> dict[str, float | str]:
    """The parts of a recall score that belong to the memory itself (relevance depends on the query)."""
    from engram_cli.memory.model import IMPORTANCE_BASE
    from engram_cli.timeutil import from_iso, now

    days = max(0.0, (now() - from_iso(memory.decay_start)).total_seconds() / 86400)
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
    return store.events.recent(limit, kinds)
