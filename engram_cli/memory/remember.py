"""remember: write a memory, folding exact and near duplicates into what is already there."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from engram_cli.errors import ConflictError, InvalidInput
from engram_cli.lang import redact as redactmod
from engram_cli.lang import text as textmod
from engram_cli.memory import keys as keysmod
from engram_cli.memory import records
from engram_cli.memory.model import (
    DEFAULT_IMPORTANCE,
    DEFAULT_TYPE,
    HIGH_IMPORTANCE,
    MEMORY_TYPES,
    AddResult,
    Memory,
    Source,
    normalize_name,
    passage_text,
)
from engram_cli.memory.similarity import merge_decision, profile, supersedes
from engram_cli.store.codec import dumps
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now, normalize_iso

if TYPE_CHECKING:
    from engram_cli.store.vector_index import Prefetched

log = logging.getLogger(__name__)

# Each merge is a reminder: the surviving memory becomes a little more important.
MERGE_IMPORTANCE_BOOST = 0.05
MAX_RETRIES = 5
# Neighbours above the threshold that are looked at before deciding to create.
MERGE_CANDIDATES = 3
MAX_CONTENT_CHARS = 100_000

# The keys a caller may pass for one memory (CLI options, API keywords, JSONL fields).
FIELDS = (
    "content", "type", "namespace", "agent", "tags", "importance", "confidence", "created_at",
    "metadata", "source", "session", "summary", "supersedes", "key",
)  # fmt: skip


@dataclass
class NewMemory:
    """A validated request to remember one text."""

    content: str
    type: str
    namespace: str
    agent: str
    importance: float
    confidence: float
    created_at: str
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    source: Source = field(default_factory=lambda: Source(kind="api"))
    session: str | None = None
    summary: str | None = None
    supersedes: str | None = None  # id or prefix of the memory this one replaces
    key: str | None = None  # a keyed fact: its value is updated in place, never added beside the old one
    # The fields the caller gave (not filled with a default): an update of a keyed fact changes only those.
    given: frozenset[str] = frozenset()
    # Kinds of the secrets replaced by [REDACTED:<kind>] markers before anything was stored.
    redacted: list[str] = field(default_factory=list)
    content_hash: str = ""

    def __post_init__(self) -> None:
        self.content_hash = textmod.content_hash(self.content)


@dataclass(frozen=True)
class MergePolicy:
    """When a write merges or supersedes; the ``Engram`` facade builds it from ``merge.*`` and ``supersede.*``."""

    enabled: bool
    threshold: float
    # Detect corrections ("from now on …", "以后 …") and let them supersede what they correct.
    supersede: bool
    supersede_similarity: float


def check_importance(value: Any) -> float:
    """An importance as given by a caller: a number between 0 and 1."""
    return _number("importance", value, DEFAULT_IMPORTANCE)


def check_content(content: Any) -> str:
    """A memory's text, normalised; refused when it is not text, empty, too long or binary."""
    if not isinstance(content, str):
        raise InvalidInput("content must be text")
    text = textmod.normalize(content)
    if not text:
        raise InvalidInput(
            "the memory is empty", hint='pass some text, e.g. engram add "deploys go through make release"'
        )
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"the memory is {len(text)} characters long (limit {MAX_CONTENT_CHARS})",
            hint="store a summary, or split it into several memories",
        )
    if "\x00" in text:
        raise InvalidInput("the memory contains a NUL character", hint="pass text, not binary data")
    return text


def _number(name: str, value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool):
        raise InvalidInput(f"{name} must be a number between 0 and 1, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be a number between 0 and 1, not {value!r}") from exc
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise InvalidInput(f"{name} must be between 0 and 1, not {value!r}", hint=f"for example --{name} 0.8")
    return number


def _name(what: str, value: Any, default: str) -> str:
    return normalize_name(what, default if value is None else value)


def normalize_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    out: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInput(f"tags must be non-empty strings, not {tag!r}")
        out.setdefault(tag.strip().lower(), None)
    return sorted(out)


