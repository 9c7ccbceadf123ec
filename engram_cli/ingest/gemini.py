"""Gemini CLI chat recordings: ``~/.gemini/tmp/<project>/chats/session-*.json`` and ``.jsonl``.

Two layouts exist. Until 2026-04 each session was one JSON document
(``{sessionId, projectHash, startTime, lastUpdated, messages[], summary?}``) rewritten
whole on every change. Since then it is an append-only JSONL log: a metadata line, then
message records, ``{"$set": {...}}`` metadata patches and ``{"$rewindTo": id}`` records
(that message and everything after it are gone). A message is appended again under
the same id whenever it changes (tool calls added, tokens counted): the last copy wins.
Resuming an old ``.json`` session copies it into a ``.jsonl`` beside it, so a ``.json``
with a ``.jsonl`` of the same name is skipped.

The project directory is not in the log itself: ``<project>`` is either the SHA-256
of the project root (older) or a slug whose root is written in ``tmp/<slug>/.project_root``
and in ``~/.gemini/projects.json``; both are consulted.

Sub-agent sessions (``chats/<parentSessionId>/<id>.jsonl``) are not imported: their
prompts are instructions written by the main agent, not by the person, and their
outcome is already in the parent session as the result of the tool call that ran them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_cli import jsonl
from engram_cli.ingest import files
from engram_cli.ingest.base import (
    ASSISTANT,
    TOOL,
    USER,
    Batch,
    Cursor,
    Message,
    Session,
    complete_lines,
    decode,
    excerpt,
    optional_json,
)
from engram_cli.ingest.common import iso_to_utc, render_input, utf8

# Tools whose input is a shell command: the command is what a reader wants to see.
_SHELL_TOOLS = frozenset({"run_shell_command", "run_command", "shell", "bash", "execute_command"})
# Output of a shell tool that says the command failed (non-zero exit, test failures, tracebacks).
_SHELL_FAILED = re.compile(
    r"^Exit Code: *[1-9]|^Error: (?!\(none\))|Traceback \(most recent call last\)|\bFAILED\b|\b\d+ failed\b",
    re.MULTILINE,
)
# `@file` references are expanded into the prompt sent to the model; the person typed only the reference.
_REFERENCED_FILES = re.compile(r"\n*--- Content from referenced files ---.*?(?:--- End of content ---|\Z)", re.DOTALL)
# Keep a tool call's rendered input short: it says what was done, the files say the rest.
_ARG_LIMIT = 200


class GeminiImporter:
    name = "gemini-cli"
    agent = "gemini-cli"
    description = "Gemini CLI chats (~/.gemini/tmp/*/chats/session-*.json and .jsonl)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Sessions under ``$GEMINI_CLI_HOME/.gemini/tmp`` (the variable replaces the home directory)."""
        root = Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
        tmp = root / ".gemini" / "tmp"
        return self.files(tmp) if tmp.is_dir() else []

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path] if path.suffix in (".json", ".jsonl") else []
        if not path.is_dir():
            return []
        found = sorted(
            p
            for p in path.rglob("session-*.json*")
            if p.suffix in (".json", ".jsonl") and _in_chats(p) and files.candidate(p)
        )
        migrated = {p.with_suffix("") for p in found if p.suffix == ".jsonl"}
        return [p for p in found if not (p.suffix == ".json" and p.with_suffix("") in migrated)]

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()  # before reading: a write that lands meanwhile makes the next run read again
        if cursor is not None and cursor.unchanged(st):
            return Batch([], cursor)
        fresh = Cursor(path=str(path), inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns)
        if path.suffix != ".jsonl":
            return _read_json(path, cursor, fresh)
        if cursor is None or cursor.replaced(st):
            return _replay(path, fresh, restart=cursor is not None)
        return _read_jsonl(path, cursor, fresh)


IMPORTER = GeminiImporter()


# --- records ---------------------------------------------------------------------------------


class _WrongType(ValueError):
    """A known field holds a value of the wrong type."""


@dataclass
class _Call:
    id: str
    name: str
    args: dict[str, Any]
    status: str
    output: str | None
    failed: bool
    at: str | None


@dataclass
class _Record:
    """One message record with every field the importer uses, defaults filled in here and only here."""

    id: str
    type: str
    at: str | None
    text: str
    display: str | None  # what the person saw/typed, when it differs from what the model got
    model: str | None
    calls: list[_Call] = field(default_factory=list)


