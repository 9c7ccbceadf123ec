"""GitHub Copilot CLI sessions under ``$COPILOT_HOME`` or ``~/.copilot``.

Two layouts, one session per file (key: the session id):

- ``session-state/<id>/events.jsonl`` (also the older flat ``session-state/<id>.jsonl``):
  one event per line, ``{type, data, id, parentId, timestamp}``; appended live, read from a
  byte offset. Kept: ``user.message`` (the typed ``content``, not ``transformedContent``,
  which adds the date and reminders), ``assistant.message`` text, tool calls (from the
  message's ``toolRequests`` or ``tool.execution_start``, whichever comes first; ``bash``,
  ``shell`` and ``powershell`` give ``command``) and ``tool.execution_complete`` results
  (``is_error`` when ``success`` is false or the output ends ``<exited with exit code N>``
  with N ≠ 0). ``session.start`` gives the working directory, ``session.model_change`` the
  model, and ``session.task_complete`` the agent's own summary. The ``report_intent`` and
  ``task_complete`` tools are status reports, not work; system prompts, reasoning,
  ephemeral (streaming) events and empty user messages (autopilot nudges) are dropped, and
  so are events carrying a ``parentToolCallId`` (a sub-agent's own messages, assumed from
  third-party parsers: the sample has none), whose result reaches the parent's tool call.
- the legacy ``history-session-state/*.json`` dump ``{sessionId, startTime, chatMessages,
  timeline}``: rewritten whole, so re-read, and only timeline entries past the ones
  already returned are new, as long as those are unchanged (else the whole session again,
  ``restart=True``). ``timeline`` is read (it has ids and times); ``chatMessages`` only when
  the timeline has no conversation in it.

``COPILOT_HOME`` relocates the whole directory (documented by GitHub). Versions up to
0.0.421 also honoured ``XDG_CONFIG_HOME`` (``$XDG_CONFIG_HOME/.copilot``), which is searched
when set. The sample ``events.jsonl`` records the cwd in ``session.start`` and nothing
that names its own directory, so neither variable can be checked from the file itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
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
    complete_lines,
    drop_tagged,
    excerpt,
    json_document,
    json_line,
)
from engram_cli.ingest.common import (
    SHELL_FAILURE,
    clip_command,
    iso_to_utc,
    loose_json,
    render_input,
    whole_file_progress,
)

NAME = "copilot-cli"

_SHELL_TOOLS = frozenset({"bash", "shell", "powershell"})
# Tools that report progress to the UI: their calls and results say nothing about the work.
_STATUS_TOOLS = frozenset({"report_intent", "task_complete"})
# Event families Copilot CLI writes; an unhandled event of these is bookkeeping, anything else is counted.
_FAMILIES = frozenset({"session", "assistant", "user", "tool", "system", "subagent", "hook", "skill", "abort"})
_LEGACY_QUIET = frozenset({"info", "warning", "error", "tool_call_requested"})
_EXIT = re.compile(r"<exited with exit code (-?\d+)>\s*\Z")
_NOT_A_SESSION = "not a Copilot CLI session"


class CopilotCliImporter:
    name = NAME
    agent = "copilot-cli"
    description = "GitHub Copilot CLI sessions (~/.copilot/session-state)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Session files under ``$COPILOT_HOME``, ``~/.copilot`` and (older versions) ``$XDG_CONFIG_HOME/.copilot``."""
        roots: list[Path] = []
        configured = env.get("COPILOT_HOME", "").strip()
        roots.append(Path(configured).expanduser() if configured else home / ".copilot")
        xdg = env.get("XDG_CONFIG_HOME", "").strip()
        if xdg:
            roots.append(Path(xdg).expanduser() / ".copilot")
        return sorted(files.unique(path for root in roots for path in _sessions(root)))

    def files(self, path: Path) -> list[Path]:
        """``path`` itself when it is a session file, else the session files under it."""
        if path.is_file():
            return [path] if path.suffix in (".jsonl", ".json") else []
        if not path.is_dir():
            return []
        found = set(_sessions(path))
        for candidate in path.rglob("*.json*"):
            parent = candidate.parent.name
            if files.candidate(candidate) and (
                candidate.name == "events.jsonl"
                or (candidate.suffix == ".jsonl" and parent == "session-state")
                or (candidate.suffix == ".json" and parent == "history-session-state")
            ):
                found.add(candidate)
        return sorted(found)

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        """New messages of one session file since ``cursor``."""
        stat = path.stat()
        if cursor is not None and cursor.unchanged(stat):
            return Batch([], cursor)
        fresh = Cursor(path=str(path), inode=stat.st_ino, size=stat.st_size, mtime_ns=stat.st_mtime_ns)
        if path.suffix == ".json":
            return _read_legacy(path, stat, fresh, cursor)
        if cursor is None or cursor.replaced(stat):
            return _Events(path, fresh, {}, restart=cursor is not None).run()
        fresh.offset = cursor.offset
        return _Events(path, fresh, json.loads(json.dumps(cursor.state)), restart=False).run()


