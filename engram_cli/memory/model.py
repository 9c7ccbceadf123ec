"""The memory record as the engine hands it out, and its JSON form."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from engram_cli.errors import InvalidInput
from engram_cli.serialize import json_meta, to_json
from engram_cli.timeutil import normalize_iso

MEMORY_TYPES = ("working", "episodic", "semantic", "procedural")
STATUSES = ("active", "superseded", "archived")
DEFAULT_TYPE = "semantic"
DEFAULT_IMPORTANCE = 0.5
HIGH_IMPORTANCE = 0.8
# A recall score weighs relevance by (IMPORTANCE_BASE + importance): an unimportant memory keeps
# most of its relevance. Here, not in recall, so that `engram inspect` shows it without loading recall.
IMPORTANCE_BASE = 0.6

# Metadata key for text that explains a memory but is not part of it (the turns around a
# chat message): embedded with it, never shown as its content. It is kept out of the
# keyword index, where the neighbours' words only blurred which turn said what
# (long-chat BM25 R@5 0.397 without, 0.359 with).
CONTEXT_KEY = "context"


MAX_NAME_CHARS = 200


def normalize_name(what: str, value: Any) -> str:
    """A namespace or agent name as stored and searched: NFC, trimmed; empty, over-long or control characters refused.

    Every path that takes a name (add, recall, list, export, decay, compact, audit, ingest, import,
    eval) passes it through here, so "A " and "A" are one namespace wherever it is typed.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text, not {type(value).__name__}", hint=f"pass a {what} name")
    name = unicodedata.normalize("NFC", value).strip()
    if not name:
        raise InvalidInput(
            f"{what} must not be empty", hint=f"pass a {what} name, e.g. -n myproject, or leave the option out"
        )
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput(
            f"{what} {name[:40]!r}… is {len(name)} characters long (limit {MAX_NAME_CHARS})",
            hint=f"use a shorter {what}",
        )
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise InvalidInput(
            f"{what} {name[:40]!r} contains a control character (tab, newline …)",
            hint=f"use a {what} of printable characters",
        )
    return name


def normalize_namespace(value: Any) -> str:
    """:func:`normalize_name` for a namespace."""
    return normalize_name("namespace", value)


def key_words(key: str) -> str:
    """A key as words ("user:tz" -> "user tz"): what a keyed memory's vector and keyword row see of it."""
    return " ".join(w for w in re.split(r"[:_./-]+", key) if w)


def passage_text(content: str, metadata: dict[str, Any] | None, key: str | None = None) -> str:
    """The text a memory's vector is made from: its key's words and its content, then its context when it has one.

    A keyed memory's content is only the value ("Europe/Berlin"); the key says what it is the value of.
    """
    text = f"{key_words(key)}: {content}" if key else content
    context = (metadata or {}).get(CONTEXT_KEY)
    if isinstance(context, str) and context.strip():
        return f"{text}\n{context.strip()}"
    return text


@dataclass
class Filters:
    """What recall, list and other reads may restrict to. Empty means no restriction.

    The store turns them into its own query language (``engram_cli.store.memories.where``).
    """

    namespaces: list[str] | None = None  # None: every namespace
    agent: str | None = None
    types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None
    accessed_since: str | None = None
    accessed_until: str | None = None
    statuses: list[str] = field(default_factory=lambda: ["active"])
    embedding_model: str | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        for mtype in self.types:
            if mtype not in MEMORY_TYPES:
                raise InvalidInput(f"unknown memory type {mtype!r}", hint=f"use one of: {', '.join(MEMORY_TYPES)}")
        for status in self.statuses:
            if status not in STATUSES:
                raise InvalidInput(f"unknown status {status!r}", hint=f"use one of: {', '.join(STATUSES)}")
        self.tags = sorted({t.strip().lower() for t in self.tags if t.strip()})
        self.since = normalize_iso(self.since, param="since") if self.since else None
        self.until = normalize_iso(self.until, param="until") if self.until else None
        self.accessed_since = (
            normalize_iso(self.accessed_since, param="accessed_since") if self.accessed_since else None
        )
        self.accessed_until = (
            normalize_iso(self.accessed_until, param="accessed_until") if self.accessed_until else None
        )

    def restricts_only(self, *names: str) -> bool:
        """Whether every filter but ``names`` restricts nothing (a store that applies those itself, as the
        vector rows and the kept counts do, needs no other check)."""
        free = Filters(statuses=[])
        return replace(self, **{name: getattr(free, name) for name in names}) == free


@dataclass
class Source:
    """Where a piece of a memory's text came from."""

    kind: str
    ref: str | None = None
    message_id: str | None = None
    session: str | None = None
    content: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None


