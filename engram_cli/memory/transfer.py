"""export and import: JSONL, one memory per line with its tags, sources, metadata and events.

Import keeps ids, timestamps, counters and history, so export -> import into an empty
database -> export gives the same lines. Vectors are optional in the file: a line that
carries one from a bundled model keeps it, any other line is embedded again.

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
from engram_cli.memory import records, remember
from engram_cli.memory.model import (
    MEMORY_TYPES,
    STATUSES,
    Filters,
    Memory,
    Source,
    normalize_name,
    normalize_namespace,
)
from engram_cli.project import GLOBAL_NAMESPACE, OLD_DEFAULT_NAMESPACE
from engram_cli.serialize import to_json
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now, normalize_iso

EVENT_KINDS = ("created", "merged", "updated", "accessed", "superseded", "decayed", "archived", "restored",
               "deleted", "reembedded")  # fmt: skip
BATCH = 200
# Deeper than any record engram writes, and shallow enough that walking a line (redaction,
# serialisation) never comes near Python's recursion limit.
MAX_DEPTH = 100
# What a minimal record may carry: the fields `engram add` takes, with "at" for created_at.
MINIMAL_FIELDS = (*(f for f in remember.FIELDS if f != "supersedes"), "at")


def export(store: Store, filters: Filters, *, with_vectors: bool = False) -> Iterator[dict[str, Any]]:
    """Every memory that passes ``filters`` (all statuses unless restricted), oldest first."""
    pks = store.memories.pks(filters, order="pk")
    for start in range(0, len(pks), BATCH):
        chunk = pks[start : start + BATCH]
        with store.read():
            found = store.memories.load_many(chunk, with_sources=True)
            for pk in chunk:
                memory = found.get(pk)
                if memory is None:
                    continue
                line = to_json(memory)
                line["events"] = to_json(store.events.of(memory.id))
                for event in line["events"]:
                    del event["memory_id"]
                if with_vectors and memory.embedding_model:
                    got = store.vectors.get(memory.embedding_model, [pk])
                    if pk in got:
                        raw = np.asarray(got[pk], dtype="<f4").tobytes()
                        line["vector"] = {"model": memory.embedding_model, "dim": len(got[pk]),
                                          "float32_b64": base64.b64encode(raw).decode("ascii")}  # fmt: skip
                yield line


@dataclass
class ImportReport:
    imported: int = 0
    skipped_existing: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    atomic: bool = False
    redacted: int = 0  # imported memories in which a secret was redacted


@dataclass
class _Line:
    number: int
    data: dict[str, Any]
    vector: np.ndarray | None
    vector_model: str | None
    redacted: bool = False


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


def _parse(
    number: int, raw: str, known_models: dict[str, int], namespace: str, agent: str, contact: bool = False
) -> _Line:
    data, _ = _decode(raw)
    if "id" not in data:
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
    for event in data.get("events", []):
        if not isinstance(event, dict) or event.get("kind") not in EVENT_KINDS or not isinstance(event.get("at"), str):
            raise InvalidInput("an event needs a known kind and an 'at' time")
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
    return _Line(number, data, vector, model, redacted)


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
) -> ImportReport:
    """Read exported (or minimal) lines. A malformed line is reported by number and skipped;
    ``atomic`` imports all or nothing. ``namespace`` and ``agent`` fill minimal records."""
    report = ImportReport(atomic=atomic)
    parsed: list[_Line] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            parsed.append(_parse(number, raw, known_models, namespace, agent, contact))
        except InvalidInput as exc:
            report.errors.append({"line": number, "error": exc.message})
    if atomic and report.errors:
        first = report.errors[0]
        raise InvalidInput(
            f"line {first['line']}: {first['error']} ({len(report.errors)} bad line(s); nothing imported)",
            hint="fix the lines, or import without --atomic to skip them",
        )
    links: list[tuple[str, str | None, str | None]] = []
    with store.write() if atomic else contextlib.nullcontext():
        for start in range(0, len(parsed), BATCH):
            batch = parsed[start : start + BATCH]
            need = [ln.data["content"] for ln in batch if ln.vector is None]
            matrix = embed(need) if need else np.zeros((0, dim), dtype=np.float32)
            fresh = iter(matrix)
            with store.write():
                for ln in batch:
                    vector, model = (
                        (ln.vector, ln.vector_model) if ln.vector is not None else (next(fresh), active_model)
                    )
                    if _insert(store, ln.data, vector, model or active_model, len(vector)):
                        report.imported += 1
                        report.redacted += ln.redacted
                        links.append((ln.data["id"], ln.data.get("superseded_by"), ln.data.get("consolidated_into")))
                    else:
                        report.skipped_existing += 1
        with store.write():
            for memory_id, superseded_by, consolidated_into in links:
                store.memories.link(memory_id, superseded_by, consolidated_into)
    return report


def _insert(store: Store, d: dict[str, Any], vector: np.ndarray, model: str, dim: int) -> bool:
    content = textmod.normalize(d["content"])
    digest = textmod.content_hash(content)
    if store.memories.known(d["id"], d["namespace"], d["agent"], digest):
        return False
    memory = Memory(
        pk=0, id=d["id"], namespace=d["namespace"], agent=d["agent"], session=d.get("session"), type=d["type"],
        content=content, summary=d.get("summary"), content_hash=digest, embedding_model=model,
        importance=float(d.get("importance", 0.5)), confidence=float(d.get("confidence", 1.0)),
        decay_score=float(d.get("decay_score", 1.0)), access_count=int(d.get("access_count", 0)),
        last_access_at=d.get("last_access_at"), created_at=d["created_at"], updated_at=d["updated_at"],
        # When this database learned it, as the exporting one recorded it; a line from before
        # learned_at existed is learned now, so decay does not count from its (old) created_at.
        learned_at=d.get("learned_at") or iso_now(), status=d["status"], version=int(d.get("version", 1)),
        # Links are set once every line is in: they may name a memory of a later line.
        superseded_by=None, consolidated_into=None, metadata=d.get("metadata") or {},
    )  # fmt: skip
    pk = store.memories.insert(memory)
    store.memories.add_tags(pk, [str(t).strip().lower() for t in d.get("tags", []) if str(t).strip()])
    for s in d.get("sources", []):
        if isinstance(s, dict) and s.get("kind"):
            source = Source(
                kind=str(s["kind"]),
                ref=s.get("ref"),
                message_id=s.get("message_id"),
                session=s.get("session"),
                content=s.get("content"),
                metadata=s.get("metadata") or {},
            )
            store.sources.add(pk, source, str(s.get("created_at") or d["created_at"]))
    store.vectors.ensure(model, dim)
    store.vectors.put(model, pk, vector, namespace=d["namespace"], status=d["status"], memory_type=d["type"],
                      agent=d["agent"])  # fmt: skip
    records.reindex(store, pk)
    for e in d.get("events", []):
        store.events.add(d["id"], e["kind"], e["at"], before=e.get("before"), after=e.get("after"),
                         note=e.get("note"), actor=e.get("actor"))  # fmt: skip
    return True
