"""OpenAI Codex CLI rollouts under ``$CODEX_HOME`` or ``~/.codex``.

Three layouts, one session per file (key: the session id):

- **modern envelope** (Rust CLI): ``sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl`` and
  ``archived_sessions/``; each line is ``{timestamp, type, payload}`` with ``session_meta``,
  ``turn_context``, ``response_item``, ``event_msg``, ``compacted`` … Appended live: read
  from a byte offset, with the session id, working directory and model of the first lines
  kept in the cursor.
- **early flat** (≤ 0.3x): a bare header line ``{id, timestamp, …}``, then bare response
  items, and ``{"record_type": "state"}`` lines (skipped). Same incremental reading.
- **TypeScript era**: ``sessions/rollout-YYYY-MM-DD-<uuid>.json`` = ``{session, items}``,
  rewritten whole on every turn: re-read, and only items past the ones already returned
  are new, as long as those are unchanged (else the whole session again, ``restart=True``).

``.jsonl.zst`` files (newer CLIs compress old rollouts) cannot be read with the standard
library of the Pythons engram supports: they are skipped and counted, unless a plain file of
the same name exists, which is read instead.

What is kept: user prompts and assistant replies from ``response_item`` messages (Codex
also writes each as an ``event_msg`` — ``user_message``/``agent_message`` — which is
the same text again and is ignored), tool calls (shell-like calls give ``command``) and
their outputs (``is_error`` from a non-zero exit code, a failed patch, or a failure in the
output of a shell call). Dropped as noise: developer and system messages, reasoning,
``<environment_context>``, AGENTS.md and ``<user_instructions>`` blocks, the IDE context
preamble, ``<turn_aborted>`` and ``<subagent_notification>`` blocks, token counts and the
other UI events. ``history.jsonl`` (typed prompts only) is not read: the rollouts hold the
same prompts with their answers.

Thread names: ``session_index.jsonl`` beside ``sessions/`` holds ``{id, thread_name, updated_at}``
lines, appended when a thread is named or renamed (the last line for an id wins). The name is
the tool's own short account of the thread ("db-02 NotReady: k3s certificate expired"), so it
is the session's summary. It is looked up when the rollout is read: a rename alone, with the
rollout unchanged, waits for the thread's next turn.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path, PurePath
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
    drop_tagged,
    excerpt,
    json_document,
    json_line,
)
from engram_cli.ingest.common import (
    SHELL_FAILURE,
    UUID,
    clip_command,
    iso_to_utc,
    loose_json,
    render_input,
    whole_file_progress,
)

NAME = "codex"
# The thread names' index beside sessions/, and the most of it that is read.
_INDEX = "session_index.jsonl"
_MAX_INDEX_BYTES = 32 * 1024 * 1024

# Function names whose arguments are a shell command.
_SHELL_CALLS = frozenset({"shell", "container.exec", "exec_command", "shell_command", "local_shell"})
_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
    }
)
# Envelope types that carry nothing to remember.
_QUIET = frozenset({"compacted", "world_state", "inter_agent_communication"})
_INJECTED = ("environment_context", "user_instructions", "turn_aborted", "subagent_notification", "INSTRUCTIONS")
_IDE_PREAMBLE = "# Context from my IDE setup:"
_IDE_REQUEST = "## My request for Codex:"
_EXIT = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)", re.M)
_OUTPUT_MARK = re.compile(r"^Output:\n", re.M)
# Codex's own refusal of a call, written as plain text instead of an exit code.
_REFUSAL = re.compile(r"\A\s*(?:patch rejected|execution error|sandbox error|error:|failed to )", re.I)
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)
# Added lines of a patch kept per file, and how long each may be (the whole call is excerpted after).
PATCH_LINES = 8
PATCH_LINE_CHARS = 160
_NOT_A_SESSION = "not a Codex session"


class CodexImporter:
    name = NAME
    agent = "codex"
    description = "OpenAI Codex CLI rollouts (~/.codex/sessions)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Rollouts under ``$CODEX_HOME`` (else ``~/.codex``): ``sessions/`` and ``archived_sessions/``."""
        configured = env.get("CODEX_HOME", "").strip()
        root = Path(configured).expanduser() if configured else home / ".codex"
        found: list[Path] = []
        for sub in ("sessions", "archived_sessions"):
            if (root / sub).is_dir():
                found.extend(_rollouts(root / sub))
        return sorted(found)

    def files(self, path: Path) -> list[Path]:
        """``path`` itself when it is a session file, else the rollouts under it."""
        if path.is_file():
            return [path] if _is_session_file(path) else []
        if not path.is_dir():
            return []
        return sorted(_rollouts(path))

    def __init__(self) -> None:
        # session_index.jsonl per Codex home: (mtime_ns, size) it was read at, and thread id -> name.
        self._names: dict[Path, tuple[tuple[int, int], dict[str, str]]] = {}

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        """New messages of one rollout since ``cursor``, with the thread's name as its summary."""
        batch = self._read(path, cursor)
        for session in batch.sessions:
            session.summary = session.summary or self.thread_name(path, session.key)
        return batch

    def thread_name(self, rollout: Path, key: str) -> str | None:
        """The name ``session_index.jsonl`` (in the Codex home above ``rollout``) gives the thread, if any."""
        for parent in list(rollout.parents)[:6]:
            if parent.name in ("sessions", "archived_sessions"):
                return self._index(parent.parent / _INDEX).get(key)
        return None

    def _index(self, index: Path) -> dict[str, str]:
        try:
            stat = index.stat()
        except OSError:
            return {}
        seen = (stat.st_mtime_ns, stat.st_size)
        cached = self._names.get(index)
        if cached is not None and cached[0] == seen:
            return cached[1]
        names: dict[str, str] = {}
        try:
            raw = files.read_bytes(index) if stat.st_size <= _MAX_INDEX_BYTES else b""
        except OSError:
            raw = b""
        for line in raw.decode("utf-8", errors="replace").splitlines():
            record = loose_json(line)
            if not isinstance(record, dict):
                continue
            ident, name = record.get("id"), record.get("thread_name")
            if isinstance(ident, str) and isinstance(name, str) and name.strip():
                names[ident] = clip(name.strip(), 300)  # appended on every rename: the last line wins
        self._names[index] = (seen, names)
        return names

    def _read(self, path: Path, cursor: Cursor | None) -> Batch:
        stat = path.stat()
        if cursor is not None and cursor.unchanged(stat):
            return Batch([], cursor)
        fresh = _cursor(path, stat)
        if path.name.endswith(".zst"):
            batch = Batch([], fresh)
            batch.skip("compressed (zstd) not supported", str(path))
            return batch
        if path.suffix == ".json":
            return _read_whole(path, stat, fresh, cursor)
        if cursor is None or cursor.replaced(stat):
            return _Lines(path, fresh, {}, restart=cursor is not None).run()
        fresh.offset = cursor.offset
        return _Lines(path, fresh, json.loads(json.dumps(cursor.state)), restart=False).run()


