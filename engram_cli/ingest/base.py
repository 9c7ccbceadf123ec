"""What every importer hands the loader: sessions of messages, a cursor, and what it skipped.

An importer reads one tool's files and never touches the database (the loader writes).
It turns each file into :class:`Session` objects holding only the messages that matter
(noise such as system reminders, environment blocks, thinking and base64 images is
dropped by the importer, which knows its format), and returns the :class:`Cursor` to
resume from next time. Bad input never raises out of ``read``: a line or record that
cannot be used is counted in ``Batch.skipped`` under a short reason, and its location
goes to ``Batch.notes`` for ``--verbose``.

Files are opened only through :mod:`engram_cli.ingest.files` (regular files, never blocking),
and text is cut only through :func:`clip` and the helpers built on it, which redact before
they cut: a secret cut in half no longer looks like one, and its first half would be kept.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from engram_cli import jsonl
from engram_cli.ingest import files, limits
from engram_cli.lang import redact

# Roles a message can have after import.
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"  # a tool call (``command``/``text`` = its input) or its result (``is_error`` when it failed)
SHELL = "shell"  # a command the person typed in a shell

# Tool output is kept only up to this many characters: enough to see an error, not a log dump.
TOOL_EXCERPT = 600
# A line longer than this (bytes) is not a message anyone wrote: skipped as "huge line".
MAX_LINE_BYTES = 8 * 1024 * 1024
# A session file read whole goes into memory; past this it is not a conversation any more.
MAX_JSON_BYTES = 256 * 1024 * 1024
# Before a cut, text is redacted up to the end of the line the cut falls in, but at most this far
# beyond the cut, so that a secret straddling it is recognised whole. Secrets do not span lines
# (a private key block is recognised even when cut short), and the bound covers every fixed-format
# secret and all but unusually large JWTs: redacting costs about a millisecond per KB, and most
# tool outputs are cut.
REDACT_MARGIN = 2048


class UnusableFile(Exception):
    """A file given to an importer that is not of its format at all (not JSON, not a data export …).

    Raised by ``read`` only for files the person hands over on purpose (data exports, chat JSONL):
    the loader reports it as that file's error, in the importer's words (``str(exc)`` completes
    "<path>: …" and says what to do), and reads the file again on the next run. Bad parts of a
    usable file are counted in ``Batch.skipped`` as everywhere else.
    """


@dataclass
class Message:
    role: str
    text: str
    id: str | None = None  # message id, uuid, or "L<line number>" where the format has none
    at: str | None = None  # ISO 8601 UTC, when the format records it
    tool: str | None = None  # tool name, for role "tool"
    command: str | None = None  # the shell command run (Bash tool input, local_shell_call, shell history)
    is_error: bool = False  # a failed tool call or command


@dataclass
class Session:
    source: str  # importer name
    key: str  # stable id of the session within its source (session id, task id, file name …)
    path: str  # the file (or database) it came from
    messages: list[Message] = field(default_factory=list)
    project: str | None = None  # working directory recorded in the log
    title: str | None = None
    summary: str | None = None  # the tool's own summary of the session, when it writes one
    started_at: str | None = None
    updated_at: str | None = None
    model: str | None = None
    # True when ``messages`` is the whole session again (a rewritten file, a rewind, a
    # replaced file) rather than what came after the cursor: the loader starts the
    # session's digest over. Memories already stored are recognised by their provenance.
    restart: bool = False
    # Ready-made memories for sources that are memories already (Markdown notes, JSONL memory
    # records): dicts with the keys `engram add` takes (content, type, importance, tags,
    # created_at, metadata …) plus "key", stable within the session, so a re-read is recognised.
    # They bypass extraction; ``messages`` stays empty for such sources.
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Cursor:
    """Where reading one file stopped. ``state`` holds whatever else the importer needs to resume."""

    path: str
    inode: int | None = None
    size: int = 0
    mtime_ns: int = 0
    offset: int = 0  # byte offset just after the last complete line (append-only files)
    last_id: str | None = None
    last_at: str | None = None
    state: dict[str, Any] = field(default_factory=dict)

    def unchanged(self, stat: os.stat_result) -> bool:
        """The file is exactly as it was when this cursor was saved."""
        return self.inode == stat.st_ino and self.size == stat.st_size and self.mtime_ns == stat.st_mtime_ns

    def replaced(self, stat: os.stat_result) -> bool:
        """Another file took this path, or the file shrank: start again from the beginning."""
        return (self.inode is not None and self.inode != stat.st_ino) or stat.st_size < self.offset

    def unfinish(self) -> None:
        """Mark a read that stopped before the end of the file: the next run goes on from ``offset``.

        No file has a negative size, so :meth:`unchanged` is False next time even if the file
        stays exactly as it is, while :meth:`replaced` still compares inode and offset.
        """
        self.size = -1


@dataclass
class Batch:
    """What one ``read`` found: sessions (possibly only their new messages), the next cursor, skips."""

    sessions: list[Session]
    cursor: Cursor
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    # The deadline ended the read at a line boundary, as if the file ended there (see limits).
    stopped: bool = False

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        if len(self.notes) < 200:
            self.notes.append(f"{where}: {reason}")


class Importer(Protocol):
    name: str  # command-line name: `engram ingest claude-code`
    agent: str  # agent recorded on the memories it produces
    description: str

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Files this source keeps in its default locations (honouring the tool's env vars); [] when absent."""
        ...

    def files(self, path: Path) -> list[Path]:
        """The files to read under a path given with --path (a file, or a directory to search)."""
        ...

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        """Parse ``path`` from ``cursor`` on (None: from the start). Never raises on bad content."""
        ...