def _record(obj: dict[str, Any]) -> _Record:
    rid = obj["id"]
    kind = obj.get("type", "")
    if not isinstance(kind, str):
        raise _WrongType("type")
    model = obj.get("model")
    raw_calls = obj.get("toolCalls") or []
    if not isinstance(raw_calls, list):
        raise _WrongType("toolCalls")
    display = obj.get("displayContent")
    return _Record(
        id=rid,
        type=kind,
        at=iso_to_utc(obj.get("timestamp"), lenient=False),
        text=_parts_text(obj.get("content")),
        display=None if display is None else _parts_text(display),
        model=model if isinstance(model, str) and model else None,
        calls=[_call(c, i) for i, c in enumerate(raw_calls) if isinstance(c, dict)],
    )


def _call(obj: dict[str, Any], index: int) -> _Call:
    name = obj.get("name")
    cid = obj.get("id")
    args = obj.get("args") or {}
    status = obj.get("status") or ""
    if not isinstance(name, str) or not isinstance(args, dict) or not isinstance(status, str):
        raise _WrongType("toolCalls")
    output, errored = _result_text(obj.get("result"))
    failed = status == "error" or errored
    if not failed and output and name in _SHELL_TOOLS:
        failed = bool(_SHELL_FAILED.search(output))
    return _Call(
        id=cid if isinstance(cid, str) and cid else str(index),
        name=name,
        args=args,
        status=status,
        output=output,
        failed=failed,
        at=iso_to_utc(obj.get("timestamp"), lenient=False),
    )


def _parts_text(value: Any) -> str:
    """The text of a Gemini ``PartListUnion`` (a string, a part, or a list of them); other parts are dropped."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("text")
        return text if isinstance(text, str) and not value.get("thought") else ""
    if isinstance(value, list):
        return "".join(_parts_text(part) for part in value)
    return ""


def _result_text(value: Any) -> tuple[str | None, bool]:
    """(output text, whether the response reports an error) of a tool call's ``result`` parts."""
    if value is None:
        return None, False
    pieces: list[str] = []
    errored = False
    parts = value if isinstance(value, list) else [value]
    for part in parts:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            call = part.get("functionResponse")
            response = call.get("response") if isinstance(call, dict) else None
            if isinstance(response, dict):
                if isinstance(response.get("error"), str):
                    errored = True
                    pieces.append(response["error"])
                elif isinstance(response.get("output"), str):
                    pieces.append(response["output"])
                elif response:
                    pieces.append(json.dumps(response, ensure_ascii=False))
            elif isinstance(part.get("text"), str):
                pieces.append(part["text"])
    return "\n".join(pieces), errored


# --- messages --------------------------------------------------------------------------------


def _messages(rec: _Record) -> list[Message]:
    """The messages one record contributes. info/error/warning records are the CLI talking to the
    person (banners, "Request cancelled.", API and quota errors): a failed tool is recorded on the
    tool call itself, so they are dropped."""
    if rec.type == "user":
        text = _user_text(rec)
        return [Message(USER, text, id=rec.id, at=rec.at)] if text else []
    if rec.type != "gemini":
        return []
    out: list[Message] = []
    if rec.text.strip():
        out.append(Message(ASSISTANT, rec.text.strip(), id=rec.id, at=rec.at))
    for call in rec.calls:
        cid = f"{rec.id}:{call.id}"
        at = call.at or rec.at
        if call.name in _SHELL_TOOLS and isinstance(call.args.get("command"), str):
            command: str | None = call.args["command"]
            rendered = command or ""
        else:
            command = None
            rendered = excerpt(render_input(call.args, limit=_ARG_LIMIT, fold_space=False))
        out.append(Message(TOOL, rendered, id=cid, at=at, tool=call.name, command=command))
        if call.output is not None and (call.output.strip() or call.failed):
            out.append(
                Message(TOOL, excerpt(call.output), id=f"{cid}:result", at=at, tool=call.name, is_error=call.failed)
            )
        elif call.status == "cancelled":
            out.append(Message(TOOL, "cancelled", id=f"{cid}:result", at=at, tool=call.name))
    return out


def _user_text(rec: _Record) -> str:
    # displayContent is what the person typed ("/init", "@file question"); content is what the model
    # got (the expanded command prompt, the file contents). A displayContent without text is a tool
    # response the CLI relayed as a user turn, not something the person wrote.
    if rec.display is not None:
        return rec.display.strip()
    return _REFERENCED_FILES.sub("", rec.text).strip()


