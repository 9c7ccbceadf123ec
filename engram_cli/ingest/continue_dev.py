"""Continue (continue.dev) chat sessions: ``${CONTINUE_GLOBAL_DIR:-~/.continue}/sessions/<id>.json``.

Each session is one JSON document, rewritten whole whenever it changes:
``{sessionId, title, workspaceDirectory, history: [{message, contextItems, toolCallStates?,
promptLogs?, conversationSummary?}], mode?, chatModelTitle?}``. A message has a ``role``
(user, assistant, thinking, system, tool), a ``content`` (a string or text/image parts),
assistant ``toolCalls`` and, for tool results, a ``toolCallId``; recent versions give
messages an ``id``, older ones do not (the position in ``history`` stands in). The
``sessions.json`` index beside the files holds each session's creation time (``dateCreated``,
milliseconds). Messages carry no time of their own.

Kept: what the person wrote, the replies, tool calls and their results. Dropped: thinking,
system messages, context items (attached files and snippets), prompt logs and images.

Since the file is rewritten, the cursor state remembers how many messages were returned and
a hash of them: new messages after an unchanged prefix come alone, anything else (an edited
or deleted message) returns the whole session as a restart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
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
    decode,
    excerpt,
    optional_json,
)
from engram_cli.ingest.common import (
    OUTPUT_FAILURE,
    chain_digest,
    epoch_to_utc,
    loose_json,
    render_input,
    since_last_read,
    uri_path,
)
from engram_cli.timeutil import to_iso

INDEX = "sessions.json"
# Continue's name for a session it has not titled yet.
_UNTITLED = "New Session"
_ARG_LIMIT = 200


class ContinueImporter:
    name = "continue"
    agent = "continue"
    description = "Continue chat sessions (~/.continue/sessions/*.json)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Sessions under ``$CONTINUE_GLOBAL_DIR/sessions`` (default ``~/.continue``, on Windows too)."""
        root = Path(env["CONTINUE_GLOBAL_DIR"]) if env.get("CONTINUE_GLOBAL_DIR") else home / ".continue"
        sessions = root / "sessions"
        return self.files(sessions) if sessions.is_dir() else []

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path] if path.suffix == ".json" and path.name != INDEX else []
        if not path.is_dir():
            return []
        # Only files in a `sessions` directory: ~/.continue also holds config.json and friends.
        return sorted(
            p for p in path.rglob("*.json") if p.parent.name == "sessions" and p.name != INDEX and files.candidate(p)
        )

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()  # before reading: a write that lands meanwhile makes the next run read again
        if cursor is not None and cursor.unchanged(st):
            return Batch([], cursor)
        batch = Batch([], Cursor(path=str(path), inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns))
        doc = _document(path, batch)
        if doc is None:
            # Unreadable, or caught half-written: keep the old cursor so it is read again.
            batch.cursor = cursor or Cursor(path=str(path))
            return batch
        if "session_id" in doc and "history" not in doc:
            batch.skip("unsupported old format", str(path))  # the 2023 Python server's sessions
            return batch
        history = doc.get("history", [])
        if not isinstance(history, list):
            batch.skip("wrong field type", f"{path} (history)")
            return batch
        messages, summary = _messages(history, batch, str(path))
        key = str(doc["sessionId"]) if isinstance(doc.get("sessionId"), str) else path.stem
        listed = _index(path.parent).get(key, {})
        previous = cursor.state if cursor else {}
        seen = previous.get("seen")
        new, restart = messages, False
        if isinstance(seen, int) and isinstance(previous.get("hash"), str):
            new, restart = since_last_read(messages, seen, previous["hash"], chain_digest)
        title = _title(doc.get("title")) or _title(listed.get("title"))
        batch.cursor.state = {"seen": len(messages), "hash": chain_digest(messages), "title": title, "summary": summary}
        changed = title != previous.get("title") or summary != previous.get("summary")
        if new or restart or (changed and cursor is not None):
            workspace = doc.get("workspaceDirectory") or listed.get("workspaceDirectory")
            model = doc.get("chatModelTitle")
            batch.sessions.append(
                Session(
                    source=IMPORTER.name,
                    key=key,
                    path=str(path),
                    messages=new,
                    project=uri_path(workspace) if isinstance(workspace, str) else None,
                    title=title,
                    summary=summary,
                    started_at=_time(listed.get("dateCreated")),
                    updated_at=to_iso(datetime.fromtimestamp(st.st_mtime, tz=UTC)),  # when it was last saved
                    model=model if isinstance(model, str) and model else None,
                    restart=restart,
                )
            )
        return batch


IMPORTER = ContinueImporter()


def _document(path: Path, batch: Batch) -> dict[str, Any] | None:
    text = decode(files.read_bytes(path), batch, str(path))
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        batch.skip("invalid JSON", str(path))
        return None
    if not isinstance(doc, dict):
        batch.skip("not a JSON object", str(path))
        return None
    return doc