def _source(value: Any, session: str | None) -> Source:
    if value is None:
        return Source(kind="api", session=session)
    if isinstance(value, Source):
        return value
    if isinstance(value, str):
        return Source(kind="cli", ref=value, session=session)
    if isinstance(value, Mapping):
        unknown = set(value) - {"kind", "ref", "message_id", "session", "metadata"}
        if unknown:
            raise InvalidInput(f"unknown source field(s): {', '.join(sorted(unknown))}")
        metadata = value.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise InvalidInput("source metadata must be an object")
        return Source(
            kind=str(value.get("kind") or "api"),
            ref=None if value.get("ref") is None else str(value["ref"]),
            message_id=None if value.get("message_id") is None else str(value["message_id"]),
            session=value.get("session") or session,
            metadata=dict(metadata),
        )
    raise InvalidInput(f"source must be a string or an object, not {type(value).__name__}")


def _redact_fields(item: NewMemory, raw_tags: Any, contact: bool) -> None:
    """Replace secrets in every text of ``item`` that reaches a table, recording the kinds found.

    Memories end up in prompts sent to cloud models, so the default is to store no secret at all;
    the markers keep the text readable ("password=[REDACTED:password-assignment]").
    """
    kinds: list[str] = []

    def text(value: str) -> str:
        cleaned, found = redactmod.redact(value, contact=contact)
        kinds.extend(f.kind for f in found)
        return cleaned

    def data(value: Any) -> Any:
        cleaned, found = redactmod.redact_data(value, contact=contact)
        kinds.extend(found)
        return cleaned

    item.content = text(item.content)
    item.summary = None if item.summary is None else text(item.summary)
    item.metadata = data(item.metadata)
    # Tags are lower-cased when normalised, which would hide case-sensitive formats (AKIA…): redact them as given.
    if item.tags:
        item.tags = normalize_tags([text(t) for t in ([raw_tags] if isinstance(raw_tags, str) else raw_tags)])
    item.session = None if item.session is None else text(item.session)
    source = item.source
    source.ref = None if source.ref is None else text(source.ref)
    source.session = None if source.session is None else text(source.session)
    source.metadata = data(source.metadata)
    item.content_hash = textmod.content_hash(item.content)
    item.redacted = kinds


def prepare(
    fields: Mapping[str, Any], *, namespace: str, agent: str, keep_secrets: bool = False, contact: bool = False
) -> NewMemory:
    """Validate one memory's fields (as the JSON names them) and fill in defaults.

    Secrets are redacted from every text unless ``keep_secrets`` is set; ``contact`` adds e-mail
    addresses and phone numbers (the ``redact.contact_details`` setting).
    """
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise InvalidInput(
            f"unknown field(s): {', '.join(sorted(unknown))}",
            hint=f"the fields are: {', '.join(FIELDS)}",
        )
    # Text that cannot be encoded (a lone surrogate from a JSON escape or a non-UTF-8 argument) is
    # repaired, never fatal: each such character becomes U+FFFD.
    fields = textmod.clean_data(dict(fields))
    content = check_content(fields.get("content"))
    key = None if fields.get("key") is None else keysmod.normalize_key(fields["key"])
    mtype = fields.get("type") or DEFAULT_TYPE
    if mtype not in MEMORY_TYPES:
        raise InvalidInput(f"unknown memory type {mtype!r}", hint=f"use one of: {', '.join(MEMORY_TYPES)}")
    created = fields.get("created_at")
    created_at = normalize_iso(str(created), what="created_at") if created else iso_now()
    metadata = fields.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata must be an object of key/value pairs")
    try:
        dumps(metadata)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata is not JSON-serialisable: {exc}") from exc
    session = fields.get("session")
    summary = fields.get("summary")
    # A keyed fact is what the user states as true: high importance unless told otherwise, so it never fades out.
    default_importance = HIGH_IMPORTANCE if key is not None else DEFAULT_IMPORTANCE
    item = NewMemory(
        content=content,
        type=mtype,
        namespace=_name("namespace", fields.get("namespace"), namespace),
        agent=_name("agent", fields.get("agent"), agent),
        importance=_number("importance", fields.get("importance"), default_importance),
        confidence=_number("confidence", fields.get("confidence"), 1.0),
        created_at=created_at,
        tags=normalize_tags(fields.get("tags")),
        metadata=dict(metadata),
        source=_source(fields.get("source"), None if session is None else str(session)),
        session=None if session is None else str(session),
        summary=None if summary is None else textmod.normalize(str(summary)) or None,
        supersedes=None if fields.get("supersedes") is None else str(fields["supersedes"]),
        key=key,
        given=frozenset(name for name, value in fields.items() if value is not None),
    )
    if not keep_secrets:
        _redact_fields(item, fields.get("tags"), contact)
    return item


