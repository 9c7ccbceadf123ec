"""export and import: JSONL, one memory per line with its tags, sources, metadata and events.

Import keeps ids, timestamps, counters and history, so export -> import into an empty
database -> export gives the same lines. Vectors are optional in the file: a line that
carries one from a bundled model keeps it, any other line is embedded again.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engram_cli import text as textmod
from engram_cli.errors import InvalidInput
from engram_cli.memory import records
from engram_cli.memory.model import MEMORY_TYPES, STATUSES, Source, normalize_name, normalize_namespace
from engram_cli.memory.recall import Filters
from engram_cli.store import vectors
from engram_cli.store.db import Store
from engram_cli.timeutil import normalize_iso

EVENT_KINDS = ("created", "merged", "updated", "accessed", "superseded", "decayed", "archived", "restored",
               "deleted", "reembedded")  # fmt: skip
BATCH = 200


def export(store: Store, filters: Filters, *, with_vectors: bool = False) -> Iterator[dict[str, Any]]:
    """Every memory that passes ``filters`` (all statuses unless restricted), oldest first."""
    where, params = filters.sql("m")
    pks = [int(r[0]) for r in store.rows(f"SELECT m.pk FROM memories m WHERE {where} ORDER BY m.pk", params)]
    for start in range(0, len(pks), BATCH):
        chunk = pks[start : start + BATCH]
        with store.read():
            found = records.load_many(store, chunk, with_sources=True)
            for pk in chunk:
                memory = found.get(pk)
                if memory is None:
                    continue
                line = memory.to_dict()
                line["events"] = [e.to_dict() for e in records.events_of(store, memory.id)]
                for event in line["events"]:
                    del event["memory_id"]
                if with_vectors and memory.embedding_model:
                    table = vectors.table_for(store, memory.embedding_model)
                    got = vectors.get(store, table, [pk]) if table else {}
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "skipped_existing": self.skipped_existing,
            "errors": self.errors,
            "atomic": self.atomic,
        }


@dataclass
class _Line:
    number: int
    data: dict[str, Any]
    vector: np.ndarray | None
    vector_model: str | None


def _require(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise InvalidInput(f"field {key!r} is missing or has the wrong type")
    return value


def _parse(number: int, raw: str, known_models: dict[str, int]) -> _Line:
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"not valid UTF-8 (column {exc.start + 1})") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(data, dict):
        raise InvalidInput("a line must be a JSON object")
    for key in ("id", "content", "type", "namespace", "agent", "status", "created_at", "updated_at"):
        _require(data, key, str)
    if not textmod.normalize(data["content"]):
        raise InvalidInput("content is empty")
    data["namespace"] = normalize_namespace(data["namespace"])
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
    if data.get("last_access_at"):
        data["last_access_at"] = normalize_iso(str(data["last_access_at"]), what="last_access_at")
    if not isinstance(data.get("metadata", {}), dict) or not isinstance(data.get("tags", []), list):
        raise InvalidInput("metadata must be an object and tags a list")
    for event in data.get("events", []):
        if not isinstance(event, dict) or event.get("kind") not in EVENT_KINDS or not isinstance(event.get("at"), str):
            raise InvalidInput("an event needs a known kind and an 'at' time")
    vector = model = None
    if isinstance(data.get("vector"), dict):
        spec = data["vector"]
        model = spec.get("model")
        if model in known_models:
            try:
                vector = np.frombuffer(base64.b64decode(spec["float32_b64"], validate=True), dtype="<f4")
            except (KeyError, ValueError) as exc:
                raise InvalidInput("vector.float32_b64 is not valid base64 float32 data") from exc
            if len(vector) != known_models[model]:
                raise InvalidInput(f"vector has {len(vector)} values; {model} makes {known_models[model]}")
        else:
            model = None
    return _Line(number, data, vector, model)


def import_lines(
    store: Store,
    lines: Iterable[str],
    *,
    active_model: str,
    dim: int,
    embed: Callable[[Sequence[str]], np.ndarray],
    known_models: dict[str, int],
    atomic: bool = False,
) -> ImportReport:
    """Read exported lines. A malformed line is reported by number and skipped; ``atomic`` imports all or nothing."""
    report = ImportReport(atomic=atomic)
    parsed: list[_Line] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            parsed.append(_parse(number, raw, known_models))
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
                        links.append((ln.data["id"], ln.data.get("superseded_by"), ln.data.get("consolidated_into")))
                    else:
                        report.skipped_existing += 1
        with store.write():
            for memory_id, superseded_by, consolidated_into in links:
                store.execute(
                    "UPDATE memories SET superseded_by = (SELECT id FROM memories WHERE id = ?), "
                    "consolidated_into = (SELECT id FROM memories WHERE id = ?) WHERE id = ?",
                    (superseded_by, consolidated_into, memory_id),
                )
    return report


def _insert(store: Store, d: dict[str, Any], vector: np.ndarray, model: str, dim: int) -> bool:
    content = textmod.normalize(d["content"])
    digest = textmod.content_hash(content)
    if store.one(
        "SELECT 1 FROM memories WHERE id = ? OR (namespace = ? AND agent_id = ? AND content_hash = ?)",
        (d["id"], d["namespace"], d["agent"], digest),
    ):
        return False
    store.execute(
        "INSERT INTO memories (id, namespace, agent_id, session_id, memory_type, content, summary, content_hash, "
        "embedding_model, importance, confidence, decay_score, access_count, last_access_at, created_at, updated_at, "
        "status, version, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            d["id"], d["namespace"], d["agent"], d.get("session"), d["type"], content, d.get("summary"), digest,
            model, float(d.get("importance", 0.5)), float(d.get("confidence", 1.0)), float(d.get("decay_score", 1.0)),
            int(d.get("access_count", 0)), d.get("last_access_at"), d["created_at"], d["updated_at"], d["status"],
            int(d.get("version", 1)), records.dumps(d.get("metadata") or {}),
        ),
    )  # fmt: skip
    pk = int(store.conn.last_insert_rowid())
    records.add_tags(store, pk, [str(t).strip().lower() for t in d.get("tags", []) if str(t).strip()])
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
            records.add_source(store, pk, source, str(s.get("created_at") or d["created_at"]))  # fmt: skip
    table = vectors.ensure_table(store, model, dim)
    vectors.put(store, table, pk, vector, namespace=d["namespace"], status=d["status"], memory_type=d["type"],
                agent=d["agent"])  # fmt: skip
    records.reindex(store, pk)
    for e in d.get("events", []):
        records.add_event(store, d["id"], e["kind"], e["at"], before=e.get("before"), after=e.get("after"),
                          note=e.get("note"), actor=e.get("actor"))  # fmt: skip
    return True