def _sessions(root: Path) -> list[Path]:
    """The session files in a Copilot home: current events logs and legacy dumps."""
    found: list[Path] = []
    state = root / "session-state"
    if state.is_dir():
        found.extend(files.glob(state, "*/events.jsonl"))
        found.extend(files.glob(state, "*.jsonl"))
    legacy = root / "history-session-state"
    if legacy.is_dir():
        found.extend(files.glob(legacy, "*.json"))
    return sorted(found)


class _Events:
    """An ``events.jsonl`` log read from a byte offset."""

    def __init__(self, path: Path, cursor: Cursor, state: dict[str, Any], *, restart: bool) -> None:
        self.path = path
        self.restart = restart
        self.batch = Batch([], cursor)
        self.state = state
        self.messages: list[Message] = []
        self.changed = False  # the summary arrived in this read

    def run(self) -> Batch:
        cursor = self.batch.cursor
        for lineno, end, raw in complete_lines(self.path, cursor.offset, self.batch, self.state.get("lines", 0)):
            cursor.offset = end
            self.state["lines"] = lineno
            self._line(lineno, raw)
        cursor.state = self.state
        if self.messages or self.restart or self.changed:
            self.batch.sessions.append(
                _session(self.path, self.state, self.messages, self.state.get("key"), restart=self.restart)
            )
        return self.batch

    def _line(self, lineno: int, raw: bytes) -> None:
        where = f"{self.path}:{lineno}"
        event = json_line(raw, self.batch, where)
        if event is None:
            return
        kind = event.get("type")
        if not isinstance(kind, str) or kind.split(".")[0] not in _FAMILIES:
            self.batch.skip("unknown record type", where)
            return
        if event.get("ephemeral") is True:
            return  # streaming fragments; the final event follows
        data = event.get("data")
        if not isinstance(data, dict):
            self.batch.skip("wrong type in event data", where)
            return
        if isinstance(data.get("parentToolCallId"), str) and data["parentToolCallId"]:
            return  # a sub-agent's work, reported back through its parent's tool call (as for Claude Code)
        ident = event.get("id") if isinstance(event.get("id"), str) and event.get("id") else f"L{lineno}"
        at = iso_to_utc(event.get("timestamp"))
        _moment(self.state, at)
        handlers = {
            "session.start": self._on_session_start,
            "session.model_change": self._on_model_change,
            "session.task_complete": self._on_task_complete,
            "user.message": self._on_user_message,
            "assistant.message": self._on_assistant_message,
            "tool.execution_start": self._on_tool_start,
            "tool.execution_complete": self._on_tool_complete,
        }
        handler = handlers.get(kind)
        if handler is not None:
            handler(data, str(ident), at)

    def _on_session_start(self, data: dict[str, Any], ident: str, at: str | None) -> None:
        session = data.get("sessionId")
        if isinstance(session, str) and session:
            self.state.setdefault("key", session)
        context = data.get("context")
        cwd = context.get("cwd") if isinstance(context, dict) else None
        if isinstance(cwd, str) and cwd:
            self.state.setdefault("project", cwd)
        model = data.get("selectedModel")
        if isinstance(model, str) and model:
            self.state["model"] = model
        _moment(self.state, iso_to_utc(data.get("startTime")))

    def _on_model_change(self, data: dict[str, Any], ident: str, at: str | None) -> None:
        model = data.get("newModel")
        if isinstance(model, str) and model:
            self.state["model"] = model

    def _on_task_complete(self, data: dict[str, Any], ident: str, at: str | None) -> None:
        summary = data.get("summary")
        if isinstance(summary, str) and summary.strip():
            self.state["summary"] = summary.strip()
            self.changed = True

    def _on_user_message(self, data: dict[str, Any], ident: str, at: str | None) -> None:
        content = data.get("content")
        text = (
            drop_tagged(content, "current_datetime", "reminder", "system-reminder") if isinstance(content, str) else ""
        )
        if text:
            self.messages.append(Message(role=USER, text=text, id=ident, at=at))

    def _on_assistant_message(self, data: dict[str, Any], ident: str, at: str | None) -> None:
        content = data.get("content")
        if isinstance(content, str) and content.strip():
            mid = data.get("messageId")
            self.messages.append(
                Message(role=ASSISTANT, text=content.strip(), id=mid if isinstance(mid, str) and mid else ident, at=at)
            )
        requests = data.get("toolRequests")
        for request in requests if isinstance(requests, list) else []:
            if isinstance(request, dict):
                self._call(request.get("toolCallId"), request.get("name"), request.get("arguments"), at)

    def _on_tool_start(self, data: dict[str, Any], ident: str, at: str | None) -> None:
        self._call(data.get("toolCallId"), data.get("toolName"), data.get("arguments"), at)

    def _on_tool_complete(self, data: dict[str, Any], ident: str, at: str | None) -> None:
        call = data.get("toolCallId")
        calls: dict[str, str] = self.state.setdefault("calls", {})
        tool = calls.pop(call, None) if isinstance(call, str) else None
        if tool in _STATUS_TOOLS:
            return
        result = data.get("result")
        error = data.get("error")
        text = ""
        if isinstance(result, dict) and isinstance(result.get("content"), str):
            text = result["content"]
        elif isinstance(result, str):
            text = result
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = f"{text}\n{error['message']}".strip()
        elif isinstance(error, str):
            text = f"{text}\n{error}".strip()
        failed = data.get("success") is False or _failed(tool, text)
        self.messages.append(
            Message(role=TOOL, text=excerpt(text) or "(no output)", id=ident, at=at, tool=tool, is_error=failed)
        )

    def _call(self, call: object, name: object, arguments: object, at: str | None) -> None:
        calls: dict[str, str] = self.state.setdefault("calls", {})
        seen: list[str] = self.state.setdefault("seen_calls", [])
        if not isinstance(call, str) or not call or call in seen:
            return  # requested in the message and started by the runtime: one call
        tool = name if isinstance(name, str) and name else "tool"
        seen.append(call)
        del seen[:-200]
        calls[call] = tool
        while len(calls) > 200:  # calls whose result never came
            calls.pop(next(iter(calls)))
        if tool in _STATUS_TOOLS:
            return
        message = _call_message(call, tool, arguments, at)
        self.messages.append(message)