def _index(directory: Path) -> dict[str, dict[str, Any]]:
    """sessionId -> entry of the ``sessions.json`` index, when it is there and readable."""
    entries = optional_json(directory / INDEX)
    if not isinstance(entries, list):
        return {}
    return {e["sessionId"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("sessionId"), str)}


# --- messages --------------------------------------------------------------------------------


def _messages(history: list[Any], batch: Batch, where: str) -> tuple[list[Message], str | None]:
    """The session's messages, and the latest conversation summary Continue wrote, if any."""
    items: list[tuple[int, dict[str, Any]]] = []
    for index, item in enumerate(history):
        message = item.get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            batch.skip("wrong field type", f"{where} (history {index})")
            continue
        items.append((index, item))
    states = {s["toolCallId"]: s for _, item in items for s in _states(item) if isinstance(s.get("toolCallId"), str)}
    answered = {m["toolCallId"] for _, item in items if _is_result(m := item["message"])}
    out: list[Message] = []
    summary = None
    for index, item in items:
        message = item["message"]
        role = message["role"]
        mid = message["id"] if isinstance(message.get("id"), str) and message["id"] else str(index)
        if isinstance(item.get("conversationSummary"), str) and item["conversationSummary"].strip():
            summary = item["conversationSummary"].strip()
        text = _content(message.get("content"))
        if role == "user":
            if text:
                out.append(Message(USER, text, id=mid))
        elif role == "assistant":
            if text:
                out.append(Message(ASSISTANT, text, id=mid))
            calls = message.get("toolCalls") or [s.get("toolCall") for s in _states(item)]
            for call in calls if isinstance(calls, list) else []:
                out.extend(_call(mid, call, states, answered))
        elif role == "tool":
            state = states.get(message["toolCallId"], {}) if _is_result(message) else {}
            failed = state.get("status") == "errored" or bool(OUTPUT_FAILURE.search(text))
            name = _call_name(state.get("toolCall"))
            out.append(Message(TOOL, excerpt(text), id=mid, tool=name, is_error=failed))
        elif role not in ("thinking", "system"):
            batch.skip("unknown message role", f"{where} (history {index})")
    return out, summary


def _is_result(message: dict[str, Any]) -> bool:
    return message.get("role") == "tool" and isinstance(message.get("toolCallId"), str)


def _states(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Tool call states of a history item (a list now; a single ``toolCallState`` in older versions)."""
    states = item.get("toolCallStates")
    if not isinstance(states, list):
        states = [item["toolCallState"]] if isinstance(item.get("toolCallState"), dict) else []
    return [s for s in states if isinstance(s, dict)]


def _call(mid: str, call: Any, states: dict[str, dict[str, Any]], answered: set[str]) -> list[Message]:
    if not isinstance(call, dict):
        return []
    name = _call_name(call)
    if not name:
        return []
    tcid = str(call["id"]) if isinstance(call.get("id"), str) else name
    function = call["function"]  # a dict: _call_name found the name in it
    args = loose_json(function.get("arguments"), keep_too_deep=False)
    command = args.get("command") if isinstance(args, dict) and "terminal" in name.lower() else None
    if isinstance(command, str) and command:
        rendered = command
    else:
        command = None
        rendered = _render_args(args)
    out = [Message(TOOL, rendered, id=f"{mid}:{tcid}", tool=name, command=command)]
    state = states.get(tcid)
    if state is not None and tcid not in answered:
        # No tool message carries the result: the call's state holds it (or says it failed).
        output = _context_text(state.get("output"))
        failed = state.get("status") == "errored"
        if output or failed:
            text = excerpt(output or "errored")
            out.append(Message(TOOL, text, id=f"{mid}:{tcid}:result", tool=name, is_error=failed))
        elif state.get("status") == "canceled":
            out.append(Message(TOOL, "canceled", id=f"{mid}:{tcid}:result", tool=name))
    return out


def _call_name(call: Any) -> str | None:
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) and name else None


def _content(value: Any) -> str:
    """A message's text: a string, or the text parts of a part list (images are dropped)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        parts = [
            p["text"]
            for p in value
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return "\n".join(parts).strip()
    return ""


def _context_text(items: Any) -> str:
    """The text of a list of context items (``{name, description, content}``), as tool outputs are stored."""
    if not isinstance(items, list):
        return ""
    return "\n".join(i["content"] for i in items if isinstance(i, dict) and isinstance(i.get("content"), str)).strip()


def _render_args(args: Any) -> str:
    if isinstance(args, str):
        return excerpt(args)
    if not isinstance(args, dict):
        return ""
    return excerpt(render_input(args, limit=_ARG_LIMIT, fold_space=False))


def _title(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() and value.strip() != _UNTITLED else None


def _time(value: Any) -> str | None:
    """Milliseconds since the epoch, as a number or (in the index) a string of digits."""
    # isascii: str.isdigit() is also true for "²", which int() refuses.
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    return epoch_to_utc(value)