def _rollouts(root: Path) -> list[Path]:
    found = [p for p in root.rglob("rollout-*") if files.candidate(p) and _is_session_file(p)]
    plain = {p for p in found if not p.name.endswith(".zst")}
    # A compressed rollout whose plain copy is still there is the same session: read the plain one.
    return [p for p in found if not p.name.endswith(".zst") or p.with_suffix("") not in plain]


def _is_session_file(path: Path) -> bool:
    return path.name.endswith((".jsonl", ".jsonl.zst")) or path.suffix == ".json"


def _cursor(path: Path, stat: Any) -> Cursor:
    return Cursor(path=str(path), inode=stat.st_ino, size=stat.st_size, mtime_ns=stat.st_mtime_ns)


class _Session:
    """Turns response items into messages; ``state`` is what the next read of the same file needs."""

    def __init__(self, path: Path, batch: Batch, state: dict[str, Any]) -> None:
        self.path = path
        self.batch = batch
        self.state = state
        self.messages: list[Message] = []

    def meta(self, payload: dict[str, Any], at: str | None) -> None:
        """``session_meta`` or the early bare header: only the first one names the session."""
        ident = payload.get("id")
        if "key" not in self.state and isinstance(ident, str) and ident:
            self.state["key"] = ident
        cwd = payload.get("cwd")
        if isinstance(cwd, str) and cwd and "project" not in self.state:
            self.state["project"] = cwd
        self.moment(iso_to_utc(payload.get("timestamp")) or at)

    def turn(self, payload: dict[str, Any]) -> None:
        model = payload.get("model")
        if isinstance(model, str) and model:
            self.state["model"] = model
        cwd = payload.get("cwd")
        if isinstance(cwd, str) and cwd and "project" not in self.state:
            self.state["project"] = cwd

    def moment(self, at: str | None) -> None:
        if at:
            self.state.setdefault("started", at)
            self.state["updated"] = max(at, self.state.get("updated", at))

    def item(self, payload: dict[str, Any], ident: str, at: str | None, where: str) -> None:
        """One response item (a message, a tool call or its output)."""
        self.moment(at)
        kind = _kind(payload)
        if kind == "message":
            self._message(payload, ident, at, where)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            self._call(payload, ident, at)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call = payload.get("call_id")
            self._output(call if isinstance(call, str) else None, payload.get("output"), ident, at)
        elif kind not in _ITEMS:
            self.batch.skip("unknown item type", where)

    def event(self, payload: dict[str, Any], ident: str, at: str | None) -> None:
        """UI events: only a failed patch says something the items do not."""
        if payload.get("type") == "patch_apply_end" and payload.get("success") is False:
            call = payload.get("call_id")
            text = "\n".join(str(payload[k]) for k in ("stdout", "stderr") if isinstance(payload.get(k), str))
            self._result(call if isinstance(call, str) else None, text, True, ident, at, tool="apply_patch")

    def _message(self, payload: dict[str, Any], ident: str, at: str | None, where: str) -> None:
        role = payload.get("role")
        content = payload.get("content")
        if isinstance(content, str):
            content = [{"type": "input_text", "text": content}]
        if not isinstance(content, list):
            self.batch.skip("wrong type in message content", where)
            return
        parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if role == "user":
            text = "\n\n".join(t for t in (_user_text(p) for p in parts) if t)
            if text:
                self.messages.append(Message(role=USER, text=text, id=ident, at=at))
        elif role == "assistant":
            text = "\n\n".join(p.strip() for p in parts if p.strip())
            if text:
                self.messages.append(Message(role=ASSISTANT, text=text, id=ident, at=at))
        # developer and system messages are the harness talking to the model

    def _call(self, payload: dict[str, Any], ident: str, at: str | None) -> None:
        kind = payload.get("type")
        call = payload.get("call_id") or payload.get("id")
        call = call if isinstance(call, str) and call else None
        command: str | None = None
        if kind == "local_shell_call":
            name = "local_shell"
            action = payload.get("action")
            command = _command(action) if isinstance(action, dict) else None
            text = command or ""
        elif kind == "web_search_call":
            name = "web_search"
            action = payload.get("action")
            query = action.get("query") if isinstance(action, dict) else None
            text = query if isinstance(query, str) else ""
        elif kind == "custom_tool_call":
            name = str(payload.get("name") or "tool")
            raw = payload.get("input")
            text = _render_patch(raw) if isinstance(raw, str) else render_input(raw, limit=120, tidy_cut=False)
        else:
            name = str(payload.get("name") or "tool")
            arguments = loose_json(payload.get("arguments"))  # a JSON string; an object in some versions
            command = _command(arguments) if name in _SHELL_CALLS else None
            patch = arguments.get("input") if isinstance(arguments, dict) else None
            if command is None and isinstance(patch, str) and _PATCH_FILE.search(patch):
                text = _render_patch(patch)  # apply_patch as a function: {"input": "*** Begin Patch…"}
            else:
                text = command or render_input(arguments, limit=120, tidy_cut=False)
        names: dict[str, str] = self.state.setdefault("calls", {})
        if call:
            names[call] = name
            while len(names) > 200:  # calls whose output never came
                names.pop(next(iter(names)))
        self.messages.append(
            Message(role=TOOL, text=excerpt(text), id=call or ident, at=at, tool=name, command=command)
        )

    def _output(self, call: str | None, raw: object, ident: str, at: str | None) -> None:
        names: dict[str, str] = self.state.setdefault("calls", {})
        tool = names.get(call) if call else None
        text, code, failed = _output(raw)
        if code is not None:
            failed = failed or code != 0
        elif tool in _SHELL_CALLS or tool == "apply_patch":
            failed = failed or bool(_REFUSAL.search(text))
        if tool in _SHELL_CALLS:
            failed = failed or bool(SHELL_FAILURE.search(text))
        self._result(call, text, failed, ident, at, tool=tool)

    def _result(
        self, call: str | None, text: str, failed: bool, ident: str, at: str | None, *, tool: str | None
    ) -> None:
        answered: list[str] = self.state.setdefault("answered", [])
        if call and call in answered:
            return  # a failed patch was already reported from its event
        names: dict[str, str] = self.state.setdefault("calls", {})
        if call:
            tool = names.pop(call, tool)
            answered.append(call)
            del answered[:-64]
        self.messages.append(
            Message(role=TOOL, text=excerpt(text) or "(no output)", id=ident, at=at, tool=tool, is_error=failed)
        )

    def session(self, restart: bool) -> Session:
        state = self.state
        key = state.get("key") or _key_from_name(self.path)
        return Session(
            source=NAME,
            key=str(key),
            path=str(self.path),
            messages=self.messages,
            project=state.get("project"),
            started_at=state.get("started"),
            updated_at=state.get("updated"),
            model=state.get("model"),
            restart=restart,
        )


