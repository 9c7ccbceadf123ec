"""repair: what ``audit --fix`` changes. Each repair is its own transaction; the audit decides what to repair.

- Secrets are redacted in place, in every column the audit scans (``audit.SCANNED``): a
  memory's text, summary, metadata, tags, sources and events in one transaction per memory;
  the rows of tables that belong to no memory (ingest state, settings) a few hundred per
  transaction. A memory's keyword row and vector are rebuilt from the redacted text, then the
  keyword index is merged and the WAL checkpointed, so the raw bytes leave the file
  (secure_delete zeroes what is freed). An ``updated`` event names the kinds and fields
  redacted, never a value.
- Missing keyword rows and vectors are rebuilt, vectors with outdated filter columns re-stored.
- Index rows without a memory are removed.
- Exact duplicates (same namespace and agent, the same words: only case, punctuation or spacing
  differ) are folded into one memory, losing nothing but the extra row.
- Decay is re-run.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engram_cli.errors import ModelError
from engram_cli.lang import redact as redactmod
from engram_cli.lang import text as textmod
from engram_cli.memory import evidence as evidencemod
from engram_cli.memory import records
from engram_cli.memory.model import Memory
from engram_cli.memory.remember import chunked
from engram_cli.store.codec import dumps
from engram_cli.store.db import Store

log = logging.getLogger(__name__)

CHUNK = 500  # rows per IN (...) list and per transaction
EMBED_BATCH = 32

EmbedFn = Callable[[Sequence[str]], np.ndarray]
# How a column's text is read for secrets: as plain text, or as JSON (keys and strings).
TEXT, JSON = "text", "json"
Columns = Mapping[str, Mapping[str, str]]  # table -> column -> TEXT or JSON


def redact_value(raw: str | None, kind: str, *, contact: bool = False) -> tuple[str | None, list[str]]:
    """A column's value with its secrets redacted, and the kinds found (the value unchanged if none).

    JSON is decoded and every string redacted (a string under a secret-holding key whole), its
    keys too: a digest counts shell commands by their text, so a key can carry a token. A JSON
    column holding something that does not decode is read as text.
    """
    if not raw:
        return raw, []
    if kind == JSON:
        try:
            data = json.loads(raw)
        except ValueError:
            pass
        else:
            data, key_kinds = _redact_keys(data, contact)
            data, kinds = redactmod.redact_data(data, contact=contact)
            kinds = key_kinds + kinds
            return (dumps(data) if kinds else raw), kinds
    text, found = redactmod.redact(raw, contact=contact)
    return text, [f.kind for f in found]


def _redact_keys(value: Any, contact: bool) -> tuple[Any, list[str]]:
    kinds: list[str] = []

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for key, item in node.items():
                new_key, found = redactmod.redact(str(key), contact=contact)
                kinds.extend(f.kind for f in found)
                out[new_key] = walk(item)
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(value), kinds


def scrub(store: Store) -> bool:
    """Make removed or rewritten text leave the file: merge the keyword index, then checkpoint the WAL.

    The keyword index is contentless, but its segments keep a replaced row's terms until
    they are merged; secure_delete then zeroes the pages that frees. Runs after the caller's
    transaction has committed; False when another connection kept the WAL busy.
    """
    store.keywords.optimize()
    store.evidence.optimize()
    emptied = store.maintenance.checkpoint()
    if not emptied:
        log.warning("another connection kept the WAL busy; old pages leave it at the next checkpoint")
    return emptied


@dataclass(frozen=True)
class Repairs:
    """What repairs call back into: the API owns the embedding models and the decay settings."""

    embedder: Callable[[str], tuple[EmbedFn, int]]  # model id -> (embed passages, dimension)
    decay: Callable[[], Any]  # re-runs decay over the audited namespaces; returns a DecayReport


@dataclass
class Work:
    """What an audit found that is safe to repair, by row."""

    secret_pks: list[int] = field(default_factory=list)  # memories with a secret in their rows or sources
    secret_event_pks: list[int] = field(default_factory=list)  # events (of live or purged memories)
    secret_rows: dict[str, list[int]] = field(default_factory=dict)  # table of no memory -> rowids
    missing_fts: list[int] = field(default_factory=list)
    missing_vectors: list[int] = field(default_factory=list)
    outdated_vectors: list[int] = field(default_factory=list)
    orphan_vectors: dict[str, list[int]] = field(default_factory=dict)  # model id -> memory pks
    orphan_fts: list[int] = field(default_factory=list)
    exact_groups: list[list[int]] = field(default_factory=list)
    stale_vector_indexes: list[str] = field(default_factory=list)  # model ids
    recount: bool = False  # the kept memory counts differ from the memories


@dataclass
class Action:
    """One kind of repair that was made."""

    name: str
    count: int
    detail: str


class Repairer:
    def __init__(
        self, store: Store, repairs: Repairs, active_model: str, at: str, columns: Columns, contact: bool = False
    ) -> None:
        self.store = store
        self.contact = contact
        self.repairs = repairs
        self.active_model = active_model
        self.at = at
        self.columns = columns
        self._models: dict[str, tuple[str, EmbedFn, int]] = {}
        self.redacted_ids: set[str] = set()  # memories (live or purged) with something redacted
        self.redacted_rows: Counter[str] = Counter()  # table of no memory -> rows redacted

    # -- vectors ----------------------------------------------------------------------------

    def model_for(self, model_id: str | None) -> tuple[str, EmbedFn, int]:
        """The model to embed a row with: its own when engram ships it, else the active one."""
        wanted = model_id or self.active_model
        if wanted not in self._models:
            try:
                embed, dim = self.repairs.embedder(wanted)
                self._models[wanted] = (wanted, embed, dim)
            except ModelError:
                log.info("model %s is not available; embedding with %s", wanted, self.active_model)
                embed, dim = self.repairs.embedder(self.active_model)
                self._models[wanted] = (self.active_model, embed, dim)
        return self._models[wanted]

    def put_vector(self, memory: Memory, vector: np.ndarray, model_id: str, dim: int) -> None:
        """Store a memory's vector in ``model_id``'s table, moving it there if it was elsewhere."""
        self.store.vectors.ensure(model_id, dim)
        if memory.embedding_model and memory.embedding_model != model_id:
            self.store.vectors.delete(memory.embedding_model, memory.pk)
        self.store.vectors.put(
            model_id, memory.pk, vector,
            namespace=memory.namespace, status=memory.status, memory_type=memory.type, agent=memory.agent,
        )  # fmt: skip
        if memory.embedding_model != model_id:
            self.store.memories.update(memory, self.at, embedding_model=model_id)
            memory.embedding_model = model_id

    # -- secrets ----------------------------------------------------------------------------

    def _redact(self, table: str, row: Sequence[Any]) -> tuple[dict[str, Any], list[str]]:
        """The changed columns of one row (read in ``self.columns[table]`` order), and the kinds found."""
        changes: dict[str, Any] = {}
        kinds: list[str] = []
        for (column, kind), raw in zip(self.columns[table].items(), row, strict=True):
            value, found = redact_value(raw, kind, contact=self.contact)
            if found:
                changes[column] = value
                kinds.extend(found)
        return changes, kinds

    def redact_memory(self, pk: int) -> list[str]:
        """Redact one memory everywhere it is written; returns the kinds redacted (none if it vanished)."""
        memories = self.store.memories
        with self.store.write():
            if not memories.exists(pk):
                return []
            memory = memories.load(pk, with_sources=False)
            ((_, *row),) = self.store.maintenance.text_rows(
                "memories", list(self.columns["memories"]), by="pk", keys=[pk], key="pk"
            )
            changes, kinds = self._redact("memories", row)
            fields = list(changes)
            if "metadata" in changes:
                changes["metadata"] = json.loads(str(changes["metadata"]))
            content = changes.get("content")
            if content is not None:
                changes["content_hash"] = textmod.content_hash(content)
            for place, found_kinds in (
                ("tags", self._redact_tags(pk)),
                ("sources", self._redact_sources(pk)),
                ("events", self._redact_events(memory.id)),
            ):
                if found_kinds:
                    kinds.extend(found_kinds)
                    fields.append(place)
            # What the fold below and the vector read: the redacted values.
            old_passage = memory.passage
            memory.tags = memories.tags_of(pk)
            if "metadata" in changes:
                memory.metadata = changes["metadata"]
            twin = None
            if content is not None and memory.key is None:  # a keyed fact is identified by its key
                twin = memories.duplicate_of(memory.namespace, memory.agent, changes["content_hash"], other_than=pk)
            if content is not None and twin is not None:
                # Redacted, it reads exactly like another memory: fold it into that one.
                rest = {k: v for k, v in changes.items() if k not in ("content", "content_hash")}
                memories.update(memory, self.at, **rest)
                survivor = memories.load(twin, with_sources=False)
                self.fold(survivor, memory, wording=content, why="the same text once its secrets were redacted")
                self._redaction_event(survivor.id, kinds, fields, f"folded in {memory.id[:8]}")
                self.redacted_ids.add(memory.id)
                return kinds
            memories.update(memory, self.at, **changes)
            records.reindex(self.store, pk)
            if content is not None:
                memory.content = content
            text = memory.passage
            if text != old_passage:  # the vector is made from the text and the metadata's context
                model_id, embed, dim = self.model_for(memory.embedding_model)
                self.put_vector(memory, np.asarray(embed([text]), dtype=np.float32)[0], model_id, dim)
            self._redaction_event(memory.id, kinds, fields, None)
            self.redacted_ids.add(memory.id)
            return kinds

    def _redaction_event(self, memory_id: str, kinds: list[str], fields: list[str], extra: str | None) -> None:
        # The event says what was redacted and where, never the value.
        note = "secrets and personal data redacted by audit" + (f"; {extra}" if extra else "")
        self.store.events.add(
            memory_id, "updated", self.at,
            after={"redacted": sorted(set(kinds)), "fields": sorted(set(fields))}, note=note, actor="audit",
        )  # fmt: skip

    def _redact_tags(self, pk: int) -> list[str]:
        kinds: list[str] = []
        for tag in self.store.memories.tags_of(pk):
            changes, found = self._redact("tags", (tag,))
            if found:
                kinds.extend(found)
                # The tag is part of the key: replace the row (two tags may now read the same).
                self.store.memories.remove_tag(pk, tag)
                self.store.memories.add_tags(pk, [str(changes["tag"])])
        return kinds

    def _redact_sources(self, pk: int) -> list[str]:
        columns = list(self.columns["sources"])
        kinds: list[str] = []
        for source_pk, *values in self.store.maintenance.text_rows(
            "sources", columns, by="memory_pk", keys=[pk], key="pk"
        ):
            changes, found = self._redact("sources", values)
            if found:
                kinds.extend(found)
                self.store.maintenance.rewrite("sources", "pk", source_pk, changes)
        return kinds

    def _redact_events(self, memory_id: str | None, event_pks: Sequence[int] = ()) -> list[str]:
        """Redact the events of one memory, or the given events."""
        columns = ["memory_id", *self.columns["events"]]
        if memory_id is not None:
            found = self.store.maintenance.text_rows("events", columns, by="memory_id", keys=[memory_id], key="pk")
        else:
            found = self.store.maintenance.text_rows("events", columns, by="pk", keys=event_pks, key="pk")
        kinds: list[str] = []
        for event_pk, owner, *values in found:
            changes, found_here = self._redact("events", values)
            if found_here:
                kinds.extend(found_here)
                self.redacted_ids.add(str(owner))
                self.store.maintenance.rewrite("events", "pk", event_pk, changes)
        return kinds

    def redact_events(self, event_pks: Sequence[int]) -> list[str]:
        """Events whose memory was not redacted as a whole: history only, or a purged memory's tombstone."""
        with self.store.write():
            return self._redact_events(None, event_pks)

    def refresh_evidence(self, pks: Sequence[int]) -> None:
        """Turns whose text was just redacted: their keyword rows and vectors are made again from it."""
        for chunk in chunked(list(pks), CHUNK):
            with self.store.write():
                for turn in self.store.evidence.load_many(chunk).values():
                    self.store.evidence.set_content(turn.pk, turn.content, textmod.content_hash(turn.content))
                    self.store.evidence.put_terms(turn.pk, textmod.index_text(turn.content))
                    model_id, embed, _ = self.model_for(turn.embedding_model)
                    vector = np.asarray(embed([evidencemod.passage_of(self.store, turn)]), dtype=np.float32)[0]
                    self.store.evidence.put_vector(model_id, turn.pk, vector, namespace=turn.namespace, kind=turn.kind)

    def redact_rows(self, table: str, rowids: Sequence[int]) -> list[str]:
        """Rows of a table that belongs to no memory (ingest state, settings), a chunk per transaction."""
        columns = list(self.columns[table])
        kinds: list[str] = []
        for chunk in chunked(rowids, CHUNK):
            with self.store.write():
                for rowid, *values in self.store.maintenance.text_rows(table, columns, by="rowid", keys=chunk):
                    changes, found = self._redact(table, values)
                    if not found:
                        continue
                    kinds.extend(found)
                    self.redacted_rows[table] += 1
                    # Some of these columns are keys (a cursor's path, an item's key): a row that already has
                    # the redacted key gives way to this one, which a re-read of the log would rewrite anyway.
                    self.store.maintenance.rewrite(table, "rowid", rowid, changes, replace=True)
        return kinds

    # -- duplicates -------------------------------------------------------------------------

    def fold(self, survivor: Memory, duplicate: Memory, *, wording: str, why: str) -> None:
        """Fold ``duplicate`` into ``survivor`` within the caller's transaction, losing nothing.

        The survivor takes the larger importance, confidence and decay, the summed access
        count, the later access, the tags, the metadata keys it lacks, and every source; the
        duplicate's own wording is kept as a source. Links to the duplicate move to the
        survivor; the duplicate's row, vector and keyword row go, leaving a tombstone event.
        """
        before = {"importance": survivor.importance, "access_count": survivor.access_count}
        last = max(filter(None, (survivor.last_access_at, duplicate.last_access_at)), default=None)
        metadata = dict(survivor.metadata)
        for key, value in duplicate.metadata.items():
            metadata.setdefault(key, value)
        changes: dict[str, Any] = {
            "importance": max(survivor.importance, duplicate.importance),
            "confidence": max(survivor.confidence, duplicate.confidence),
            "decay_score": max(survivor.decay_score, duplicate.decay_score),
            "access_count": survivor.access_count + duplicate.access_count,
            "last_access_at": last,
            "metadata": metadata,
        }
        self.store.memories.update(survivor, self.at, **changes)
        self.store.memories.add_tags(survivor.pk, duplicate.tags)
        # NULL source content meant "the current wording": pin the duplicate's before moving them.
        self.store.sources.pin_wording(duplicate.pk, wording)
        self.store.sources.move(duplicate.pk, survivor.pk)
        self.store.evidence.copy_links(duplicate.pk, survivor.pk)
        self.store.memories.relink(duplicate.id, survivor.id)
        self.store.memories.delete(duplicate)
        records.reindex(self.store, survivor.pk)
        self.store.events.add(
            survivor.id, "merged", self.at,
            before=before, after={k: changes[k] for k in ("importance", "access_count")},
            note=f"{duplicate.id[:8]} folded in by audit: {why}", actor="audit",
        )  # fmt: skip
        # A tombstone that keeps the text (it lives on in the survivor): another database that
        # imports it folds its own copy the same way instead of purging it.
        tombstone = {"version": duplicate.version + 1, "hard": False, "into": survivor.id,
                     "namespace": duplicate.namespace}  # fmt: skip
        self.store.events.add(
            duplicate.id, "deleted", self.at, after=tombstone,
            note=f"merged into {survivor.id} by audit: {why}", actor="audit",
        )  # fmt: skip

    def merge_group(self, pks: list[int]) -> int:
        """Fold a group of same-words memories into the most important (then oldest); returns rows removed."""
        with self.store.write():
            members = [m for m in self.store.memories.load_many(pks).values() if m.status == "active"]
            if len(members) < 2:
                return 0
            members.sort(key=lambda m: (-m.importance, m.created_at, m.pk))
            first = members[0]
            words = textmod.analyze(first.content)
            removed = 0
            for duplicate in members[1:]:
                if duplicate.agent != first.agent or textmod.analyze(duplicate.content) != words:
                    continue  # changed since the audit read it
                survivor = self.store.memories.load(first.pk, with_sources=False)
                self.fold(survivor, duplicate, wording=duplicate.content, why="exact duplicate (same words)")
                removed += 1
            return removed

    # -- index rows -------------------------------------------------------------------------

    def reindex(self, pks: Sequence[int]) -> int:
        done = 0
        for chunk in chunked(pks, CHUNK):
            with self.store.write():
                for pk in chunk:
                    if self.store.memories.exists(pk):
                        records.reindex(self.store, pk)
                        done += 1
        return done

    def embed_missing(self, pks: Sequence[int]) -> int:
        done = 0
        for chunk in chunked(pks, EMBED_BATCH):
            by_model: dict[str, list[Memory]] = defaultdict(list)
            for memory in self.store.memories.load_many(list(chunk)).values():
                by_model[self.model_for(memory.embedding_model)[0]].append(memory)
            for batch in by_model.values():
                model_id, embed, dim = self.model_for(batch[0].embedding_model)
                matrix = np.asarray(embed([m.passage for m in batch]), dtype=np.float32)
                with self.store.write():
                    for memory, vector in zip(batch, matrix, strict=True):
                        current = self.store.memories.load_many([memory.pk]).get(memory.pk)
                        if current is None or current.content != memory.content:
                            continue  # purged or rewritten since: its writer took care of the vector
                        self.put_vector(current, vector, model_id, dim)
                        done += 1
        return done

    def refresh_vector_filters(self, pks: Sequence[int]) -> int:
        """Re-store vectors whose filter columns drifted from their memory (the same embedding)."""
        done = 0
        for chunk in chunked(pks, CHUNK):
            with self.store.write():
                for memory in self.store.memories.load_many(list(chunk)).values():
                    model_id = memory.embedding_model or ""
                    held = self.store.vectors.get(model_id, [memory.pk]) if model_id else {}
                    if memory.pk in held:
                        self.store.vectors.put(
                            model_id, memory.pk, held[memory.pk], namespace=memory.namespace,
                            status=memory.status, memory_type=memory.type, agent=memory.agent,
                        )  # fmt: skip
                        done += 1
        return done

    def remove_orphans(self, vector_rows: dict[str, list[int]], fts_rows: list[int]) -> int:
        """Remove vectors (model id -> pks) and keyword rows whose memory is gone or belongs elsewhere."""
        removed = 0
        with self.store.write():
            for model_id, pks in vector_rows.items():
                for pk in pks:
                    # Checked again inside the transaction: a writer may have just made it.
                    if self.store.memories.model_of(pk) != model_id:
                        self.store.vectors.delete(model_id, pk)
                        removed += 1
            for pk in fts_rows:
                if not self.store.memories.exists(pk):
                    self.store.keywords.delete(pk)
                    removed += 1
        return removed


