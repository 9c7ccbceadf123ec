"""Cline (and Roo Code, its fork): one directory per task, rewritten whole as the task goes on.

Layout (LOG-FORMATS.md §6): ``<VS Code user dir>/globalStorage/<extension id>/tasks/<taskId>/`` with
``api_conversation_history.json`` (the conversation as Anthropic ``MessageParam[]``, each entry carrying
``ts`` in epoch ms), ``ui_messages.json`` (what the panel showed), ``task_metadata.json`` (model usage),
Roo's ``history_item.json`` (``task``, ``workspace``) and Cline's index ``state/taskHistory.json``
(``task``, ``cwdOnTaskInitialization``, ``modelId``) beside ``tasks/``. Cline's CLI and newer extension also
keep task directories under ``~/.cline/data`` (``CLINE_DIR``, ``CLINE_DATA_DIR``).

The API history is the conversation. Older versions wrote tool calls as XML in the assistant's text
(``<execute_command><command>…``) and their results as user text (``[read_file for 'x'] Result:``);
newer ones use native ``tool_use``/``tool_result`` blocks. Both become ``tool`` messages. Dropped as
noise: ``<environment_details>`` and mention expansions (file, folder, diagnostics), ``<thinking>``
and reasoning blocks, images, ``[TASK RESUMPTION]`` and ``[ERROR] …`` prompts the extension injects,
``[Response interrupted …]`` markers, and tool output beyond its excerpt. The ``<task>`` wrapper is
removed but the task text kept; ``<feedback>``/``<answer>`` the person typed inside a tool result
become user messages. ``attempt_completion``/``ask_followup_question`` carry words for the person, so
their text is an assistant message rather than a tool call.

The Cline SDK (2026-06+) keeps ``~/.cline/data/sessions/<id>/<id>.messages.json``
(``CLINE_SESSION_DATA_DIR``), documented as ``{version: 1, updated_at, sessionId, messages[]}``. No real
file has been seen: the reader assumes Anthropic-shaped messages as in the task directories, takes
the working directory from the ``<id>.json`` manifest (``cwd``/``workspace_root``) when present, and
is to be treated as unverified.

Files are rewritten whole, so the cursor keeps how many messages were read and a digest of them:
a re-read returns the messages after those, or the whole task with ``restart=True`` when what was
read before changed (a resumed task rewrites its last user message; a condensed one drops some).
Messages have no ids of their own: ``<index>`` of the API entry, ``<index>.<n>`` for the n-th message
made from one entry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from engram_cli.ingest import files
from engram_cli.ingest.base import (
    ASSISTANT,
    TOOL,
    USER,
    Batch,
    Cursor,
    Importer,
    Message,
    Session,
    clip,
    drop_tagged,
    excerpt,
    optional_json,
)
from engram_cli.ingest.common import epoch_to_utc, messages_digest, render_input, since_last_read
from engram_cli.timeutil import to_iso

API_FILE = "api_conversation_history.json"
SDK_SUFFIX = ".messages.json"
CLINE_EXTENSION = "saoudrizwan.claude-dev"
ROO_EXTENSION = "rooveterinaryinc.roo-cline"

# Editors built on VS Code keep extension data in the same place under their own name.
EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
# Remote and browser flavours (SSH, WSL, Codespaces) keep a user directory in the home.
SERVER_DIRS = (".vscode-server", ".vscode-server-insiders", ".vscode-remote", ".cursor-server", ".windsurf-server")

# Blocks the extension adds to user turns: editor state and the expansion of @-mentions.
INJECTED_TAGS = ("environment_details", "file_content", "folder_content", "workspace_diagnostics")
# Wrappers around words the person typed: the tags go, the text stays.
WRAPPER = re.compile(r"</?(?:task|user_message|feedback|answer)>")
# Words the person typed inside a tool result (approval feedback, an answer to a question).
TYPED = re.compile(r"<(feedback|answer|user_message)>\s*(.*?)\s*</\1>", re.DOTALL)
# Boilerplate before such feedback; a denial stays, as it says the tool did not run.
APPROVAL_LINE = re.compile(r"^The user (?:approved this operation|has provided)[^\n]*$\n?", re.MULTILINE)
RESULT_HEADER = re.compile(r"^\[([a-z_]+)\b(.*?)\] Result:", re.DOTALL)
INTERRUPTED = re.compile(r"^\[Response interrupted[^\n]*\]\s*$", re.MULTILINE)
CWD_LINE = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")

# Tools of the XML era (Cline until native tool use, Roo until 3.43); an unknown tag stays prose.
XML_TOOLS = (
    "execute_command", "read_file", "write_to_file", "replace_in_file", "apply_diff", "insert_content",
    "search_and_replace", "search_files", "list_files", "list_code_definition_names", "codebase_search",
    "browser_action", "use_mcp_tool", "access_mcp_resource", "ask_followup_question", "attempt_completion",
    "switch_mode", "new_task", "fetch_instructions", "plan_mode_respond", "act_mode_respond",
    "load_mcp_documentation", "web_fetch", "condense", "summarize_task", "new_rule", "report_bug",
    "update_todo_list", "run_slash_command", "generate_image",
)  # fmt: skip
XML_TOOL = re.compile(r"<(" + "|".join(XML_TOOLS) + r")>")
XML_PARAM = re.compile(r"<([a-z_]+)>(.*?)(?:</\1>|\Z)", re.DOTALL)
# Tools whose input is words for the person: the parameter holding them.
SPOKEN = {"attempt_completion": "result", "ask_followup_question": "question", "plan_mode_respond": "response",
          "act_mode_respond": "response"}  # fmt: skip
COMMAND_TOOLS = ("execute_command", "bash")
# Failure markers the extension writes into any tool result.
TOOL_FAILED = re.compile(
    r"The tool execution failed|^\s*<error>|denied this operation|^\[ERROR\]|Error executing", re.MULTILINE
)
# Signs of a failed command in its output.
COMMAND_FAILED = re.compile(
    r"Exit code: [1-9]\d*|Command execution was not successful|Traceback \(most recent call last\)|\bFAILED\b"
    r"|npm ERR!|Command failed with exit code"
)
PARAM_CHARS = 200
TITLE_CHARS = 120


def _when(value: Any) -> str | None:
    """ISO time of an epoch in ms (or s) or an ISO string; None when it is not a time."""
    if isinstance(value, str) and value:
        # Not common.iso_to_utc: this reading turns every "Z" into an offset and refuses a final "z",
        # so the shared one would accept (and date) values this importer has always left undated.
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return to_iso(moment)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return epoch_to_utc(value, millis=value > 1e11)  # the extension writes ms; seconds are taken too
    return None


def _title(text: str | None) -> str | None:
    """First non-empty line of a task's text, cut short: the task list shows it as the title."""
    for line in (text or "").splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return clip(line, TITLE_CHARS)
    return None


