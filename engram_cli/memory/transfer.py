"""export and import: JSONL, one memory per line with its tags, sources, metadata and events.

Import keeps ids, timestamps, counters and history, so export -> import into an empty
database -> export gives the same lines. Vectors are optional in the file: a line that
carries one from a bundled model keeps it, any other line is embedded again.

An export also says what was removed: a tombstone line for each purged (or folded) memory.
Importing into a database that has the memories already merges them (``memory/sync.py``): newer
versions replace older ones, histories are joined and tombstones remove, so two databases that
exchange exports in both directions end up equal.

A line without an ``id`` is a minimal record: ``content`` plus the fields ``engram add`` takes,
completed the way ``add`` completes them. Every text of every line passes through the secret
redactor before it reaches a table, and a line that cannot be used (not JSON, nested too deep,
missing fields) is reported by its number, never the end of the import.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engram_cli import jsonl
from engram_cli.errors import InvalidInput
from engram_cli.lang import redact as redactmod
from engram_cli.lang import text as textmod
from engram_cli.memory import keys as keysmod
from engram_cli.memory import manage, records, remember, repair, sync
from engram_cli.memory.model import (
    MEMORY_TYPES,
    STATUSES,
    Filters,
    Memory,
    Source,
    normalize_name,
    normalize_namespace,
    passage_text,
)
from engram_cli.project import GLOBAL_NAMESPACE, OLD_DEFAULT_NAMESPACE
from engram_cli.serialize import to_json
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now, normalize_iso

EVENT_KINDS = ("created", "merged", "updated", "accessed", "superseded", "decayed", "archived", "restored",
               "deleted", "reembedded", "edited")  # fmt: skip
BATCH = 200
# Deeper than any record engram writes, and shallow enough that walking a line (redaction,
# serialisation) never comes near Python's recursion limit.
MAX_DEPTH = 100
# What a minimal record may carry: the fields `engram add` takes, with "at" for created_at. A keyed fact
# is set with `engram set` (or comes in a full line): a minimal record has no id to keep it one memory.
MINIMAL_FIELDS = (*(f for f in remember.FIELDS if f not in ("supersedes", "key")), "at")


def export(
    store: Store, filters: Filters, *, with_vectors: bool = False, tombstones: bool = True
) -> Iterator[dict[str, Any]]:
    """Every memory that passes ``filters`` (all statuses unless restricted), oldest first; then, with
    ``tombstones``, one line per memory of those namespaces that was purged or folded away."""
    # Oldest first by creation and id, not by row: two databases holding the same memories write the same file.
    pks = store.memories.pks(filters, order="oldest")
    for start in range(0, len(pks), BATCH):
        chunk = pks[start : start + BATCH]
        with store.read():
            found = store.memories.load_many(chunk, with_sources=True)
            for pk in chunk:
                memory = found.get(pk)
                if memory is None:
                    continue
                line = to_json(memory)
                line["events"] = sync.history(store, memory.id)
                if with_vectors and memory.embedding_model:
                    got = store.vectors.get(memory.embedding_model, [pk])
                    if pk in got:
                        raw = np.asarray(got[pk], dtype="<f4").tobytes()
                        line["vector"] = {"model": memory.embedding_model, "dim": len(got[pk]),
                                          "float32_b64": base64.b64encode(raw).decode("ascii")}  # fmt: skip
                yield line
    if tombstones:
        with store.read():
            gone = sync.tombstones(store, filters.namespaces)
        for tombstone in gone:
            yield tombstone.line()


@dataclass
class ImportReport:
    imported: int = 0  # memories new here
    skipped_existing: int = 0  # lines whose memory is here already, as new or newer (or its text is)
    errors: list[dict[str, Any]] = field(default_factory=list)
    atomic: bool = False
    redacted: int = 0  # imported memories in which a secret was redacted
    updated: int = 0  # memories here replaced by a newer version
    purged: int = 0  # memories here removed by a tombstone


@dataclass
class _Line:
    number: int
    data: dict[str, Any]
    vector: np.ndarray | None
    vector_model: str | None
    redacted: bool = False
    minimal: bool = False  # completed from the fields `engram add` takes: new, unless its text is here


def _require(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise InvalidInput(f"field {key!r} is missing or has the wrong type")
    return value


def _decode(raw: str) -> tuple[dict[str, Any], bool]:
    """The JSON object of one line, and whether invalid UTF-8 or lone surrogates were replaced in it."""
    text = textmod.clean(raw)
    replaced = text != raw
    data = jsonl.parse(text, max_depth=MAX_DEPTH)
    if isinstance(data, jsonl.Problem):
        if data.reason == jsonl.TOO_DEEP:
            raise InvalidInput(f"JSON nested too deeply (more than {MAX_DEPTH} levels)")
        if data.reason == jsonl.NOT_OBJECT:
            raise InvalidInput("a line must be a JSON object")
        where = "" if data.column is None else f" at column {data.column}"
        bytes_note = "; the line also held invalid UTF-8, replaced by U+FFFD" if replaced else ""
        raise InvalidInput(f"not JSON ({data.detail}{where}){bytes_note}")
    scrubbed = textmod.clean_data(data)
    return scrubbed, replaced or scrubbed != data


def _redact_record(data: dict[str, Any], contact: bool = False) -> bool:
    """Redact every text a record stores, in place; True if anything was a secret."""
    found = False

    def text(value: Any) -> Any:
        nonlocal found
        if not isinstance(value, str):
            return value
        clean, hits = redactmod.redact(value, contact=contact)
        found = found or bool(hits)
        return clean

    def structure(value: Any) -> Any:
        nonlocal found
        clean, kinds = redactmod.redact_data(value, contact=contact)
        found = found or bool(kinds)
        return clean

    for key in ("content", "summary"):
        data[key] = text(data.get(key))
    if "metadata" in data:
        data["metadata"] = structure(data["metadata"])
    for source in data.get("sources") or []:
        if isinstance(source, dict):
            for key in ("content", "ref"):
                source[key] = text(source.get(key))
            if "metadata" in source:
                source["metadata"] = structure(source["metadata"])
    for event in data.get("events") or []:
        if isinstance(event, dict):
            for key in ("before", "after"):
                if event.get(key) is not None:
                    event[key] = structure(event[key])
            event["note"] = text(event.get("note"))
    return found


def _complete_minimal(data: dict[str, Any], namespace: str, agent: str) -> dict[str, Any]:
    """A record with only the fields `engram add` takes, completed as `add` would (new id, now)."""
    unknown = sorted(set(data) - set(MINIMAL_FIELDS))
    if unknown:
        raise InvalidInput(
            f"unknown field(s) {', '.join(unknown)}: a line without 'id' takes the fields `engram add` takes "
            f"({', '.join(MINIMAL_FIELDS)}); a full `engram export` line has an 'id'"
        )
    fields = dict(data)
    if "at" in fields:
        if fields.get("created_at") is not None:
            raise InvalidInput("give 'at' or 'created_at', not both")
        fields["created_at"] = fields.pop("at")
    source = fields.get("source")
    if source is None:
        fields["source"] = {"kind": "import"}
    elif isinstance(source, str):
        fields["source"] = {"kind": "import", "ref": source}
    elif isinstance(source, dict) and not source.get("kind"):
        fields["source"] = {**source, "kind": "import"}
    # Validation only: the whole record is redacted below, like every other line (and counted there).
    item = remember.prepare(fields, namespace=namespace, agent=agent, keep_secrets=True)
    now = iso_now()
    src = item.source
    return {
        "id": records.new_id(), "content": item.content, "summary": item.summary, "type": item.type,
        "namespace": item.namespace, "agent": item.agent, "session": item.session, "tags": item.tags,
        "importance": item.importance, "confidence": item.confidence, "decay_score": 1.0, "access_count": 0,
        "last_access_at": None, "created_at": item.created_at, "learned_at": now, "updated_at": now,
        "status": "active", "version": 1, "metadata": item.metadata,
        "sources": [{"kind": src.kind, "ref": src.ref, "message_id": src.message_id, "session": src.session,
                     "metadata": src.metadata, "created_at": now}],
        "events": [{"kind": "created", "at": now, "actor": "import",
                    "after": {"importance": item.importance, "type": item.type, "namespace": item.namespace,
                              "agent": item.agent, "source": src.kind}}],
    }  # fmt: skip


def _parse_tombstone(data: dict[str, Any], contact: bool) -> sync.Tombstone:
    memory_id = _require(data, "id", str)
    purged_at = normalize_iso(_require(data, "purged_at", str), what="purged_at")
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidInput("version must be a whole number of at least 1")
    hard = data.get("hard", True)
    if not isinstance(hard, bool):
        raise InvalidInput("hard must be true or false")
    for key in ("into", "namespace", "actor"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise InvalidInput(f"{key} must be text")
    namespace = None if data.get("namespace") is None else normalize_namespace(data["namespace"])
    events = data.get("events", [])
    if not isinstance(events, list):
        raise InvalidInput("events must be a list")
    _check_events(events)
    _redact_record(data, contact)  # an event's note or values may quote a secret, as in any line
    return sync.Tombstone(
        memory_id, purged_at, version, hard, data.get("into"), namespace, data.get("actor"), tuple(events)
    )


def _check_events(events: list[Any]) -> None:
    for event in events:
        if not isinstance(event, dict) or event.get("kind") not in EVENT_KINDS or not isinstance(event.get("at"), str):
            raise InvalidInput("an event needs a known kind and an 'at' time")


def _parse(
    number: int, raw: str, known_models: dict[str, int], namespace: str, agent: str, contact: bool = False
) -> _Line | sync.Tombstone:
    data, _ = _decode(raw)
    if data.get("tombstone") is True:
        return _parse_tombstone(data, contact)
    minimal = "id" not in data
    if minimal:
        if not isinstance(data.get("content"), str):
            raise InvalidInput("field 'content' is missing or is not text")
        data = _complete_minimal(data, namespace, agent)
    for key in ("id", "content", "type", "namespace", "agent", "status", "created_at", "updated_at"):
        _require(data, key, str)
    if not textmod.normalize(data["content"]):
        raise InvalidInput("content is empty")
    data["namespace"] = normalize_namespace(data["namespace"])
    if data["namespace"] == OLD_DEFAULT_NAMESPACE and "learned_at" not in data:
        # Exported before scopes (no learned_at): its `default` is what migration 3 made global here.
        data["namespace"] = GLOBAL_NAMESPACE
    data["agent"] = normalize_name("agent", data["agent"])
    if data["type"] not in MEMORY_TYPES:
        raise InvalidInput(f"unknown type {data['type']!r}")
    if data["status"] not in STATUSES:
        raise InvalidInput(f"unknown status {data['status']!r}")
    if data.get("key") is not None:
        data["key"] = keysmod.normalize_key(data["key"])
    for key in ("importance", "confidence", "decay_score"):
        value = data.get(key, 1.0 if key != "importance" else 0.5)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise InvalidInput(f"{key} must be a number between 0 and 1")
    for key, least in (("access_count", 0), ("version", 1)):
        value = data.get(key, least)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InvalidInput(f"{key} must be a whole number of at least {least}")
    for key in ("created_at", "updated_at"):
        data[key] = normalize_iso(data[key], what=key)
    for key in ("last_access_at", "learned_at"):
        if data.get(key):
            data[key] = normalize_iso(str(data[key]), what=key)
    if not isinstance(data.get("metadata", {}), dict) or not isinstance(data.get("tags", []), list):
        raise InvalidInput("metadata must be an object and tags a list")
    if data.get("summary") is not None and not isinstance(data["summary"], str):
        raise InvalidInput("summary must be text")
    _check_events(data.get("events", []))
    redacted = _redact_record(data, contact)
    vector = model = None
    if isinstance(data.get("vector"), dict) and not redacted:  # a redacted text gets a vector of its own
        spec = data["vector"]
        model = spec.get("model")
        if model in known_models:
            try:
                vector = np.frombuffer(base64.b64decode(spec["float32_b64"], validate=True), dtype="<f4")
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidInput("vector.float32_b64 is not valid base64 float32 data") from exc
            if len(vector) != known_models[model]:
                raise InvalidInput(f"vector has {len(vector)} values; {model} makes {known_models[model]}")
        else:
            model = None
    return _Line(number, data, vector, model, redacted, minimal)


def import_lines(
    store: Store,
    lines: Iterable[str],
    *,
    active_model: str,
    dim: int,
    embed: Callable[[Sequence[str]], np.ndarray],
    known_models: dict[str, int],
    namespace: str = GLOBAL_NAMESPACE,
    agent: str = "user",
    atomic: bool = False,
    contact: bool = False,
    embedder: manage.Embedder | None = None,
) -> ImportReport:
    """Read exported (or minimal) lines. A malformed line is reported by number and skipped;
    ``atomic`` imports all or nothing. ``namespace`` and ``agent`` fill minimal records.

    Tombstones are applied first (a purge removes every copy of the text here too, re-embedding
    what it rewrites with ``embedder``), then the memories, then the links between them.
    """
    report = ImportReport(atomic=atomic)
    parsed: list[_Line] = []
    removed: list[sync.Tombstone] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            line = _parse(number, raw, known_models, namespace, agent, contact)
        except InvalidInput as exc:
            report.errors.append({"line": number, "error": exc.message})
            continue
        if isinstance(line, sync.Tombstone):
            removed.append(line)
        else:
            parsed.append(line)
    if atomic and report.errors:
        first = report.errors[0]
        raise InvalidInput(
            f"line {first['line']}: {first['error']} ({len(report.errors)} bad line(s); nothing imported)",
            hint="fix the lines, or import without --atomic to skip them",
        )
    cache: dict[str, np.ndarray] = {}

    def vector_for(memory: Memory) -> tuple[str, np.ndarray]:
        text = memory.passage
        if text not in cache:
            cache[text] = np.asarray(embed([text]), dtype=np.float32)[0]
        return active_model, cache[text]

    merger = sync.Merger(store, vector_for, embedder)
    store.vectors.ensure(active_model, dim)
    with store.write() if atomic else contextlib.nullcontext():
        for tombstone in removed:
            with store.write():
                report.purged += merger.tombstone(tombstone)
        for start in range(0, len(parsed), BATCH):
            batch = parsed[start : start + BATCH]
            need = sorted({text for ln in batch if (text := _needs_vector(store, ln)) is not None})
            if need:
                cache.update(zip(need, np.asarray(embed(need), dtype=np.float32), strict=True))
            with store.write():
                for ln in batch:
                    outcome = _merge(store, merger, ln)
                    if outcome == sync.IMPORTED:
                        report.imported += 1
                        report.redacted += ln.redacted
                    elif outcome == sync.UPDATED:
                        report.updated += 1
                        report.redacted += ln.redacted
                    else:
                        report.skipped_existing += 1
            cache.clear()
        with store.write():
            merger.link()
    if merger.purged_hard:
        repair.scrub(store)  # the keyword index's old segments and the WAL still hold the purged text
    return report


def _needs_vector(store: Store, ln: _Line) -> str | None:
    """The passage a line's memory must be embedded from, or None (it brings a vector, or its text is here)."""
    if ln.vector is not None:
        return None
    d = ln.data
    text = passage_text(textmod.normalize(d["content"]), d.get("metadata") or {}, d.get("key"))
    with store.read():
        pk = store.memories.pk_of(d["id"])
        if pk is None:
            return None if ln.minimal and _present(store, d) else text
        local = store.memories.load(pk, with_sources=False)
    return None if local.embedding_model and local.passage == text else text


