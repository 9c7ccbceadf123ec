"""Aider chat and input histories, kept per repository: ``.aider.chat.history.md``, ``.aider.input.history``.

Aider writes both files at the root of the git repository it runs in (the current directory
outside git), or wherever ``AIDER_CHAT_HISTORY_FILE`` / ``AIDER_INPUT_HISTORY_FILE`` say. Since
they live in each repository rather than in one place, ``locate`` can only look at the
repository of the current directory and at the home directory; ``engram ingest aider --path
~/src`` finds the histories of every repository under a directory.

The chat history is Markdown, appended to as the chat goes:

- ``# aider chat started at 2024-08-06 09:05:50`` opens a session. The time is the local time
  of the machine that ran aider, without a zone; it is read as local time of the machine
  running engram (usually the same one) and stored in UTC.
- ``#### text`` lines are what the person typed (one line each, trailing two spaces).
- ``> text`` lines are aider's own output: the start-up banner, token counts, "Applied edit
  to …", "Commit abc123 …", and the output of ``/run`` and ``/test``. Aider prefixes only the
  first line of a multi-line output with ``> `` and ends the output's last line with two
  spaces, so such an output runs up to the next line ending in two spaces.
- everything else is the model's reply.

There are no per-message times or ids: a message's id is ``L<line>`` of its first line.

The input history (``# <timestamp>`` then ``+line`` lines per prompt) holds only what was
typed, which the chat history already has; it is read only when no chat history sits
beside it, as one session per calendar day. Aider's optional LLM log
(``--llm-history-file``) is a raw prompt dump and is not read.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from engram_cli.ingest import files
from engram_cli.ingest.base import (
    ASSISTANT,
    TOOL,
    USER,
    Batch,
    Cursor,
    Message,
    Session,
    clip,
    complete_lines,
    decode,
    excerpt,
)
from engram_cli.ingest.common import utf8
from engram_cli.lang import redact
from engram_cli.timeutil import to_iso

CHAT_FILE = ".aider.chat.history.md"
INPUT_FILE = ".aider.input.history"

_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
_INPUT_HEADER = re.compile(r"^# (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\s*$")
_MODEL = re.compile(r"^(?:Main model|Model|Models): (\S+)")
# Aider's own status lines that say nothing about the work: banner, costs, hints, chat bookkeeping.
_NOISE = re.compile(
    r"^(?:Aider v\d|(?:Main|Weak|Editor) model:|Models?:|Git repo:|Repo-map:|Use /help|Tokens:|Cost:"
    r"|You can use /undo|\^C|Added .* to the chat|Removed .* from the chat|Dropping all files|"
    r"Restored previous conversation|Newer aider version|Update with:|Run pip install|VSCode terminal detected|"
    r"Initial repo scan|Scanning repo|https://aider\.chat/|For more info|Analytics|Cur working dir:|"
    r"Git working dir:|Aider respects your privacy)"
)
# The command line aider was started with opens each session's banner.
_COMMAND_LINE = re.compile(r"^\S*\baider(?:\.exe)?(?:\s|$)")
# Tool output that reports a failure: failing tests, tracebacks, compiler errors, edits that did not apply.
_FAILED = re.compile(
    r"\bFAILED\b|\b\d+ (?:failed|errors?)\b|Traceback \(most recent call last\)|^E\s{2,}\S|"
    r"^(?:\w+Error|Error|error|fatal|FAIL):|SEARCH/REPLACE blocks? failed to match|"
    r"did not conform to the edit format|\.{3}Failed\b|^\S+:\d+(?::\d+)?: (?:error\b|[A-Z]\d{3} )|"
    r"\bexit(?:ed)?(?: with)? (?:code|status):? *[1-9]",
    re.MULTILINE,
)
# Commands that only steer the chat window; as "what the person said" they carry nothing.
_CONTROL_COMMANDS = frozenset(
    {
        "/ex", "/exit", "/quit", "/q", "/clear", "/reset", "/tokens", "/ls", "/help", "/settings", "/map",
        "/map-refresh", "/copy", "/paste", "/add-clipboard-image", "/diff", "/models", "/voice",
    }
)  # fmt: skip
# Commands that re-send their argument as the next prompt (aider echoes it as a second `####` line).
_MODE_COMMANDS = ("/ask", "/code", "/architect", "/context")
# Directories never worth descending into when searching a tree for histories.
_PRUNE = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".cache"})


class AiderImporter:
    name = "aider"
    agent = "aider"
    description = "Aider chat histories (.aider.chat.history.md at each repository's root; use --path)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """The histories of the current directory's repository and of the home directory.

        Aider keeps them per repository, so this finds only the one you are in: pass
        ``--path`` with a directory to collect every repository under it.
        """
        cwd = Path(env["PWD"]) if env.get("PWD") else None
        base = cwd or home
        roots = ([_git_root(cwd) or cwd] if cwd else []) + [home]
        found: list[Path] = []
        chat_env, input_env = env.get("AIDER_CHAT_HISTORY_FILE"), env.get("AIDER_INPUT_HISTORY_FILE")
        if chat_env and files.candidate(base / chat_env):
            found.append(base / chat_env)
        if input_env and files.candidate(base / input_env) and not (chat_env and files.candidate(base / chat_env)):
            found.append(base / input_env)
        for root in roots:
            found.extend(_histories_in(root))
        return files.unique(found)

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path] if _kind(path) else []
        if not path.is_dir():
            return []
        found: list[Path] = []
        for top, dirs, _names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _PRUNE)
            found.extend(_histories_in(Path(top)))
        return found

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()  # before reading: a write that lands meanwhile makes the next run read again
        if cursor is not None and cursor.unchanged(st):
            return Batch([], cursor)
        restart = cursor is not None and cursor.replaced(st)
        start = None if cursor is None or restart else cursor
        batch = Batch([], Cursor(path=str(path), inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns))
        if _kind(path) == "input":
            _InputReader(path, start, batch).run()
        else:
            _ChatReader(path, start, batch).run()
        if restart:
            for session in batch.sessions:
                session.restart = True
        return batch


IMPORTER = AiderImporter()


def _histories_in(directory: Path) -> list[Path]:
    """The chat history in ``directory``, or its input history when there is no chat history."""
    chat, typed = directory / CHAT_FILE, directory / INPUT_FILE
    if files.candidate(chat):
        return [chat]
    return [typed] if files.candidate(typed) else []


def _git_root(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _kind(path: Path) -> str | None:
    """ "chat" or "input" for an Aider history (by name, else by its first line), None otherwise."""
    if path.name == CHAT_FILE:
        return "chat"
    if path.name == INPUT_FILE:
        return "input"
    try:
        with files.open_binary(path) as fh:
            head = fh.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return None
    first = next((line for line in head.splitlines() if line.strip()), "")
    if _HEADER.match(first):
        return "chat"
    if _INPUT_HEADER.match(first):
        return "input"
    return None


def _local_to_utc(text: str) -> str | None:
    """A naive local time as Aider writes it, read as local time of this machine, in UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return to_iso(moment.astimezone())