class _Lines:
    """A ``.jsonl`` rollout (envelope or early flat), read from a byte offset."""

    def __init__(self, path: Path, cursor: Cursor, state: dict[str, Any], *, restart: bool) -> None:
        self.path = path
        self.restart = restart
        self.batch = Batch([], cursor)
        self.parser = _Session(path, self.batch, state)

    def run(self) -> Batch:
        state = self.parser.state
        cursor = self.batch.cursor
        for lineno, end, raw in complete_lines(self.path, cursor.offset, self.batch, state.get("lines", 0)):
            cursor.offset = end
            state["lines"] = lineno
            self._line(lineno, raw)
        cursor.state = state
        if self.parser.messages or self.restart:
            self.batch.sessions.append(self.parser.session(self.restart))
        return self.batch

    def _line(self, lineno: int, raw: bytes) -> None:
        where = f"{self.path}:{lineno}"
        obj = json_line(raw, self.batch, where)
        if obj is None:
            return
        ident = f"L{lineno}"
        if "payload" in obj:
            self._envelope(obj, ident, where)
        elif "record_type" in obj:
            return  # early format's state snapshots
        elif _kind(obj) in _ITEMS:
            item_id = obj.get("id")
            self.parser.item(obj, item_id if isinstance(item_id, str) and item_id else ident, None, where)
        elif "id" in obj and "timestamp" in obj and "type" not in obj:
            self.parser.meta(obj, None)
        else:
            self.batch.skip("unknown record type", where)

    def _envelope(self, obj: dict[str, Any], ident: str, where: str) -> None:
        kind, payload = _kind(obj), obj.get("payload")
        at = iso_to_utc(obj.get("timestamp"))
        if not isinstance(payload, dict):
            self.batch.skip("wrong type in payload", where)
        elif kind == "session_meta":
            self.parser.meta(payload, at)
        elif kind == "turn_context":
            self.parser.turn(payload)
        elif kind == "response_item":
            item_id = payload.get("id")
            self.parser.item(payload, item_id if isinstance(item_id, str) and item_id else ident, at, where)
        elif kind == "event_msg":
            self.parser.event(payload, ident, at)
        elif kind not in _QUIET:
            self.batch.skip("unknown record type", where)


