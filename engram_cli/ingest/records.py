"""A JSONL file of memory records: one object per line with the fields `engram add` takes.

``content`` is required; ``type``, ``namespace``, ``agent``, ``tags``, ``importance``, ``confidence``,
``created_at``, ``metadata``, ``source``, ``session`` and ``summary`` are optional and checked for their
types here, so that one bad line is skipped (counted, with its line number) instead of failing the
batch it lands in. Other keys are ignored, except ``id``: it becomes the record's key, which lets the
loader recognise a record it already has; a line without one is keyed by a hash of its canonical
JSON. Records carrying no ``agent`` get the importer's (``import``).

There is no default location: pass ``--path FILE`` (a directory means the ``*.jsonl`` files in it).
The file is taken to be append-only: the cursor is the byte offset after the last complete line,
and a file that shrank or was replaced is read again from the start with ``restart=True``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_cli import jsonl
from engram_cli.errors import InvalidInput
from engram_cli.ingest import files
from engram_cli.ingest.base import Batch, Cursor, Importer, Session, complete_lines, decode
from engram_cli.ingest.common import utf8
from engram_cli.memory.model import MEMORY_TYPES
from engram_cli.timeutil import parse_time

TEXT_FIELDS = ("namespace", "agent", "summary")
UNIT_FIELDS = ("importance", "confidence")  # numbers between 0 and 1
# Passed on as they are once checked; ``session`` is passed as text.
KEPT = ("content", "type", "tags", "created_at", "metadata", "source", *TEXT_FIELDS, *UNIT_FIELDS)


def _problem(obj: Mapping[str, Any]) -> str | None:
    """Why a record cannot be remembered (a short, stable reason), or None when it can."""
    content = obj.get("content")
    if not isinstance(content, str) or not content.strip():
        return "missing content"
    kind = obj.get("type")
    if kind is not None and kind not in MEMORY_TYPES:
        return "unknown memory type"
    for name in TEXT_FIELDS:
        if obj.get(name) is not None and not isinstance(obj[name], str):
            return "wrong type"
    for name in UNIT_FIELDS:
        value = obj.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            return "wrong type"
        if not 0 <= value <= 1:
            return "out of range"
    tags = obj.get("tags")
    listed = isinstance(tags, list) and all(isinstance(t, str) and t.strip() for t in tags)
    if tags is not None and not isinstance(tags, str) and not listed:
        return "wrong type"
    if obj.get("metadata") is not None and not isinstance(obj["metadata"], dict):
        return "wrong type"
    if obj.get("source") is not None and not isinstance(obj["source"], str | dict):
        return "wrong type"
    session = obj.get("session")
    if session is not None and (isinstance(session, bool) or not isinstance(session, str | int)):
        return "wrong type"
    created = obj.get("created_at")
    if created is not None:
        if not isinstance(created, str):
            return "wrong type"
        try:
            parse_time(created, what="created_at")
        except InvalidInput:
            return "bad created_at"
    return None


def record_key(obj: Mapping[str, Any]) -> str:
    """The line's ``id`` when it has one, else a hash of its canonical JSON (same record, same key)."""
    ident = obj.get("id")
    if isinstance(ident, str | int) and not isinstance(ident, bool) and str(ident):
        return str(ident)
    canonical = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(utf8(canonical)).hexdigest()[:32]


@dataclass
class RecordsImporter:
    name: str = "jsonl"
    agent: str = "import"
    description: str = "JSONL memory records, one object per line (--path FILE)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return []  # records are exported or written on purpose: there is nowhere to look for them

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path]
        return sorted(p for p in path.glob("*.jsonl") if files.candidate(p))

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()
        if cursor is not None and cursor.unchanged(st):
            return Batch([], cursor)
        restart = cursor is not None and cursor.replaced(st)
        resume = cursor is not None and not restart
        offset = cursor.offset if cursor is not None and resume else 0
        lines = int(cursor.state.get("lines", 0)) if cursor is not None and resume else 0
        batch = Batch([], cursor or Cursor(path=str(path)))
        found: list[dict[str, Any]] = []
        for lineno, end, raw in complete_lines(path, offset, batch, lines):
            offset, lines = end, lineno
            where = f"{path}:{lineno}"
            text = decode(raw, batch, where)
            if text is None or not text.strip():
                continue
            obj = jsonl.parse(text)
            if isinstance(obj, jsonl.Problem):
                if obj.reason == jsonl.TOO_DEEP:
                    # Left to the loader, which skips a file nested past the parser whole until it changes.
                    raise RecursionError(f"{where}: JSON nested too deeply")
                batch.skip(obj.reason, where)
                continue
            if problem := _problem(obj):
                batch.skip(problem, where)
                continue
            record = {k: obj[k] for k in KEPT if obj.get(k) is not None}
            if obj.get("session") is not None:
                record["session"] = str(obj["session"])
            record["key"] = record_key(obj)
            found.append(record)
        if found or restart:
            batch.sessions.append(
                Session(source=self.name, key=path.name, path=str(path), records=found, restart=restart)
            )
        batch.cursor = Cursor(
            path=str(path),
            inode=st.st_ino,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            offset=offset,
            last_id=found[-1]["key"] if found else (cursor.last_id if resume and cursor else None),
            state={"lines": lines},
        )
        return batch


IMPORTER: Importer = RecordsImporter()