def _leaves(body: str, depth: int = 0) -> list[tuple[str, str]]:
    """The innermost ``<name>value</name>`` pairs of an XML tool call (Roo nests read_file's paths)."""
    found: list[tuple[str, str]] = []
    for match in XML_PARAM.finditer(body):
        name, value = match.group(1), match.group(2)
        # Real calls nest three deep; a text nesting tags without end must not exhaust the stack.
        inner = _leaves(value, depth + 1) if "<" in value and depth < 8 else []
        found.extend(inner or [(name, value.strip())])
    return found


def _failed(tool: str, output: str) -> bool:
    if TOOL_FAILED.search(output):
        return True
    return tool in COMMAND_TOOLS and bool(COMMAND_FAILED.search(output))


@dataclass
class _Conversation:
    """Turns API history entries into messages, remembering what later entries need."""

    path: Path
    batch: Batch
    messages: list[Message] = field(default_factory=list)
    tool_names: dict[str, str] = field(default_factory=dict)  # tool_use id -> tool name
    summary: str | None = None
    model: str | None = None
    project: str | None = None  # from the environment details, when no metadata names it
    first_at: str | None = None
    last_at: str | None = None

    def add(self, index: int, entry: Any) -> None:
        where = f"{self.path}:{index}"
        if not isinstance(entry, dict):
            self.batch.skip("not an object", where)
            return
        role, content = entry.get("role"), entry.get("content")
        if role is None and entry.get("type") == "reasoning":
            return  # Roo keeps OpenAI reasoning items (encrypted) between the turns
        if role not in (USER, ASSISTANT):
            self.batch.skip("unknown role", where)
            return
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            self.batch.skip("wrong type", where)
            return
        at = _when(entry.get("ts"))
        if at:
            self.first_at = self.first_at or at
            self.last_at = at
        info = entry.get("modelInfo")
        if isinstance(info, dict) and isinstance(info.get("modelId"), str):
            self.model = info["modelId"]
        if role == ASSISTANT and entry.get("isSummary") is True:
            # Roo's condensed summary of the conversation so far: the tool's own summary.
            self.summary = self._result_text(content)
            return
        made = self._user(content, where) if role == USER else self._assistant(content, where)
        for n, message in enumerate(made):
            message.id = str(index) if n == 0 else f"{index}.{n}"
            message.at = at
        self.messages.extend(made)

    # -- user turns: the person's words, tool results, injected context --------------------------

    def _user(self, blocks: list[Any], where: str) -> list[Message]:
        out: list[Message] = []
        awaiting: str | None = None  # Roo writes a result's header and body as two text blocks
        for block in blocks:
            if not isinstance(block, dict):
                self.batch.skip("wrong type", where)
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    self.batch.skip("wrong type", where)
                    continue
                awaiting = self._user_text(text, awaiting, out)
            elif kind == "tool_result":
                name = self.tool_names.get(str(block.get("tool_use_id")), "tool")
                body = self._result_text(block.get("content"))
                out.extend(self._result(name, body, failed=block.get("is_error") is True))
            elif kind in ("image", "document"):
                continue
            else:
                self.batch.skip("unknown block type", where)
        return out

    def _user_text(self, raw: str, awaiting: str | None, out: list[Message]) -> str | None:
        if self.project is None and (found := CWD_LINE.search(raw)):
            self.project = found.group(1)
        text = drop_tagged(raw, *INJECTED_TAGS)
        if not text:
            return awaiting
        header = RESULT_HEADER.match(text)
        if header:
            body = text[header.end() :].strip()
            if not body:
                return header.group(1)
            out.extend(self._result(header.group(1), body))
            return None
        if awaiting:
            out.extend(self._result(awaiting, text))
            return None
        if text.startswith("[TASK RESUMPTION]"):
            # Injected on resume; only words the person added on resuming are theirs.
            out.extend(Message(role=USER, text=m.group(2)) for m in TYPED.finditer(text) if m.group(2))
            return None
        if text.startswith("[ERROR]"):
            return None  # the extension scolding the model ("You did not use a tool …")
        text = WRAPPER.sub("", text).strip()
        if text:
            out.append(Message(role=USER, text=text))
        return None

    @staticmethod
    def _result_text(content: Any) -> str:
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
        return ""

    def _result(self, tool: str, body: str, *, failed: bool = False) -> list[Message]:
        body = drop_tagged(body, *INJECTED_TAGS)
        typed = [Message(role=USER, text=m.group(2)) for m in TYPED.finditer(body) if m.group(2)]
        out: list[Message] = []
        if tool not in SPOKEN:  # the "result" of a question or a completion is only the person's reply
            output = APPROVAL_LINE.sub("", TYPED.sub("", body)).strip()
            if output or failed:
                out.append(
                    Message(role=TOOL, text=excerpt(output), tool=tool, is_error=failed or _failed(tool, output))
                )
        return out + typed

    # -- assistant turns: prose, XML or native tool calls ---------------------------------------

    def _assistant(self, blocks: list[Any], where: str) -> list[Message]:
        out: list[Message] = []
        for block in blocks:
            if not isinstance(block, dict):
                self.batch.skip("wrong type", where)
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    self.batch.skip("wrong type", where)
                    continue
                out.extend(self._assistant_text(text))
            elif kind == "tool_use":
                name, params = block.get("name"), block.get("input")
                if not isinstance(name, str) or not isinstance(params, dict):
                    self.batch.skip("wrong type", where)
                    continue
                self.tool_names[str(block.get("id"))] = name
                out.extend(self._call(name, {str(k): v for k, v in params.items()}))
            elif kind in ("thinking", "redacted_thinking", "reasoning", "image"):
                continue
            else:
                self.batch.skip("unknown block type", where)
        return out

    def _assistant_text(self, raw: str) -> list[Message]:
        text = INTERRUPTED.sub("", drop_tagged(raw, "thinking"))
        out: list[Message] = []
        position = 0
        while (call := XML_TOOL.search(text, position)) is not None:
            name = call.group(1)
            if prose := text[position : call.start()].strip():
                out.append(Message(role=ASSISTANT, text=prose))
            close = text.find(f"</{name}>", call.end())
            # An unclosed call is one the extension cut short; its parameters run to the end.
            body = text[call.end() :] if close < 0 else text[call.end() : close]
            position = len(text) if close < 0 else close + len(name) + 3
            params: dict[str, Any] = {}
            for key, value in _leaves(body):
                params.setdefault(key, value)
            out.extend(self._call(name, params))
        if prose := text[position:].strip():
            out.append(Message(role=ASSISTANT, text=prose))
        return out

    @staticmethod
    def _call(name: str, params: Mapping[str, Any]) -> list[Message]:
        if name in SPOKEN:
            said = params.get(SPOKEN[name])
            return [Message(role=ASSISTANT, text=said.strip())] if isinstance(said, str) and said.strip() else []
        command = params.get("command")
        if name in COMMAND_TOOLS and isinstance(command, str) and command.strip():
            return [Message(role=TOOL, text=command.strip(), tool=name, command=command.strip())]
        return [Message(role=TOOL, text=excerpt(render_input(params, limit=PARAM_CHARS, separator=" ")), tool=name)]