def _project(path: Path) -> str | None:
    # Under its default name the file sits at the repository root; a custom path says nothing.
    return str(path.parent) if path.name in (CHAT_FILE, INPUT_FILE) else None


def _content(line: str) -> str:
    """A line without its end-of-line and Markdown hard-break spaces."""
    return line.rstrip("\r\n").rstrip()


def _terminated(line: str) -> bool:
    """Aider ends each of its outputs with two spaces (a Markdown hard break) after the output's
    right-stripped last line: so exactly two, after something that is not a space."""
    body = line.rstrip("\r\n")
    return body.endswith("  ") and len(body) > 2 and not body[-3].isspace()


# --- chat history ----------------------------------------------------------------------------


@dataclass
class _Pending:
    kind: str  # "user", "assistant" or "tool"
    line: int
    lines: list[str] = field(default_factory=list)
    block: bool = False  # a multi-line tool output whose last line has not been seen yet


class _ChatReader:
    """One pass over the lines after the cursor. ``self.state`` is what the next pass resumes from."""

    def __init__(self, path: Path, cursor: Cursor | None, batch: Batch) -> None:
        self.path = path
        self.batch = batch
        self.offset = cursor.offset if cursor else 0
        self.state: dict[str, Any] = dict(cursor.state) if cursor else {}
        self.state.setdefault("lines", 0)
        self.pending: _Pending | None = None
        self.sessions: dict[str, Session] = {}
        # Where to resume when the read ends inside a multi-line output: just before it.
        self.hold: tuple[int, dict[str, Any]] | None = None

    def run(self) -> None:
        position = self.offset
        for lineno, end, raw in complete_lines(self.path, self.offset, self.batch, int(self.state["lines"])):
            text = decode(raw, self.batch, f"{self.path}:{lineno}")
            self.state["lines"] = lineno
            if text is not None:
                self._line(lineno, text, position)
            position = end
        if self.pending is not None and self.pending.block and self.hold is not None:
            # The output's last line is still being written: read the whole output next time.
            position, self.state = self.hold
        else:
            self._flush()
        self.batch.cursor.offset = position
        self.batch.cursor.state = self.state
        self.batch.sessions.extend(s for s in self.sessions.values() if s.messages)

    def _line(self, lineno: int, line: str, position: int) -> None:
        header = _HEADER.match(_content(line))
        pending = self.pending
        if pending is not None and pending.block:
            if header or line.startswith("#### "):
                self._flush()  # an output cut short: keep what there is
            else:
                pending.lines.append(line.rstrip("\r\n"))
                if _terminated(line):
                    self._flush()
                return
        if header:
            self._flush()
            self._start_session(header.group(1))
        elif line.startswith("#### "):
            self._add("user", lineno, _content(line[5:]))
        elif line.startswith(">") and (line[1:2] in (" ", "\r", "\n", "")):
            body = line[2:] if line.startswith("> ") else ""
            if not body.strip() or line.rstrip("\r\n").endswith("  "):  # a whole output on one line
                self._add("tool", lineno, _content(body))
            elif self.state.get("mode") == "assistant":
                self._add("assistant", lineno, line.rstrip("\r\n"))  # a quote inside the model's reply
            else:
                self._flush()
                self.hold = (position, {**self.state, "lines": lineno - 1})
                self.pending = _Pending("tool", lineno, [body.rstrip("\r\n")], block=True)
                self.state["mode"] = "tool"
        elif not line.strip():
            # Aider writes a blank line before each prompt and around each reply: it ends a prompt or
            # an output, while inside a reply it is a paragraph break.
            if pending is not None and pending.kind == "assistant":
                pending.lines.append("")
            else:
                self._flush()
        else:
            self._add("assistant", lineno, line.rstrip("\r\n"))

    def _add(self, kind: str, lineno: int, text: str) -> None:
        if self.pending is None or self.pending.kind != kind or self.pending.block:
            self._flush()
            self.pending = _Pending(kind, lineno)
        self.pending.lines.append(text)
        self.state["mode"] = kind

    def _start_session(self, stamp: str) -> None:
        # Two sessions started in the same second get distinct keys.
        repeat = int(self.state.get("repeat", 0)) + 1 if self.state.get("header") == stamp else 0
        self.state.update(header=stamp, repeat=repeat, model=None, mode=None, command=None, last_user=None)
        self.state.update(last_tool=None, banner=True)

    def _session(self) -> Session:
        stamp = self.state.get("header")
        key = f"{self.path}@{stamp}" if stamp else str(self.path)
        if self.state.get("repeat"):
            key += f"#{self.state['repeat']}"
        if key not in self.sessions:
            self.sessions[key] = Session(
                source=IMPORTER.name,
                key=key,
                path=str(self.path),
                project=_project(self.path),
                started_at=_local_to_utc(stamp) if stamp else None,
            )
        session = self.sessions[key]
        session.model = self.state.get("model") or session.model
        return session

    def _flush(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        if pending.kind == "user":
            self.state["banner"] = False
            self._user(pending)
        elif pending.kind == "assistant":
            self.state["banner"] = False
            text = "\n".join(pending.lines).strip()
            if text:
                self._session().messages.append(Message(ASSISTANT, text, id=f"L{pending.line}"))
            self.state["command"] = None
        else:
            self._tool(pending)

    def _user(self, pending: _Pending) -> None:
        text = "\n".join(pending.lines).strip()
        previous = self.state.get("last_user") or ""
        self.state["command"] = None
        if not text or text == "<blank>" or text in _CONTROL_COMMANDS:
            return
        first = previous.split(maxsplit=1)
        if len(first) == 2 and first[0] in _MODE_COMMANDS and first[1].strip() == redact.redact(text)[0]:
            return  # aider's echo of the argument of /ask, /code …
        # Kept in the cursor's state, so redacted like everything stored (and the echo compared so).
        self.state["last_user"] = clip(text, 2000, tail="")
        word, _, rest = text.partition(" ")
        if word in ("/run", "/test") and rest.strip():
            self.state["command"] = {"tool": word[1:], "command": rest.strip()}
        elif text.startswith("!") and len(text) > 1:
            self.state["command"] = {"tool": "run", "command": text[1:].strip()}
        self._session().messages.append(Message(USER, text, id=f"L{pending.line}"))

    def _tool(self, pending: _Pending) -> None:
        kept: list[str] = []
        first = pending.line
        for index, line in enumerate(pending.lines):
            stripped = line.strip()
            if pending.block and index > 0:
                kept.append(line)  # inside a command's output every line counts, blank ones too
                continue
            if not stripped:
                continue
            model = _MODEL.match(stripped)
            if model:
                self.state["model"] = model.group(1)
            if _NOISE.match(stripped) or (self.state.get("banner") and _COMMAND_LINE.match(stripped)):
                continue
            if not kept:
                # The id is the first line kept, so that it does not depend on where a read stopped.
                first = pending.line + index
            kept.append(stripped)
        self.state["banner"] = False
        text = "\n".join(kept).strip()
        if not text:
            return
        # /test output is written twice: as it ran, then line by line when added to the chat.
        mark = hashlib.sha1(utf8(" ".join(text.split()))).hexdigest()[:12]
        if mark == self.state.get("last_tool"):
            return
        self.state["last_tool"] = mark
        command = self.state.get("command")
        self.state["command"] = None
        failed = bool(_FAILED.search(text))
        self._session().messages.append(
            Message(
                TOOL,
                _failure_excerpt(text) if failed else excerpt(text),
                id=f"L{first}",
                tool=command["tool"] if command else "aider",
                command=command["command"] if command else None,
                is_error=failed,
            )
        )


def _failure_excerpt(text: str) -> str:
    """The lines that say what failed (pytest's FAILED and E lines, linters, error lines, the summary)
    within the excerpt limit: a test run starts with its banner, the failures come at the end."""
    lines = [line.strip() for line in text.splitlines()]
    # The first line says what ran or what happened ("Commit …", the test banner), then the failures.
    chosen = lines[:1] + [line for line in lines[1:] if _FAILED.search(line)]
    return excerpt("\n".join(dict.fromkeys(line for line in chosen if line)))


# --- input history ---------------------------------------------------------------------------


class _InputReader:
    """Prompts from ``.aider.input.history``, one session per local calendar day."""

    def __init__(self, path: Path, cursor: Cursor | None, batch: Batch) -> None:
        self.path = path
        self.batch = batch
        self.offset = cursor.offset if cursor else 0
        self.state: dict[str, Any] = dict(cursor.state) if cursor else {}
        self.state.setdefault("lines", 0)
        self.sessions: dict[str, Session] = {}

    def run(self) -> None:
        entry: tuple[int, list[str]] | None = None
        for lineno, end, raw in complete_lines(self.path, self.offset, self.batch, int(self.state["lines"])):
            self.offset, self.state["lines"] = end, lineno
            where = f"{self.path}:{lineno}"
            line = decode(raw, self.batch, where)
            if line is None:
                continue
            header = _INPUT_HEADER.match(line.rstrip("\r\n"))
            if header:
                self._emit(entry)
                entry = (lineno, [])
                self.state["stamp"] = header.group(1)
            elif line.startswith("+"):
                if entry is None:
                    entry = (lineno, [])  # the entry began before the cursor: keep its last stamp
                entry[1].append(line[1:].rstrip("\r\n"))
            elif line.strip():
                self.batch.skip("unknown line", where)
        self._emit(entry)
        self.batch.cursor.offset = self.offset
        self.batch.cursor.state = self.state
        self.batch.sessions.extend(s for s in self.sessions.values() if s.messages)

    def _emit(self, entry: tuple[int, list[str]] | None) -> None:
        if entry is None:
            return
        lineno, lines = entry
        text = "\n".join(lines).strip()
        if not text or (text in _CONTROL_COMMANDS):
            return
        stamp = self.state.get("stamp")
        at = _local_to_utc(stamp) if isinstance(stamp, str) else None
        day = stamp[:10] if isinstance(stamp, str) else "undated"
        key = f"{self.path}@{day}"
        if key not in self.sessions:
            self.sessions[key] = Session(
                source=IMPORTER.name, key=key, path=str(self.path), project=_project(self.path)
            )
        session = self.sessions[key]
        session.started_at = session.started_at or at
        session.updated_at = at or session.updated_at
        session.messages.append(Message(USER, text, id=f"L{lineno}", at=at))