def _read_legacy(path: Path, stat: Any, fresh: Cursor, cursor: Cursor | None) -> Batch:
    """A legacy ``{sessionId, startTime, chatMessages, timeline}`` dump: rewritten whole."""
    batch = Batch([], fresh)
    where = str(path)
    obj = json_document(path, stat.st_size, batch, not_ours=_NOT_A_SESSION)
    if obj is None:
        return batch
    if not isinstance(obj.get("timeline", obj.get("chatMessages")), list):
        batch.skip(_NOT_A_SESSION, where)
        return batch
    timeline = obj["timeline"] if isinstance(obj.get("timeline"), list) else []
    chat = obj["chatMessages"] if isinstance(obj.get("chatMessages"), list) else []
    talk = any(isinstance(e, dict) and e.get("type") in ("user", "copilot") for e in timeline)
    entries: list[Any] = timeline if talk else chat
    state: dict[str, Any] = {}
    _moment(state, iso_to_utc(obj.get("startTime")))
    seen, restart, fresh.state = whole_file_progress(entries, cursor, key="entries")
    messages: list[Message] = []
    calls: dict[str, str] = {}
    for index, entry in enumerate(entries):
        here = f"{where}#{index}"
        if not isinstance(entry, dict):
            batch.skip("not a JSON object", here)
            continue
        found = _timeline(entry, index, batch, here) if talk else _chat(entry, index, calls, batch, here)
        for message in found:
            _moment(state, message.at)
        if index >= seen:
            messages.extend(found)
    key = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) and obj.get("sessionId") else None
    if messages or restart:
        batch.sessions.append(_session(path, state, messages, key, restart=restart))
    return batch