def _read_whole(path: Path, stat: Any, fresh: Cursor, cursor: Cursor | None) -> Batch:
    """A TypeScript-era ``{session, items}`` file: rewritten whole, so compare with what was returned."""
    batch = Batch([], fresh)
    where = str(path)
    obj = json_document(path, stat.st_size, batch, not_ours=_NOT_A_SESSION)
    if obj is None:
        return batch
    items = obj.get("items")
    if not isinstance(items, list):
        batch.skip(_NOT_A_SESSION, where)
        return batch
    header = obj.get("session")
    parser = _Session(path, batch, {})
    if isinstance(header, dict):
        parser.meta(header, None)
    seen, restart, fresh.state = whole_file_progress(items, cursor, key="items")
    for index, item in enumerate(items):
        before = len(parser.messages)
        if isinstance(item, dict):
            item_id = item.get("id")
            parser.item(item, item_id if isinstance(item_id, str) and item_id else str(index), None, f"{where}#{index}")
        else:
            batch.skip("not a JSON object", f"{where}#{index}")
        if index < seen:
            del parser.messages[before:]  # returned by an earlier read
    if parser.messages or restart:
        batch.sessions.append(parser.session(restart))
    return batch


def _kind(record: dict[str, Any]) -> str | None:
    """A record's ``type`` when it is a string (anything else is no type at all)."""
    kind = record.get("type")
    return kind if isinstance(kind, str) else None


def _key_from_name(path: Path) -> str:
    """The session id in a rollout's file name, for files whose header is missing."""
    found = UUID.findall(path.name)
    return found[-1] if found else path.name.split(".")[0]


def _user_text(text: str) -> str:
    """What the person typed, without the context blocks Codex sends along with it."""
    stripped = text.strip()
    if stripped.startswith(_IDE_PREAMBLE):
        # IDE clients prefix open files and selections; the request follows its own heading.
        at = stripped.find(_IDE_REQUEST)
        stripped = stripped[at + len(_IDE_REQUEST) :] if at >= 0 else ""
    stripped = drop_tagged(stripped, *_INJECTED)
    if stripped.startswith("# AGENTS.md instructions"):
        return ""
    return stripped


