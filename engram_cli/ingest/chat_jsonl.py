"""Generic chat JSONL: any conversation history, one message per line, given with ``engram ingest chat PATH``.

A line is a JSON object::

    {"session": "trip-planning", "role": "user", "text": "…", "time": "2026-03-02T09:14:00Z",
     "project": "webshop", "title": "…", "id": "m-0042"}

``session`` (text or number) says which conversation the message belongs to; the messages of
one conversation may be spread over lines, files and runs, and keep their order. ``role`` is
``user`` (the person), ``assistant`` (whoever answered) or ``system`` (read, then left out: it
is neither). ``text`` is the message; ``time`` is ISO 8601 (no offset means UTC). Optional:
``project`` (the namespace the conversation's project memories go to; without it, the default
namespace, the global scope unless configured, or ``--namespace``), ``title`` (the conversation's
title) and ``id`` (the message's id, kept as the memory's provenance; default: the line number).
A conversation's project and title are the first ones given. Other keys are ignored.

The file is taken to be append-only, as the JSONL memory records are: the cursor is the byte
offset after the last complete line, and a file that shrank or was replaced is read again from
the start, its conversations with ``restart``. A line that cannot be used is skipped, counted
with its reason and line number; a file none of whose lines is a message is the file's error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_cli import jsonl
from engram_cli.ingest import files
from engram_cli.ingest.base import (
    ASSISTANT,
    USER,
    Batch,
    Cursor,
    Importer,
    Message,
    Session,
    UnusableFile,
    complete_lines,
    decode,
)
from engram_cli.ingest.common import iso_to_utc

ROLES = {"user": USER, "assistant": ASSISTANT, "system": None}
_OPTIONAL_TEXT = ("project", "title")


@dataclass
class _Line:
    session: str
    role: str | None  # None: a system message, read and left out
    text: str
    at: str
    id: str
    project: str | None
    title: str | None


def _id(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value).strip() or None


def _line(obj: Mapping[str, Any], fallback_id: str) -> _Line | str:
    """The message on a line, or the short reason it is skipped."""
    session = _id(obj.get("session"))
    if session is None:
        return "missing session" if obj.get("session") is None else "wrong type"
    role = obj.get("role")
    if role not in ROLES:
        return "missing role" if role is None else "unknown role"
    text = obj.get("text")
    if not isinstance(text, str):
        return "missing text" if text is None else "wrong type"
    if obj.get("time") is None:
        return "missing time"
    at = iso_to_utc(obj.get("time"))
    if at is None:
        return "bad time"
    for name in _OPTIONAL_TEXT:
        if obj.get(name) is not None and not isinstance(obj[name], str):
            return "wrong type"
    if obj.get("id") is not None and _id(obj["id"]) is None:
        return "wrong type"
    return _Line(
        session=session,
        role=ROLES[role],
        text=text.strip(),
        at=at,
        id=_id(obj.get("id")) or fallback_id,
        project=(obj.get("project") or "").strip() or None,
        title=(obj.get("title") or "").strip() or None,
    )


def _refuse_a_json_document(path: Path) -> None:
    """A data export (one JSON list) handed to this importer: say which one reads it.

    Its single line often has no newline after it, so the line reader would wait for it forever.
    """
    with files.open_binary(path) as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        raise UnusableFile(
            "is one JSON list, not chat JSONL (one JSON object per line); a data export is read by "
            "`engram ingest chatgpt PATH` or `engram ingest claude-ai PATH`"
        )


class ChatImporter:
    name = "chat"
    agent = "chat"
    description = "chat JSONL, one message per line (session, role, text, time): engram ingest chat PATH"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return []  # written on purpose and handed over: there is nowhere to look for it

    def files(self, path: Path) -> list[Path]:
        if not path.is_dir():
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
        if not resume:
            _refuse_a_json_document(path)
        sessions: dict[str, Session] = {}
        first_problem: str | None = None
        used = 0
        for lineno, end, raw in complete_lines(path, offset, batch, lines):
            offset, lines = end, lineno
            where = f"{path}:{lineno}"
            text = decode(raw, batch, where)
            if text is None:
                first_problem = first_problem or f"line {lineno} is not UTF-8 text"
                continue
            if not text.strip():
                continue
            obj = jsonl.parse(text)
            if isinstance(obj, jsonl.Problem):
                if obj.reason == jsonl.TOO_DEEP:
                    raise RecursionError(f"{where}: JSON nested too deeply")  # the loader skips the file
                reason = "not a JSON object" if obj.reason == jsonl.NOT_OBJECT else obj.reason
                batch.skip(reason, where)
                first_problem = first_problem or f"line {lineno}: {reason}"
                continue
            line = _line(obj, f"{path.name}:L{lineno}")
            if isinstance(line, str):
                batch.skip(line, where)
                first_problem = first_problem or f"line {lineno}: {line}"
                continue
            used += 1
            session = sessions.get(line.session)
            if session is None:
                session = sessions[line.session] = Session(
                    source=self.name, key=line.session, path=str(path), restart=restart, started_at=line.at
                )
            session.project = session.project or line.project
            session.title = session.title or line.title
            session.updated_at = line.at
            if line.role is not None and line.text:
                session.messages.append(Message(line.role, line.text, id=line.id, at=line.at))
        if first_problem and not used and offset and not resume:
            raise UnusableFile(
                f"is not chat JSONL ({first_problem}): each line must be a JSON object with "
                '"session", "role" (user, assistant or system), "text" and "time" (ISO 8601)'
            )
        batch.sessions = [s for s in sessions.values() if s.messages or s.restart]
        batch.cursor = Cursor(
            path=str(path), inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, offset=offset,
            state={"lines": lines},
        )  # fmt: skip
        return batch


IMPORTER: Importer = ChatImporter()