def _fingerprint(message: Message) -> str:
    """Short hash of what a message says, to notice a message that changed after it was returned."""
    key = "\x1f".join([message.role, message.text, message.tool or "", message.command or "", str(message.is_error)])
    return hashlib.sha1(utf8(key)).hexdigest()[:12]


# --- files -----------------------------------------------------------------------------------


@dataclass
class _Parsed:
    """What reading some lines (or a whole document) found."""

    meta: dict[str, Any] = field(default_factory=dict)
    records: dict[str, _Record] = field(default_factory=dict)  # insertion order = conversation order
    rewritten: bool = False  # a rewind or a wholesale message replacement happened


def _read_jsonl(path: Path, cursor: Cursor, fresh: Cursor) -> Batch:
    """The lines appended since ``cursor``: only messages not returned before."""
    batch = Batch([], fresh)
    lines = int(cursor.state.get("lines", 0))
    parsed = _Parsed(meta=dict(cursor.state.get("meta", {})))
    offset, lines = _parse_lines(path, cursor.offset, lines, parsed, batch, incremental=True)
    if parsed.rewritten:
        return _replay(path, fresh, restart=True)
    seen: dict[str, str] = dict(cursor.state.get("seen", {}))
    messages = [m for rec in parsed.records.values() for m in _messages(rec)]
    if any(m.id in seen and seen[m.id] != _fingerprint(m) for m in messages):
        return _replay(path, fresh, restart=True)  # a message already returned now says something else
    new = [m for m in messages if m.id not in seen]
    for m in new:
        seen[m.id or ""] = _fingerprint(m)
    model = _last_model(parsed.records.values()) or cursor.state.get("model")
    summary_changed = parsed.meta.get("summary") != cursor.state.get("meta", {}).get("summary")
    fresh.offset = offset
    fresh.state = {"lines": lines, "meta": parsed.meta, "seen": seen, "model": model}
    if new or summary_changed:
        batch.sessions.append(_session(path, parsed.meta, new, model, restart=False))
    return batch


def _replay(path: Path, fresh: Cursor, *, restart: bool) -> Batch:
    """Read a JSONL session from its first line and return all of it."""
    batch = Batch([], fresh)
    parsed = _Parsed()
    offset, lines = _parse_lines(path, 0, 0, parsed, batch, incremental=False)
    messages = [m for rec in parsed.records.values() for m in _messages(rec)]
    model = _last_model(parsed.records.values())
    fresh.offset = offset
    fresh.state = {
        "lines": lines,
        "meta": parsed.meta,
        "seen": {m.id or "": _fingerprint(m) for m in messages},
        "model": model,
    }
    if messages or restart or parsed.meta.get("summary"):
        batch.sessions.append(_session(path, parsed.meta, messages, model, restart=restart))
    return batch


def _parse_lines(
    path: Path, offset: int, lines: int, parsed: _Parsed, batch: Batch, *, incremental: bool
) -> tuple[int, int]:
    """Apply the complete lines after ``offset`` to ``parsed``; return the new (offset, line count).

    Reading incrementally, a rewind or a wholesale replacement of the messages cannot be applied
    to records read earlier, so it only sets ``parsed.rewritten`` and the caller replays the file.
    """
    for lineno, end, raw in complete_lines(path, offset, batch, lines):
        offset, lines = end, lineno
        where = f"{path}:{lineno}"
        if not raw.strip():
            continue
        text = decode(raw, batch, where)
        if text is None:
            continue
        obj = jsonl.parse(text)
        if isinstance(obj, jsonl.Problem):
            if obj.reason == jsonl.TOO_DEEP:
                # Left to the loader, which skips a file nested past the parser whole until it changes.
                raise RecursionError(f"{where}: JSON nested too deeply")
            batch.skip("not a JSON object" if obj.reason == jsonl.NOT_OBJECT else obj.reason, where)
            continue
        if isinstance(obj.get("$rewindTo"), str):
            parsed.rewritten = True
            if not incremental:
                _rewind(parsed.records, obj["$rewindTo"])
        elif isinstance(obj.get("$set"), dict):
            patch = obj["$set"]
            if "messages" in patch:
                parsed.rewritten = True
                if not incremental:
                    parsed.records = _records(patch["messages"], batch, where)
            parsed.meta.update(_meta(patch))
        elif isinstance(obj.get("id"), str):
            try:
                parsed.records[obj["id"]] = _record(obj)  # same id again: the newer copy replaces it in place
            except _WrongType as exc:
                batch.skip("wrong field type", f"{where} ({exc})")
        elif isinstance(obj.get("sessionId"), str):
            parsed.meta.update(_meta(obj))
        else:
            batch.skip("unknown record type", where)
    return offset, lines