def _command(arguments: object) -> str | None:
    """The shell command of a shell-like call: ``command`` (string or argv) or ``cmd``."""
    if not isinstance(arguments, dict):
        return None
    value = arguments.get("command", arguments.get("cmd"))
    if isinstance(value, str):
        command = value.strip()
    elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        command = _unwrap(value)
    else:
        return None
    if not command:
        return None
    return clip_command(command)


def _unwrap(argv: list[str]) -> str:
    """``["bash", "-lc", "ls -la"]`` is the command ``ls -la``: the wrapper is how Codex runs everything."""
    program = PurePath(argv[0]).name.lower()
    if len(argv) >= 3 and program in ("bash", "sh", "zsh", "dash") and argv[1] in ("-c", "-lc", "-ic", "-lic"):
        return argv[2].strip()
    if program in ("powershell", "powershell.exe", "pwsh", "pwsh.exe"):
        flags = [a.lower() for a in argv]
        for flag in ("-command", "-c"):
            if flag in flags and flags.index(flag) + 1 < len(argv):
                return argv[flags.index(flag) + 1].strip()
    return shlex.join(argv)


def _output(raw: object) -> tuple[str, int | None, bool]:
    """(text, exit code, failed) of a call's output: plain text, a JSON envelope, or content items."""
    if isinstance(raw, list):
        text = "\n".join(p["text"] for p in raw if isinstance(p, dict) and isinstance(p.get("text"), str))
        return text, None, False
    if isinstance(raw, dict):
        return _envelope_output(raw)
    if not isinstance(raw, str):
        return "", None, False
    if raw.lstrip().startswith("{"):
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and ("output" in parsed or "metadata" in parsed):
            return _envelope_output(parsed)
    exit_code = _EXIT.search(raw[:400])
    text = raw
    mark = _OUTPUT_MARK.search(raw[:400])
    if mark:
        # "Exit code: 1\nWall time: …\nOutput:\n…": the header is metadata, the body is the output.
        text = raw[mark.end() :]
    return text, int(exit_code.group(1)) if exit_code else None, False


def _envelope_output(parsed: dict[str, Any]) -> tuple[str, int | None, bool]:
    """``{"output": …, "metadata": {"exit_code": …}}`` (shell) or an MCP-style result."""
    output = parsed.get("output", parsed.get("content"))
    if isinstance(output, list):
        text = "\n".join(p["text"] for p in output if isinstance(p, dict) and isinstance(p.get("text"), str))
    elif isinstance(output, str):
        text = output
    else:
        text = json.dumps(parsed, ensure_ascii=False)
    metadata = parsed.get("metadata")
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    failed = parsed.get("success") is False or parsed.get("isError") is True
    return text, code if isinstance(code, int) and not isinstance(code, bool) else None, failed


def _render_patch(patch: str) -> str:
    """A patch by the files it touches and the lines it puts in (``Update File: go.mod, new_string=…``).

    The added lines are written as an edit tool's ``new_string`` (one per line, without the ``+``), the
    shape the other importers give an edit, so the extractor reads a Codex fix as it reads theirs. A
    patch of several files names them all first and then gives one ``new_string`` with their lines in
    order: a reader of ``key=value`` pairs keeps one value per key, and a file name between values would
    read as an added line. A line the hunk also removes is context written as a change, not a change;
    removed lines and context are dropped, and at most PATCH_LINES lines of PATCH_LINE_CHARS each are
    kept per file.
    """
    starts = list(_PATCH_FILE.finditer(patch))
    if not starts:
        return patch
    files: list[str] = []
    added: list[str] = []
    for i, start in enumerate(starts):
        files.append(f"{start.group(1)} File: {start.group(2).strip()}")
        body = patch[start.end() : starts[i + 1].start() if i + 1 < len(starts) else len(patch)].splitlines()
        removed = {line[1:].strip() for line in body if line.startswith("-")}
        kept = [line[1:].rstrip() for line in body if line.startswith("+")]
        kept = [line for line in kept if line.strip() and line.strip() not in removed]
        added += [clip(line, PATCH_LINE_CHARS, tidy=False) for line in kept[:PATCH_LINES]]
    return "; ".join(files) + (", new_string=" + "\n".join(added) if added else "")


IMPORTER = CodexImporter()