def _load(path: Path, batch: Batch) -> Any:
    """The JSON document in ``path``; None (counted) when it is not one, e.g. caught mid-rewrite."""
    raw = files.read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        batch.skip("invalid UTF-8", str(path))
        return None
    try:
        return json.loads(text)
    except ValueError:
        batch.skip("invalid JSON", str(path))
        return None


@lru_cache(maxsize=4)
def _history_index(path: str, mtime_ns: int, size: int) -> dict[str, dict[str, Any]]:
    """Cline's ``state/taskHistory.json`` by task id; cached per file version, as every task reads it."""
    items = optional_json(Path(path))
    if not isinstance(items, list):
        return {}
    return {str(item["id"]): item for item in items if isinstance(item, dict) and "id" in item}


@dataclass
class _TaskInfo:
    """What the task's metadata files say about it; every field may be missing."""

    title: str | None = None
    project: str | None = None
    model: str | None = None
    started_at: str | None = None
    updated_at: str | None = None


def _task_info(task_dir: Path) -> _TaskInfo:
    info = _TaskInfo()
    index = task_dir.parent.parent / "state" / "taskHistory.json"
    item: Any = None
    try:
        st = index.stat()
        item = _history_index(str(index), st.st_mtime_ns, st.st_size).get(task_dir.name)
    except OSError:
        pass
    if item is None:
        item = optional_json(task_dir / "history_item.json")  # Roo
    if isinstance(item, dict):
        info.title = _title(item.get("task")) if isinstance(item.get("task"), str) else None
        for key in ("cwdOnTaskInitialization", "workspace", "shadowGitConfigWorkTree"):
            if isinstance(item.get(key), str) and item[key]:
                info.project = item[key]
                break
        info.model = item.get("modelId") if isinstance(item.get("modelId"), str) else None
        info.updated_at = _when(item.get("ts"))
    metadata = optional_json(task_dir / "task_metadata.json")
    usage = metadata.get("model_usage") if isinstance(metadata, dict) else None
    if isinstance(usage, list) and usage and isinstance(usage[-1], dict) and isinstance(usage[-1].get("model_id"), str):
        info.model = usage[-1]["model_id"]
    return info