def complete_lines(path: Path, offset: int, batch: Batch, first_line: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """(line number, end offset, raw line) for each complete line after ``offset``.

    ``first_line`` is the number of lines before ``offset`` (keep it in the cursor's
    state), so that line numbers stay those of the file. A last line without its newline
    is being written right now: it is left for the next run (the cursor stops before
    it). Huge lines are skipped and counted. Once the run's deadline has passed, the lines
    end where they are, as if the file ended there, and ``batch.stopped`` says so.
    """
    deadline = limits.current()
    with files.open_binary(path) as fh:
        fh.seek(offset)
        lineno = first_line
        position = offset
        while True:
            if deadline is not None and deadline.passed():
                batch.stopped = True
                return
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                # Drain the rest of the huge line, then go on.
                while raw and not raw.endswith(b"\n"):
                    position += len(raw)
                    raw = fh.readline(MAX_LINE_BYTES + 1)
                lineno += 1
                position += len(raw)
                batch.skip("huge line", f"{path}:{lineno}")
                continue
            if not raw.endswith(b"\n"):
                return
            lineno += 1
            position += len(raw)
            yield lineno, position, raw


def decode(raw: bytes, batch: Batch, where: str) -> str | None:
    """UTF-8 text of a line, or None (counted) when it is not text."""
    text = jsonl.decode(raw)
    if isinstance(text, jsonl.Problem):
        batch.skip(text.reason, where)
        return None
    return text


def json_line(raw: bytes, batch: Batch, where: str) -> dict[str, Any] | None:
    """The JSON object on one line of a JSONL log; None for a blank line, and (counted) for any other non-object."""
    text = decode(raw, batch, where)
    if text is None or not text.strip():
        return None
    return _json_object(text, batch, where, not_object="not a JSON object")


def json_document(path: Path, size: int, batch: Batch, *, not_ours: str) -> dict[str, Any] | None:
    """The JSON object of a session file that is read whole; None when it cannot be used (counted).

    ``size`` is the file's size as stat saw it: a file larger than MAX_JSON_BYTES is not read.
    JSON that is not an object is counted under ``not_ours``, the importer's words for a file
    that is not one of its sessions.
    """
    where = str(path)
    if size > MAX_JSON_BYTES:
        batch.skip("file too large", where)
        return None
    text = decode(files.read_bytes(path), batch, where)
    if text is None:
        return None
    return _json_object(text, batch, where, not_object=not_ours)


def _json_object(text: str, batch: Batch, where: str, *, not_object: str) -> dict[str, Any] | None:
    obj = jsonl.parse(text)
    if isinstance(obj, jsonl.Problem):
        # Nested too deep for the parser is bad input too, counted like any JSON that does not parse.
        batch.skip(not_object if obj.reason == jsonl.NOT_OBJECT else jsonl.NOT_JSON, where)
        return None
    return obj


def optional_json(path: Path) -> Any:
    """The JSON of a file that only adds to a session (an index, a manifest); None when absent or unreadable."""
    # RecursionError (JSON nested thousands deep) is let through, as the importers that read such
    # files have always done.
    try:
        return json.loads(files.read_bytes(path).decode("utf-8"))
    except (OSError, ValueError):
        return None


def drop_tagged(text: str, *tags: str) -> str:
    """``text`` without the ``<tag>…</tag>`` blocks that tools inject (reminders, environment dumps)."""
    for tag in tags:
        text = re.sub(rf"<{tag}\b[^>]*>.*?</{tag}>", "", text, flags=re.DOTALL)
    return text.strip()


def clip(text: str, limit: int, *, tail: str = " …", tidy: bool = True) -> str:
    """``text`` redacted, then cut to ``limit`` characters with ``tail`` after a cut.

    Redacting first matters: a JWT or key cut in half no longer matches its pattern, and the
    half that was kept would be stored as it is. ``tidy`` drops the white space a cut leaves.
    """
    if len(text) <= limit:
        return redact.redact(text)[0]
    line_end = text.find("\n", limit, limit + REDACT_MARGIN)
    stop = line_end if line_end >= 0 else limit + REDACT_MARGIN
    window = redact.redact(text[:stop])[0]
    if len(window) <= limit and len(text) <= stop:
        return window  # what was too long was a secret, now a short marker
    # A marker the cut would split is kept whole: "[REDACTED:github-token] …", not "[REDACTED:git …".
    markers = redact.MARKER_RE.finditer(window, max(0, limit - 40))
    split = next((m for m in markers if m.start() < limit < m.end()), None)
    head = window[: split.end() if split else limit]
    return (head.rstrip() if tidy else head) + tail


def excerpt(text: str, limit: int = TOOL_EXCERPT) -> str:
    """Tool output cut to a bounded excerpt (redacted): its head, which is where errors usually say what went wrong."""
    return clip(text.strip(), limit)