def _present(store: Store, d: dict[str, Any]) -> bool:
    content = textmod.normalize(d["content"])
    return store.memories.known(d["id"], d["namespace"], d["agent"], textmod.content_hash(content))


def _memory_of(d: dict[str, Any]) -> Memory:
    """The memory an export line describes (no row yet: pk 0)."""
    content = textmod.normalize(d["content"])
    sources = [
        Source(
            kind=str(s["kind"]), ref=s.get("ref"), message_id=s.get("message_id"), session=s.get("session"),
            content=s.get("content"), metadata=s.get("metadata") or {},
            created_at=str(s.get("created_at") or d["created_at"]),
        )
        for s in d.get("sources", []) if isinstance(s, dict) and s.get("kind")
    ]  # fmt: skip
    return Memory(
        pk=0, id=d["id"], namespace=d["namespace"], agent=d["agent"], session=d.get("session"), type=d["type"],
        content=content, summary=d.get("summary"), content_hash=textmod.content_hash(content),
        embedding_model=d.get("embedding_model"), importance=float(d.get("importance", 0.5)),
        confidence=float(d.get("confidence", 1.0)), decay_score=float(d.get("decay_score", 1.0)),
        access_count=int(d.get("access_count", 0)), last_access_at=d.get("last_access_at"),
        created_at=d["created_at"], updated_at=d["updated_at"], status=d["status"], version=int(d.get("version", 1)),
        # When this database learned it, as the exporting one recorded it; a line from before
        # learned_at existed is learned now, so decay does not count from its (old) created_at.
        learned_at=d.get("learned_at") or iso_now(),
        superseded_by=d.get("superseded_by"), consolidated_into=d.get("consolidated_into"),
        metadata=d.get("metadata") or {},
        tags=sorted({str(t).strip().lower() for t in d.get("tags", []) if str(t).strip()}),
        sources=sources, key=d.get("key"),
    )  # fmt: skip


def _merge(store: Store, merger: sync.Merger, ln: _Line) -> str:
    """Write one line's memory through the merger; a minimal record whose text is here already is skipped."""
    if ln.minimal and _present(store, ln.data):
        return sync.SKIPPED
    given = None if ln.vector is None or ln.vector_model is None else (ln.vector_model, ln.vector)
    return merger.line(_memory_of(ln.data), list(ln.data.get("events", [])), given)