def _ui_times(task_dir: Path) -> tuple[str | None, str | None]:
    """First and last ``ts`` of the panel's messages, for API histories written without ``ts``."""
    messages = optional_json(task_dir / "ui_messages.json")
    if not isinstance(messages, list):
        return None, None
    times = [t for m in messages if isinstance(m, dict) and (t := _when(m.get("ts")))]
    return (min(times), max(times)) if times else (None, None)


def _sdk_info(path: Path, document: dict[str, Any]) -> _TaskInfo:
    """Unverified: the SDK's envelope and its ``<id>.json`` manifest beside it."""
    info = _TaskInfo(updated_at=_when(document.get("updated_at")))
    manifest = optional_json(path.with_name(path.name.removesuffix(SDK_SUFFIX) + ".json"))
    if isinstance(manifest, dict):
        for key in ("cwd", "workspace_root"):
            if isinstance(manifest.get(key), str) and manifest[key]:
                info.project = manifest[key]
                break
        if isinstance(manifest.get("title"), str):
            info.title = _title(manifest["title"])
    return info


def _editor_user_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    """Every VS Code-style ``User`` directory this machine may have (Linux, macOS, Windows, remote)."""
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    roots = [config, home / "Library" / "Application Support"]
    if env.get("APPDATA"):
        roots.append(Path(env["APPDATA"]))
    dirs = [root / editor / "User" for root in roots for editor in EDITORS]
    dirs += [home / server / "data" / "User" for server in SERVER_DIRS]
    if env.get("VSCODE_PORTABLE"):
        dirs.append(Path(env["VSCODE_PORTABLE"]) / "user-data" / "User")
    return dirs