EmbedFn = Callable[[Sequence[str]], np.ndarray]


@dataclass
class Writer:
    """Writes prepared memories for one embedding model."""

    store: Store
    model_id: str
    dim: int
    embed: EmbedFn
    policy: MergePolicy

    def _existing(self, item: NewMemory) -> int | None:
        """The memory ``item`` would only remind of: its exact duplicate, or for a keyed fact the memory
        already holding the key with this very value."""
        if item.key is None:
            return self.store.memories.duplicate_of(item.namespace, item.agent, item.content_hash)
        pk = self.store.memories.keyed(item.namespace, item.key)
        if pk is not None and self.store.memories.load(pk, with_sources=False).content_hash == item.content_hash:
            return pk
        return None

    def texts_to_embed(self, items: Sequence[NewMemory]) -> list[str]:
        """The distinct passages ``items`` need vectors for: those not already stored as they are."""
        need = [passage_text(i.content, i.metadata, i.key) for i in items if self._existing(i) is None]
        return list(dict.fromkeys(need))

    def write_batches(self, items: Sequence[NewMemory], batch_size: int) -> list[AddResult]:
        """:meth:`write_batch` for each run of ``batch_size`` items, in order. The merge and supersede
        neighbours of all of them are found first, together: one matrix product per namespace and agent
        scores the whole run against the store (much cheaper per query than a batch's few), and
        :class:`~engram_cli.store.vector_index.Prefetched` keeps the answers exact while the batches write."""
        ahead: dict[int, tuple[Prefetched, int]] = {}
        if len(items) > batch_size and (self.policy.enabled or self.policy.supersede):
            texts = self.texts_to_embed(items)
            if texts:
                self.store.vectors.ensure(self.model_id, self.dim)
                self.store.vectors.warm(self.model_id)
                ahead = self._prefetch(items, self.embed(texts), {text: row for row, text in enumerate(texts)})
        results: list[AddResult] = []
        for start in range(0, len(items), batch_size):
            batch = items[start : start + batch_size]
            found = {i - start: ahead[i] for i in range(start, start + len(batch)) if i in ahead}
            results.extend(self.write_batch(batch, found if ahead else None))
        return results

    def write_batch(
        self, items: Sequence[NewMemory], nearby: Mapping[int, tuple[Prefetched, int]] | None = None
    ) -> list[AddResult]:
        """Embed what needs a vector (each distinct text once), then write all in one transaction.

        ``nearby``: the items' neighbours found beforehand (by item index), instead of finding them here.
        """
        texts = self.texts_to_embed(items)
        need = {text: row for row, text in enumerate(texts)}
        matrix = self.embed(texts) if texts else np.zeros((0, self.dim), dtype=np.float32)
        self.store.vectors.ensure(self.model_id, self.dim)
        if self.policy.enabled or self.policy.supersede:
            self.store.vectors.warm(self.model_id)
        for attempt in range(MAX_RETRIES):
            try:
                with self.store.write():
                    if nearby is None:
                        nearby = self._prefetch(items, matrix, need)
                    results = [self._write_one(item, matrix, need, nearby.get(i)) for i, item in enumerate(items)]
                for item, result in zip(items, results, strict=True):
                    result.redacted = list(item.redacted)
                return results
            except ConflictError:
                if attempt == MAX_RETRIES - 1:
                    raise
                log.info("write conflict, retrying (%d)", attempt + 1)
        raise AssertionError("unreachable")

    def _prefetch(
        self, items: Sequence[NewMemory], matrix: np.ndarray, rows: dict[str, int]
    ) -> dict[int, tuple[Prefetched, int]]:
        """The merge and supersede neighbours of the batch's new vectors, one matrix product per namespace
        and agent: item index -> (what was found, the item's query in it).

        Each item still sees what the items before it wrote (``Prefetched.near`` accounts for every row
        changed since), so the outcome is the same as one KNN per item.
        """
        if not (self.policy.enabled or self.policy.supersede):
            return {}
        groups: dict[tuple[str, str], list[int]] = {}
        for i, item in enumerate(items):
            if item.key is None and passage_text(item.content, item.metadata, item.key) in rows:
                groups.setdefault((item.namespace, item.agent), []).append(i)
        out: dict[int, tuple[Prefetched, int]] = {}
        for (namespace, agent), members in groups.items():
            if len(members) < 2:  # one KNN of the index costs the same
                continue
            queries = matrix[[rows[passage_text(items[i].content, items[i].metadata, None)] for i in members]]
            found = self.store.vectors.prefetch(
                self.model_id, queries, MERGE_CANDIDATES,
                namespace=namespace, status="active", agent=agent, spare=min(2 * len(members), 256),
            )  # fmt: skip
            if found is not None:
                out.update({i: (found, j) for j, i in enumerate(members)})
        return out

    def _write_one(
        self,
        item: NewMemory,
        matrix: np.ndarray,
        rows: dict[str, int],
        nearby: tuple[Prefetched, int] | None = None,
    ) -> AddResult:
        now = iso_now()
        memories = self.store.memories
        # Not in the batch: it existed when the batch was embedded and was purged (or changed) since.
        text = passage_text(item.content, item.metadata, item.key)
        if item.key is not None:
            return self._write_keyed(item, lambda: matrix[rows[text]] if text in rows else self.embed([text])[0], now)
        existing = self._existing(item)
        if existing is not None:
            memory = memories.load(existing, with_sources=False)
            self._fold(memory, item, None, similarity=1.0, at=now)
            return AddResult("duplicate", memories.load(existing), similarity=1.0)
        vector = matrix[rows[text]] if text in rows else self.embed([text])[0]
        kept_apart: tuple[str, float, list[str]] | None = None
        replaced: list[tuple[Memory, str]] = []
        if item.supersedes is not None:
            target = memories.load(records.resolve_pk(self.store, item.supersedes), with_sources=False)
            replaced.append((target, "explicit --supersedes"))
        # The nearest active memories of the same namespace and agent, read once for both checks below.
        near: list[tuple[Memory, float]] = []
        if self.policy.enabled or self.policy.supersede:
            if nearby is not None:
                hits = nearby[0].near(nearby[1])
            else:
                hits = self.store.vectors.knn(
                    self.model_id, vector, MERGE_CANDIDATES,
                    namespaces=[item.namespace], statuses=["active"], agent=item.agent, exact=True,
                )  # fmt: skip
            found = memories.load_many([pk for pk, _ in hits])
            # A keyed fact changes only through its key: nothing merges into it or supersedes it by itself.
            near = [(found[pk], similarity) for pk, similarity in hits if pk in found and found[pk].key is None]
        if self.policy.enabled and not replaced and near:
            newcomer = profile(item.content)  # read once for all the neighbours
            for memory, similarity in near:
                merge, blockers = merge_decision(memory.content, newcomer, similarity, self.policy.threshold)
                if not merge:
                    if blockers and kept_apart is None:
                        kept_apart = (memory.id, round(similarity, 6), blockers)
                    continue
                self._fold(memory, item, vector, similarity=similarity, at=now)
                return AddResult("merged", memories.load(memory.pk), similarity=round(similarity, 6))
        # An episode records what happened; a later one does not make it untrue, so only
        # facts, procedures and working notes supersede one another by themselves.
        if self.policy.supersede and not replaced and item.type != "episodic":
            for memory, similarity in near:
                if memory.type == "episodic":
                    continue
                reason = supersedes(memory.content, item.content, similarity, self.policy.supersede_similarity)
                if reason:
                    replaced.append((memory, reason))
                    break
        if replaced:
            # A correction is what the user wants remembered now: it gets high priority.
            item.importance = max(item.importance, HIGH_IMPORTANCE)
        pk, new_id = self._insert(item, vector, now)
        for old, reason in replaced:
            self._supersede(old, new_id, reason, now)
        result = AddResult("created", memories.load(pk))
        result.superseded = [old.id for old, _ in replaced]
        if kept_apart:
            result.similar_id, result.similarity, result.kept_apart_because = kept_apart
        return result

    def _write_keyed(self, item: NewMemory, vector: Callable[[], np.ndarray], now: str) -> AddResult:
        """Set a key's value: the memory holding the key is updated in place (its old value goes into an
        ``edited`` event); one archived by `unset` comes back; otherwise a memory is created.

        A keyed fact never merges into a neighbour and is never superseded by one: it changes through its key.
        """
        assert item.key is not None
        memories = self.store.memories
        pk = memories.keyed(item.namespace, item.key)
        if pk is None:
            pk = memories.dormant_key(item.namespace, item.key)
        if pk is None:
            replaced: list[Memory] = []
            if item.supersedes is not None:
                replaced.append(memories.load(records.resolve_pk(self.store, item.supersedes), with_sources=False))
            memory_id = keysmod.derived_id(item.namespace, item.key)
            if memories.pk_of(memory_id) is not None or self.store.events.tombstoned(memory_id):
                memory_id = records.new_id()  # moved to another namespace, or purged: a tombstone is forever
            new_pk, new_id = self._insert(item, vector(), now, memory_id=memory_id)
            for old in replaced:
                self._supersede(old, new_id, "explicit --supersedes", now)
            result = AddResult("created", memories.load(new_pk))
            result.superseded = [old.id for old in replaced]
            return result
        memory = memories.load(pk, with_sources=False)
        changes: dict[str, Any] = {}
        if memory.content_hash != item.content_hash or memory.content != item.content:
            changes["content"] = item.content
        if memory.status != "active":
            changes["status"] = "active"
        if "type" in item.given and item.type != memory.type:
            changes["type"] = item.type
        if "importance" in item.given and item.importance != memory.importance:
            changes["importance"] = item.importance
        tags = sorted(set(memory.tags) | set(item.tags))
        if tags != memory.tags:
            changes["tags"] = tags
        if not changes:
            return AddResult("unchanged", memories.load(pk))
        previous = memory.content
        if "content" in changes:
            # The sources that stood for "the current wording" keep the old value; the new one gets its own.
            self.store.sources.pin_wording(pk, memory.content, replaced=True)
            self.store.sources.add(pk, item.source, now)
        apply_changes(
            self.store, memory, changes, vector=vector() if "content" in changes else None, model_id=self.model_id,
            at=now, actor=item.source.kind, note=f"set {item.key}",
        )  # fmt: skip
        result = AddResult("updated", memories.load(pk))
        result.previous = previous if "content" in changes else None
        return result

    def _supersede(self, old: Memory, new_id: str, reason: str, at: str) -> None:
        """The old memory stays, inspectable, but leaves normal recall with half its importance."""
        before = {"status": old.status, "importance": old.importance}
        importance = old.importance / 2
        self.store.memories.set_status(old, "superseded", at, importance=importance, superseded_by=new_id)
        self.store.events.add(
            old.id, "superseded", at,
            before=before, after={"status": "superseded", "importance": importance, "superseded_by": new_id},
            note=reason, actor="remember",
        )  # fmt: skip

    def _insert(
        self, item: NewMemory, vector: np.ndarray, now: str, *, memory_id: str | None = None
    ) -> tuple[int, str]:
        """Store a new memory with its tags, source, vector and keyword row; returns its pk and id."""
        memory = Memory(
            pk=0, id=memory_id or records.new_id(), namespace=item.namespace, agent=item.agent, session=item.session,
            type=item.type, content=item.content, summary=item.summary, content_hash=item.content_hash,
            embedding_model=self.model_id, importance=item.importance, confidence=item.confidence, decay_score=1.0,
            access_count=0, last_access_at=None, created_at=item.created_at, updated_at=now, status="active",
            version=1, superseded_by=None, consolidated_into=None, metadata=item.metadata, learned_at=now,
            key=item.key,
        )  # fmt: skip
        pk = self.store.memories.insert(memory)
        self.store.memories.add_tags(pk, item.tags)
        self.store.sources.add(pk, item.source, now)
        self.store.vectors.put(
            self.model_id, pk, vector,
            namespace=item.namespace, status="active", memory_type=item.type, agent=item.agent,
        )  # fmt: skip
        records.reindex(self.store, pk)
        after = {"importance": item.importance, "type": item.type, "namespace": item.namespace,
                 "agent": item.agent, "source": item.source.kind}  # fmt: skip
        if item.key is not None:
            after["key"] = item.key
        self.store.events.add(memory.id, "created", now, after=after, actor=item.source.kind)
        return pk, memory.id

    def _fold(
        self,
        memory: Memory,
        item: NewMemory,
        vector: np.ndarray | None,
        *,
        similarity: float,
        at: str,
    ) -> None:
        """Fold a duplicate or near-duplicate into an existing memory, losing nothing.

        The existing wording stays unless the newcomer is strictly more important and
        the existing memory is not itself of high importance (which always keeps its
        words). Keeping the wording on ties means re-adding a text never flips it. The
        other text is kept as a source (a supplement), so the merge is reversible by hand.
        """
        exact = vector is None
        take_new = not exact and memory.importance < HIGH_IMPORTANCE and item.importance > memory.importance
        importance = min(1.0, max(memory.importance, item.importance) + MERGE_IMPORTANCE_BOOST)
        before = {
            "importance": memory.importance,
            "access_count": memory.access_count,
            "status": memory.status,
        }
        changes: dict[str, Any] = {
            "importance": importance,
            "access_count": memory.access_count + 1,
            "last_access_at": at,
            "decay_score": 1.0,
        }
        if memory.status == "archived":
            changes["status"] = "active"
        if take_new:
            before["content"] = memory.content
            # Sources whose content is NULL meant "the current wording": pin the old one.
            self.store.sources.pin_wording(memory.pk, memory.content)
            changes.update(content=item.content, content_hash=item.content_hash, embedding_model=self.model_id)
            if item.summary:
                changes["summary"] = item.summary
        merged_meta = dict(memory.metadata)
        for key, value in item.metadata.items():
            merged_meta.setdefault(key, value)
        if merged_meta != memory.metadata:
            changes["metadata"] = merged_meta
        self.store.memories.update(memory, at, **changes)
        if "status" in changes and memory.embedding_model:
            self.store.vectors.set_status(memory.embedding_model, memory.pk, "active")
        if take_new:
            assert vector is not None
            if memory.embedding_model and memory.embedding_model != self.model_id:
                self.store.vectors.delete(memory.embedding_model, memory.pk)
            self.store.vectors.put(
                self.model_id, memory.pk, vector,
                namespace=memory.namespace, status="active", memory_type=memory.type, agent=memory.agent,
            )  # fmt: skip
        self.store.memories.add_tags(memory.pk, item.tags)
        source = Source(
            kind=item.source.kind,
            ref=item.source.ref,
            message_id=item.source.message_id,
            session=item.source.session,
            # An exact duplicate adds provenance only; a near duplicate keeps its own words.
            content=None if (exact or take_new) else item.content,
            metadata={**item.metadata, **item.source.metadata},
        )
        if not self.store.sources.has(memory.pk, source):
            self.store.sources.add(memory.pk, source, at)
        records.reindex(self.store, memory.pk)
        after = {k: v for k, v in changes.items() if k not in ("content_hash", "metadata", "last_access_at")}
        self.store.events.add(
            memory.id, "merged", at,
            before=before, after=after,
            note=("exact duplicate" if exact else f"near duplicate, cosine {similarity:.4f}")
            + ("; took the new wording" if take_new else ""),
            actor=item.source.kind,
        )  # fmt: skip