def _rewind(records: dict[str, _Record], rid: str) -> None:
    """Drop ``rid`` and every later record (Gemini CLI clears everything when the id is unknown)."""
    ids = list(records)
    cut = ids.index(rid) if rid in records else 0
    for gone in ids[cut:]:
        del records[gone]


def _records(items: Any, batch: Batch, where: str) -> dict[str, _Record]:
    out: dict[str, _Record] = {}
    if not isinstance(items, list):
        batch.skip("wrong field type", f"{where} (messages)")
        return out
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            batch.skip("not a message record", f"{where} (message {index})")
            continue
        try:
            out[item["id"]] = _record(item)
        except _WrongType as exc:
            batch.skip("wrong field type", f"{where} (message {index}: {exc})")
    return out


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The session-level fields worth keeping (strings only; anything else is ignored)."""
    keys = ("sessionId", "projectHash", "startTime", "lastUpdated", "summary", "kind")
    return {k: obj[k] for k in keys if isinstance(obj.get(k), str)}


def _read_json(path: Path, cursor: Cursor | None, fresh: Cursor) -> Batch:
    """A whole-document session (rewritten on every change): return what was not returned before."""
    batch = Batch([], fresh)
    text = decode(files.read_bytes(path), batch, str(path))
    doc: Any = None
    if text is not None:
        try:
            doc = json.loads(text)
        except ValueError:
            batch.skip("invalid JSON", str(path))
    if text is not None and doc is not None and not isinstance(doc, dict):
        batch.skip("not a JSON object", str(path))
    if not isinstance(doc, dict):
        # Possibly caught mid-rewrite: keep the old cursor so the file is read again next time.
        batch.cursor = cursor or Cursor(path=str(path))
        return batch
    meta = _meta(doc)
    records = _records(doc.get("messages", []), batch, str(path))
    messages = [m for rec in records.values() for m in _messages(rec)]
    model = _last_model(records.values())
    seen: dict[str, str] = dict(cursor.state.get("seen", {})) if cursor else {}
    current = {m.id or "": _fingerprint(m) for m in messages}
    # Anything returned before that is gone or different means the session was rewound or rewritten.
    restart = any(current.get(mid) != mark for mid, mark in seen.items())
    new = messages if restart else [m for m in messages if m.id not in seen]
    summary_changed = cursor is not None and meta.get("summary") != cursor.state.get("meta", {}).get("summary")
    fresh.state = {"meta": meta, "seen": current, "model": model}
    if new or restart or summary_changed or (cursor is None and meta.get("summary")):
        batch.sessions.append(_session(path, meta, new, model, restart=restart))
    return batch


def _last_model(records: Any) -> str | None:
    model = None
    for rec in records:
        if rec.model:
            model = rec.model
    return model


def _session(path: Path, meta: Mapping[str, Any], messages: list[Message], model: Any, *, restart: bool) -> Session:
    return Session(
        source=IMPORTER.name,
        key=meta.get("sessionId") or path.stem,
        path=str(path),
        messages=messages,
        project=_project(path, meta.get("projectHash")),
        summary=meta.get("summary"),
        started_at=iso_to_utc(meta.get("startTime"), lenient=False),
        updated_at=iso_to_utc(meta.get("lastUpdated"), lenient=False),
        model=model if isinstance(model, str) else None,
        restart=restart,
    )


# --- where sessions live ---------------------------------------------------------------------


def _in_chats(path: Path) -> bool:
    """A main session file sits directly in a ``chats`` directory (sub-agents sit one level deeper)."""
    return path.parent.name == "chats"


def _project(path: Path, project_hash: Any) -> str | None:
    """The project root of a session file, from the marker or registry Gemini CLI keeps beside it."""
    chats = next((p for p in path.parents if p.name == "chats"), None)
    if chats is None:
        return None
    project_dir = chats.parent
    marker = project_dir / ".project_root"
    try:
        root = files.read_bytes(marker).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        root = ""
    if root:
        return root
    registry = optional_json(project_dir.parent.parent / "projects.json")  # <gemini dir>/tmp/<project> -> <gemini dir>
    if not isinstance(registry, dict):
        return None
    projects = registry.get("projects", {})
    if not isinstance(projects, dict):
        return None
    wanted = {project_dir.name} | ({project_hash} if isinstance(project_hash, str) else set())
    for root, slug in projects.items():
        if slug in wanted or hashlib.sha256(utf8(root)).hexdigest() in wanted:
            return str(root)
    return None