@dataclass
class Memory:
    # The JSON form (README: "The JSON form of a memory"): no row key or content hash, the text first.
    json_keys: ClassVar[tuple[str, ...]] = (
        "id", "content", "key", "summary", "type", "namespace", "agent", "session", "tags", "importance",
        "confidence", "decay_score", "access_count", "created_at", "occurred_at", "learned_at", "updated_at",
        "last_access_at", "status", "superseded_by", "consolidated_into", "embedding_model", "version", "metadata",
        "sources",
    )  # fmt: skip

    pk: int
    id: str
    namespace: str
    agent: str
    session: str | None
    type: str
    content: str
    summary: str | None
    content_hash: str
    embedding_model: str | None
    importance: float = field(metadata=json_meta(digits=6))
    confidence: float = field(metadata=json_meta(digits=6))
    decay_score: float = field(metadata=json_meta(digits=6))
    access_count: int
    last_access_at: str | None
    created_at: str  # when it happened (the log's time, or `--at`): see occurred_at
    updated_at: str
    status: str
    version: int
    superseded_by: str | None
    consolidated_into: str | None
    metadata: dict[str, Any]
    # When engram stored it; empty means "not known apart from created_at" and is filled from it.
    learned_at: str = ""
    tags: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    # A keyed fact's stable identity (`user:tz`, `deploy:geo-tiles`): one active memory per namespace and key.
    key: str | None = None

    @property
    def passage(self) -> str:
        """The text this memory's vector is made from."""
        return passage_text(self.content, self.metadata, self.key)

    def __post_init__(self) -> None:
        if not self.learned_at:
            self.learned_at = self.created_at

    @property
    def short_id(self) -> str:
        return self.id[:8]

    @property
    def occurred_at(self) -> str:
        """When it happened: time words, --since/--until and the order of `list` go by this."""
        return self.created_at

    @property
    def decay_start(self) -> str:
        """What decay counts from: the later of when engram learned it and its last access.

        Not when it happened: a two-year-old log read today is fresh knowledge.
        """
        return max(self.learned_at, self.last_access_at or "")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, as `--json` prints it."""
        data: dict[str, Any] = to_json(self)
        return data


@dataclass
class AddResult:
    """What `remember` did with one text."""

    # "created", "merged" or "duplicate"; for a keyed fact "created", "updated" (in place) or "unchanged"
    action: str
    memory: Memory
    similarity: float | None = None
    # Set when a near neighbour passed the cosine threshold but was a different fact.
    similar_id: str | None = None
    kept_apart_because: list[str] | None = None
    superseded: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # kinds of secrets replaced before storing
    previous: str | None = None  # a keyed fact's value before this update

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def merged(self) -> bool:
        return self.action in ("merged", "duplicate")

    def json_form(self, **options: Any) -> dict[str, Any]:
        # What happened first, then the memory's own keys at the top level (not nested under "memory").
        out: dict[str, Any] = {"action": self.action, "similarity": self.similarity}
        out["superseded"] = list(self.superseded)
        out["redacted"] = list(self.redacted)
        if self.action == "updated":
            out["previous"] = self.previous
        if self.similar_id:
            out["similar_to"] = {"id": self.similar_id, "kept_apart_because": self.kept_apart_because}
        out.update(to_json(self.memory, **options))
        return out


@dataclass
class Event:
    memory_id: str
    kind: str
    at: str
    actor: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    note: str | None


# What a kept turn of a conversation was: something asked, an answer's prose, a failing command with its
# error line, or a change made to files.
TURN_KINDS = ("request", "answer", "error", "change")


@dataclass
class Turn:
    """One substantive turn of an ingested session, kept (redacted) as evidence: never a memory of its own."""

    json_keys: ClassVar[tuple[str, ...]] = (
        "pk", "kind", "content", "namespace", "source", "session", "occurred_at", "learned_at",
        "embedding_model",
    )  # fmt: skip

    pk: int = field(metadata=json_meta(key="evidence_id"))
    namespace: str
    source: str  # the importer that read it
    session: str  # the session's key within its source
    kind: str  # one of TURN_KINDS
    content: str
    occurred_at: str | None
    learned_at: str
    seq: int = field(default=0, metadata=json_meta(omit=True))
    embedding_model: str | None = None
    # The log's id of the message the turn was said in (as the memories' sources name it).
    message_id: str = field(default="", metadata=json_meta(omit=True))

    @property
    def where(self) -> str:
        """The session it was said in, as `source:session`."""
        return f"{self.source}:{self.session}"