def run(
    store: Store, work: Work, repairs: Repairs, *, active_model: str, at: str, columns: Columns, contact: bool = False
) -> tuple[list[Action], dict[str, int]]:
    """Make every safe repair in ``work``; returns what was done and how many items each check had fixed.

    ``columns`` are the columns the audit scanned for secrets, read the same way here.
    """
    repairer = Repairer(store, repairs, active_model, at, columns, contact)
    actions: list[Action] = []
    fixed: dict[str, int] = {}

    kinds: Counter[str] = Counter()
    for pk in work.secret_pks:
        kinds.update(repairer.redact_memory(pk))
    kinds.update(repairer.redact_events(work.secret_event_pks) if work.secret_event_pks else [])
    for table, rowids in sorted(work.secret_rows.items()):
        kinds.update(repairer.redact_rows(table, rowids))
        if table == "evidence":
            repairer.refresh_evidence(rowids)
    if kinds:
        scrub(store)
        rows = repairer.redacted_rows
        fixed["secrets"] = len(repairer.redacted_ids) + sum(rows.values())
        shown = ", ".join(f"{kind} x{n}" for kind, n in sorted(kinds.items()))
        where = f"the rows or history of {len(repairer.redacted_ids)} memories"
        if rows:
            where += " and " + ", ".join(f"{n} rows of {table}" for table, n in sorted(rows.items()))
        actions.append(Action("redacted", sum(kinds.values()), f"values redacted in {where} ({shown})"))

    rebuilt = repairer.reindex(work.missing_fts) if work.missing_fts else 0
    embedded = repairer.embed_missing(work.missing_vectors) if work.missing_vectors else 0
    refreshed = repairer.refresh_vector_filters(work.outdated_vectors) if work.outdated_vectors else 0
    if rebuilt or embedded or refreshed:
        fixed["missing_index"] = len(set(work.missing_fts) | set(work.missing_vectors) | set(work.outdated_vectors))
        actions.append(
            Action(
                "reindexed",
                rebuilt + embedded + refreshed,
                f"{embedded} vectors embedded, {rebuilt} keyword rows rebuilt, {refreshed} vector filters refreshed",
            )
        )
    # After the rebuilds: a vector left in another model's table may have been replaced by now.
    removed = (
        repairer.remove_orphans(work.orphan_vectors, work.orphan_fts) if work.orphan_vectors or work.orphan_fts else 0
    )
    if removed:
        fixed["orphan_index"] = removed
        actions.append(Action("removed_orphans", removed, "index rows without a memory removed"))

    for model_id in work.stale_vector_indexes:
        index = store.vectors.index(model_id)
        if index is not None:
            index.rebuild()
    if work.stale_vector_indexes:
        fixed["vector_index"] = len(work.stale_vector_indexes)
        actions.append(
            Action("rebuilt_vector_index", len(work.stale_vector_indexes), "vector index files rebuilt from the table")
        )

    if work.recount:
        with store.write():
            wrong = len(store.memories.miscounted())
            store.memories.recount()
        fixed["counts"] = wrong
        actions.append(Action("recounted", wrong, "memory counts by namespace and status counted again"))

    merged = sum(repairer.merge_group(group) for group in work.exact_groups)
    if merged:
        fixed["near_duplicates"] = merged
        actions.append(Action("merged_duplicates", merged, "exact duplicates folded into one memory each"))

    decay = repairs.decay()
    actions.append(
        Action("decayed", len(decay.changes), f"decay re-run: {len(decay.changes)} rescored, {decay.archived} archived")
    )
    return actions, fixed