def _timeline(entry: dict[str, Any], index: int, batch: Batch, where: str) -> list[Message]:
    """Messages of one legacy timeline entry."""
    kind = entry.get("type") if isinstance(entry.get("type"), str) else None
    ident = entry.get("id") if isinstance(entry.get("id"), str) and entry.get("id") else str(index)
    at = iso_to_utc(entry.get("timestamp"))
    text = entry.get("text")
    if kind in ("user", "copilot"):
        if not isinstance(text, str) or not text.strip():
            return []
        return [Message(role=USER if kind == "user" else ASSISTANT, text=text.strip(), id=str(ident), at=at)]
    if kind == "tool_call_completed":
        name = entry.get("name") if isinstance(entry.get("name"), str) and entry.get("name") else "tool"
        call = entry.get("callId") if isinstance(entry.get("callId"), str) and entry.get("callId") else f"{ident}:call"
        if name in _STATUS_TOOLS:
            return []
        result = entry.get("result")
        log = result.get("log") if isinstance(result, dict) else None
        output = log if isinstance(log, str) else ""
        status = result.get("type") if isinstance(result, dict) else None
        failed = (status is not None and status != "success") or _failed(str(name), output)
        return [
            _call_message(str(call), str(name), entry.get("arguments"), at),
            Message(
                role=TOOL, text=excerpt(output) or "(no output)", id=str(ident), at=at, tool=str(name), is_error=failed
            ),
        ]
    if kind not in _LEGACY_QUIET:
        batch.skip("unknown record type", where)
    return []


def _chat(entry: dict[str, Any], index: int, calls: dict[str, str], batch: Batch, where: str) -> list[Message]:
    """Messages of one legacy ``chatMessages`` entry (OpenAI chat format), used when the timeline is empty."""
    role = entry.get("role")
    content = entry.get("content")
    text = content.strip() if isinstance(content, str) else ""
    ident = str(index)
    if role == "user":
        return [Message(role=USER, text=text, id=ident)] if text else []
    if role == "assistant":
        found = [Message(role=ASSISTANT, text=text, id=ident)] if text else []
        for number, request in enumerate(entry.get("tool_calls") or []):
            function = request.get("function") if isinstance(request, dict) else None
            if not isinstance(function, dict):
                continue
            name = str(function["name"]) if isinstance(function.get("name"), str) else "tool"
            call = str(request["id"]) if isinstance(request.get("id"), str) else f"{ident}.{number}"
            calls[call] = name
            if name not in _STATUS_TOOLS:
                found.append(_call_message(call, name, function.get("arguments"), None))
        return found
    if role == "tool":
        answered = entry.get("tool_call_id")
        tool = calls.get(answered) if isinstance(answered, str) else None
        if tool in _STATUS_TOOLS:
            return []
        return [
            Message(role=TOOL, text=excerpt(text) or "(no output)", id=ident, tool=tool, is_error=_failed(tool, text))
        ]
    if role not in ("system", "developer"):
        batch.skip("unknown record type", where)
    return []


def _call_message(call: str, tool: str, arguments: object, at: str | None) -> Message:
    arguments = loose_json(arguments)
    command = None
    if tool in _SHELL_TOOLS and isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
        command = arguments["command"].strip()
        command = clip_command(command) or None
    text = excerpt(command or render_input(arguments, limit=120, tidy_cut=False))
    return Message(role=TOOL, text=text, id=call, at=at, tool=tool, command=command)


def _failed(tool: str | None, output: str) -> bool:
    """A shell result that ended with a non-zero exit code, or whose output shows a failure."""
    if tool not in _SHELL_TOOLS:
        return False
    code = _EXIT.search(output)
    return (code is not None and int(code.group(1)) != 0) or bool(SHELL_FAILURE.search(output))


def _session(path: Path, state: dict[str, Any], messages: list[Message], key: object, *, restart: bool) -> Session:
    if not isinstance(key, str) or not key:
        # events.jsonl lives in a directory named after the session; a flat file is named after it.
        key = path.parent.name if path.name == "events.jsonl" else path.stem
    return Session(
        source=NAME,
        key=key,
        path=str(path),
        messages=messages,
        project=state.get("project"),
        summary=state.get("summary"),
        started_at=state.get("started"),
        updated_at=state.get("updated"),
        model=state.get("model"),
        restart=restart,
    )


def _moment(state: dict[str, Any], at: str | None) -> None:
    if at:
        state["started"] = min(at, state.get("started", at))
        state["updated"] = max(at, state.get("updated", at))


IMPORTER = CopilotCliImporter()