def with_vectors(writer: Writer, vectors: Mapping[str, np.ndarray]) -> Writer:
    """A copy of ``writer`` that takes the vectors of texts embedded beforehand, embedding the others in one call."""
    embed = writer.embed

    def cached(texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        fresh = dict(zip(missing, embed(missing), strict=True)) if missing else {}
        if not texts:
            return np.zeros((0, writer.dim), dtype=np.float32)
        return np.stack([vectors[t] if t in vectors else fresh[t] for t in texts])

    return replace(writer, embed=cached)


def chunked(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def rewrite(
    store: Store,
    memory: Memory,
    content: str,
    vector: np.ndarray,
    *,
    model_id: str,
    dim: int,
    at: str,
    actor: str,
    note: str,
) -> bool:
    """Replace a memory's wording (and vector) in place, keeping its id, history and counters.

    For texts that are rewritten as their source grows (the episode of a session still
    being logged). Returns False, changing nothing, when another memory of the same
    namespace and agent already has exactly this text.
    """
    content_hash = textmod.content_hash(content)
    if content_hash == memory.content_hash:
        return False
    if store.memories.duplicate_of(memory.namespace, memory.agent, content_hash, other_than=memory.pk) is not None:
        return False
    before = {"content": memory.content}
    store.memories.update(memory, at, content=content, content_hash=content_hash, embedding_model=model_id)
    if memory.embedding_model and memory.embedding_model != model_id:
        store.vectors.delete(memory.embedding_model, memory.pk)
    store.vectors.ensure(model_id, dim)
    store.vectors.put(
        model_id, memory.pk, vector,
        namespace=memory.namespace, status=memory.status, memory_type=memory.type, agent=memory.agent,
    )  # fmt: skip
    records.reindex(store, memory.pk)
    store.events.add(memory.id, "updated", at, before=before, after={"content": content}, note=note, actor=actor)
    return True


# What apply_changes may change, and how each is recorded in the ``edited`` event.
EDITABLE = ("content", "importance", "type", "tags", "namespace", "status")


def apply_changes(
    store: Store,
    memory: Memory,
    changes: Mapping[str, Any],
    *,
    vector: np.ndarray | None,
    model_id: str,
    at: str,
    actor: str,
    note: str,
) -> None:
    """Change a memory in place, inside the caller's transaction, with one ``edited`` event of before and after.

    ``changes`` holds new values of EDITABLE fields (``tags``: the whole new list). New text needs its
    ``vector`` (made by ``model_id`` from the new passage); a move to another namespace carries the
    vector over, because vec0 cannot change a row's partition. Callers check beforehand that the
    change makes no exact duplicate and takes no key another active memory holds.
    """
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ValueError(f"not an editable field: {', '.join(sorted(unknown))}")
    before = {name: (list(memory.tags) if name == "tags" else getattr(memory, name)) for name in changes}
    columns: dict[str, Any] = {}
    if "content" in changes:
        columns.update(content=changes["content"], content_hash=textmod.content_hash(changes["content"]))
    for name, column in (("importance", "importance"), ("type", "memory_type"), ("status", "status")):
        if name in changes:
            columns[column] = changes[name]
    old_model = memory.embedding_model
    if vector is not None:
        columns["embedding_model"] = model_id
    elif "namespace" in changes and old_model:
        vector = store.vectors.get(old_model, [memory.pk]).get(memory.pk)
        model_id = old_model
    if "status" in changes and changes["status"] == "active":
        columns["superseded_by"] = None  # back in use: no longer replaced by anything
    if columns:
        store.memories.update(memory, at, **columns)
    else:
        store.memories.bump(memory, at)  # only tags or the namespace changed: still a new version
    if "namespace" in changes:
        store.memories.move(memory, changes["namespace"])
    for name in ("content", "importance", "type", "namespace", "status"):
        if name in changes:
            setattr(memory, name, changes[name])
    if vector is not None:
        if old_model and old_model != model_id:
            store.vectors.delete(old_model, memory.pk)
        store.vectors.put(
            model_id, memory.pk, vector,
            namespace=memory.namespace, status=memory.status, memory_type=memory.type, agent=memory.agent,
        )  # fmt: skip
        memory.embedding_model = model_id
    elif memory.embedding_model:
        if "status" in changes:
            store.vectors.set_status(memory.embedding_model, memory.pk, memory.status)
        if "type" in changes:
            store.vectors.set_type(memory.embedding_model, memory.pk, memory.type)
    if "tags" in changes:
        store.memories.set_tags(memory.pk, changes["tags"])
        memory.tags = list(changes["tags"])
    if "content" in changes or "tags" in changes:
        records.reindex(store, memory.pk)
    after = {name: (list(value) if name == "tags" else value) for name, value in changes.items()}
    store.events.add(memory.id, "edited", at, before=before, after=after, note=note, actor=actor)