def _task_files(tasks: Path) -> list[Path]:
    return files.glob(tasks, f"*/{API_FILE}") if tasks.is_dir() else []


@dataclass
class TaskImporter:
    """Reads the task directories of one Cline-family extension (and, for Cline, its SDK sessions)."""

    name: str
    agent: str
    description: str
    extension: str  # the extension's globalStorage directory, lower case
    cline_home: bool = False  # also ~/.cline/data: Cline's CLI, newer extension and SDK

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        found: list[Path] = []
        for user in _editor_user_dirs(env, home):
            storage = user / "globalStorage"
            if storage.is_dir():
                # Directory names are lower case on disk but compare case-insensitively on macOS/Windows.
                for ext in files.children(storage):
                    if ext.name.lower() == self.extension:
                        found += _task_files(ext / "tasks")
        if self.cline_home:
            cline_dir = Path(env["CLINE_DIR"]) if env.get("CLINE_DIR") else home / ".cline"
            data = Path(env["CLINE_DATA_DIR"]) if env.get("CLINE_DATA_DIR") else cline_dir / "data"
            found += _task_files(data / "tasks")
            sessions = Path(env["CLINE_SESSION_DATA_DIR"]) if env.get("CLINE_SESSION_DATA_DIR") else data / "sessions"
            if sessions.is_dir():
                found += sorted(
                    p
                    for p in sessions.glob(f"*/*{SDK_SUFFIX}")
                    if p.name == p.parent.name + SDK_SUFFIX and files.candidate(p)
                )
        return files.unique(found, resolved=True)

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path] if self._ours(path) else []
        if files.candidate(path / API_FILE):
            return [path / API_FILE]
        found = files.glob(path, f"**/{API_FILE}")
        if self.cline_home:
            found += files.glob(path, f"**/*{SDK_SUFFIX}")
        return found

    def _ours(self, path: Path) -> bool:
        return path.name == API_FILE or (self.cline_home and path.name.endswith(SDK_SUFFIX))

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()
        if cursor is not None and cursor.unchanged(st):
            return Batch([], cursor)
        # Until the file parses, the old cursor stands: a file caught mid-rewrite is read again next time.
        batch = Batch([], cursor or Cursor(path=str(path)))
        document = _load(path, batch)
        if document is None:
            return batch
        sdk = path.name.endswith(SDK_SUFFIX)
        if sdk and isinstance(document, dict) and isinstance(document.get("messages"), list):
            entries = document["messages"]
            key = str(document.get("sessionId") or path.name.removesuffix(SDK_SUFFIX))
            info = _sdk_info(path, document)
        elif not sdk and isinstance(document, list):
            entries, key, info = document, path.parent.name, _task_info(path.parent)
        else:
            batch.skip("unexpected JSON shape", str(path))
            return batch
        conversation = _Conversation(path, batch)
        for index, entry in enumerate(entries):
            conversation.add(index, entry)
        messages = conversation.messages
        started, updated = conversation.first_at, conversation.last_at or info.updated_at
        if started is None and not sdk:
            started, ui_last = _ui_times(path.parent)
            updated = updated or ui_last
        first_user = next((m.text for m in messages if m.role == USER), None)
        session = Session(
            source=self.name,
            key=key,
            path=str(path),
            project=info.project or conversation.project,
            title=info.title or _title(first_user),
            summary=conversation.summary,
            started_at=started or info.started_at,
            updated_at=updated,
            model=conversation.model or info.model,
        )
        seen = cursor.state if cursor is not None else {}
        count = int(seen.get("count", 0))
        if cursor is None or count == 0:
            session.messages = messages
        else:
            session.messages, session.restart = since_last_read(messages, count, seen.get("digest"), messages_digest)
        if session.messages or session.restart:
            batch.sessions.append(session)
        last = messages[-1] if messages else None
        batch.cursor = Cursor(
            path=str(path),
            inode=st.st_ino,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            last_id=last.id if last else None,
            last_at=conversation.last_at,
            state={"count": len(messages), "digest": messages_digest(messages)},
        )
        return batch


IMPORTER: Importer = TaskImporter(
    name="cline",
    agent="cline",
    description="Cline tasks (VS Code globalStorage saoudrizwan.claude-dev, ~/.cline/data)",
    extension=CLINE_EXTENSION,
    cline_home=True,
)
