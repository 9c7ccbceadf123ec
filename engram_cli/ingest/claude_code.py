"""Claude Code transcripts: ``projects/<slug>/<sessionId>.jsonl`` under ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``.

One file is one session (key: the session id in the file name). Each line is a JSON
record; ``user``/``assistant`` records carry an Anthropic API ``message``. What is kept:
the person's prompts, the assistant's prose, tool calls (Bash → ``command``) and their
results (excerpted, ``is_error`` from the result's flag or a failure in shell output).

Decisions, and why:

- **Sub-agents are skipped.** Inline sidechain lines (``isSidechain``), the older
  ``agent-*.jsonl`` files beside sessions and the newer ``<sessionId>/subagents/`` files
  are the work of a helper the main agent started. Their prompt was written by the
  agent, not the person (as a ``user`` message it would pass for the task asked), the
  prompt is already in the parent's Task call and their report comes back as the Task
  result; what remains is file reading and searching, which is not worth remembering.
- **Rewinds keep the branch that continues.** A rewind writes a second prompt under the
  same ``parentUuid``; of two prompts under one parent, the one whose subtree reaches
  further into the file is the conversation, the other branch is dropped. Only prompts
  count as siblings: tool results and parallel tool calls share parents legitimately.
  A rewind into lines returned by an earlier read re-reads the file and returns the
  whole session with ``restart=True``. (A rewind to before the very first prompt leaves
  two roots, which cannot be told from files that write no parent links; it is kept.)
- **Replays are dropped.** A resumed or forked session starts with a copy of the parent's
  lines, still carrying the parent's ``sessionId``; they belong to the parent's own file.
  A ``uuid`` seen twice is read once.
- **Prompts typed while the agent works** are written only as a ``queued_command``
  attachment (the ``queue-operation`` lines repeat the same words as bookkeeping): they
  are kept as user messages when their ``commandMode`` is ``prompt``.
- **Summaries go to the session they point into.** Claude Code writes ``summary`` records into
  whichever file is current, with ``leafUuid`` naming the summarised session's last
  message. A leaf among this file's own lines makes it this session's summary; any other
  leaf is looked for in the other transcripts of the same project folder (their tails
  first, where a last message is), and the summary comes back as a session of that file
  with no messages: the loader adds it to that session's digest and rewrites its episode
  (or the episode takes it up when that file is read later in the run).
  ``custom-title`` (a rename) beats ``ai-title`` for the title.
- **Compaction summaries are not prompts** (``isCompactSummary``): they retell what the
  file already holds before the boundary. Their "Primary Request and Intent" is the tool's
  statement of the task, kept as the title when the session has none (a session continued
  in a new file starts with it, before any prompt).
- **Slash commands** keep the person's words (``/review the auth module``); a bare
  command or a housekeeping one (``/clear``, ``/model``…) is noise, and so is its
  expansion (``isMeta``). ``<bash-input>`` (the ``!`` shell mode) becomes a ``shell``
  message.
- **``history.jsonl`` is not read**: it holds only the typed prompts, which the
  transcripts already have with their answers; reading both would count every prompt twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from engram_cli import jsonl
from engram_cli.ingest import files
from engram_cli.ingest.base import (
    ASSISTANT,
    SHELL,
    TOOL,
    USER,
    Batch,
    Cursor,
    Message,
    Session,
    complete_lines,
    drop_tagged,
    excerpt,
    json_line,
)
from engram_cli.ingest.common import SHELL_FAILURE, UUID, clip_command, iso_to_utc, render_input

NAME = "claude-code"

# Record types Claude Code writes that carry nothing to remember; anything else unknown is counted.
_BOOKKEEPING = frozenset(
    {
        "system",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "agent-name",
        "last-prompt",
        "pr-link",
        "mode",
        "permission-mode",
        "agent-setting",
        "tag",
    }
)

# Tools whose input is a shell command.
_SHELL_TOOLS = frozenset({"Bash"})

# Built-in commands that manage the tool itself; with or without arguments they are not a request.
_HOUSEKEEPING = frozenset(
    {
        "add-dir", "agents", "bashes", "bug", "clear", "compact", "config", "context", "continue", "cost",
        "doctor", "exit", "export", "feedback", "help", "hooks", "ide", "install-github-app", "login",
        "logout", "mcp", "memory", "migrate-installer", "model", "output-style", "permissions", "plugin",
        "privacy-settings", "quit", "release-notes", "rename", "resume", "rewind", "sandbox", "skills",
        "stats", "status", "statusline", "terminal-setup", "theme", "todos", "upgrade", "usage", "vim",
    }
)  # fmt: skip

# Blocks Claude Code injects into user text and tool results.
_INJECTED = (
    "system-reminder",
    "local-command-caveat",
    "local-command-stdout",
    "local-command-stderr",
    "task-notification",
    "command-message",
    "command-name",
    "command-args",
    "bash-stdout",
    "bash-stderr",
    "user-prompt-submit-hook",
)

# A compaction summary's statement of the task.
_INTENT = re.compile(r"Primary Request and Intent:\s*(.+)")
# Where a summary's leaf is looked for in the other transcripts: their last bytes, then whole files up to a size.
_SUMMARY_TAIL = 64 * 1024
_MAX_SUMMARY_SEARCH = 64 * 1024 * 1024
_COMMAND_NAME = re.compile(r"<command-name>\s*/?(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)
_PERSISTED = re.compile(r"<persisted-output>(.*?)(?:</persisted-output>|$)", re.S)
_PERSISTED_NOTICE = re.compile(
    r"^\s*(?:Output too large[^\n]*|Full output saved to:[^\n]*|Output has been saved to[^\n]*|Preview[^\n]*:)\s*$",
    re.M,
)


@dataclass
class _Record:
    lineno: int
    obj: dict[str, Any]
    uuid: str | None
    parent: str | None

    @cached_property
    def prompt(self) -> bool:
        """The person said something here (not a tool result, injected text or sub-agent prompt)."""
        return _is_prompt(self.obj)


class ClaudeCodeImporter:
    name = NAME
    agent = "claude-code"
    description = "Claude Code transcripts (~/.claude/projects/*/*.jsonl)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """Session transcripts under ``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` and ``~/.config/claude``."""
        configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
        roots = [Path(configured).expanduser()] if configured else [home / ".claude", home / ".config" / "claude"]
        found: list[Path] = []
        for root in roots:
            projects = root / "projects"
            if projects.is_dir():
                found += sorted(p for p in projects.glob("*/*.jsonl") if _is_transcript(p) and files.candidate(p))
        # ~/.config/claude is often a link to ~/.claude: read each file once.
        return sorted(files.unique(found))

    def files(self, path: Path) -> list[Path]:
        """``path`` itself when it is a transcript, else the transcripts under it."""
        if path.is_file():
            return [path] if _is_transcript(path) else []
        if not path.is_dir():
            return []
        return sorted(p for p in path.rglob("*.jsonl") if files.candidate(p) and _is_transcript(p))

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        """New messages of one transcript since ``cursor`` (the whole session after a rewind or a new file)."""
        stat = path.stat()
        if cursor is not None and cursor.unchanged(stat):
            return Batch([], cursor)
        if cursor is None or cursor.replaced(stat):
            return _Reader(path, stat, 0, {}, restart=cursor is not None).run()
        reader = _Reader(path, stat, cursor.offset, json.loads(json.dumps(cursor.state)), restart=False)
        batch = reader.run()
        if reader.rewound:
            # A new prompt branches off a line returned by an earlier read: what was said changed.
            return _Reader(path, stat, 0, {}, restart=True).run()
        return batch


def _is_transcript(path: Path) -> bool:
    """A session transcript, not the prompt history nor a sub-agent's file."""
    return (
        path.suffix == ".jsonl"
        and path.name != "history.jsonl"
        and not path.name.startswith("agent-")
        and path.parent.name != "subagents"
    )


class _Reader:
    """One pass over a transcript from a byte offset; ``state`` carries what later lines need."""

    def __init__(self, path: Path, stat: Any, offset: int, state: dict[str, Any], *, restart: bool) -> None:
        self.path = path
        self.offset = offset
        self.state = state
        self.restart = restart
        self.batch = Batch(
            [],
            Cursor(path=str(path), inode=stat.st_ino, size=stat.st_size, mtime_ns=stat.st_mtime_ns, offset=offset),
        )
        self.messages: list[Message] = []
        self.groups: dict[str, Message] = {}  # assistant message id -> its merged message in this read
        self.changed = False  # title or summary learnt in this read
        self.rewound = False  # a prompt in this read branches off a line an earlier read returned
        self.previous_msg = state.get("last_msg")  # the assistant response the earlier read ended in
        self.foreign: dict[str, str] = {}  # leafUuid -> summary, for leaves not in this file

    def run(self) -> Batch:
        records = self._records()
        key = self._key(records)
        own = key if UUID.fullmatch(key) else None
        records = self._own(records, own)
        if self.offset and self._rewinds_earlier(records):
            self.rewound = True
            return self.batch
        dropped = _abandoned(records)
        kept = [r for r in records if r.uuid is None or r.uuid not in dropped]
        uuids = {r.uuid for r in kept if r.uuid}
        for record in kept:
            self._record(record, uuids, own)
        self._remember_prompts(kept)
        last = [r.uuid for r in kept if r.uuid and r.obj.get("type") in ("user", "assistant")]
        if last:
            self.state["last_uuid"] = last[-1]
        self.batch.cursor.state = self.state
        if self.messages or self.restart or self.changed:
            self.batch.sessions.append(self._session(key))
        if self.foreign:
            self.batch.sessions += _summarised(self.path, self.foreign)
        return self.batch

    # -- lines ---------------------------------------------------------------------------------

    def _records(self) -> list[_Record]:
        records: list[_Record] = []
        lines = self.state.get("lines", 0)
        for lineno, end, raw in complete_lines(self.path, self.offset, self.batch, lines):
            self.batch.cursor.offset = end
            self.state["lines"] = lineno
            obj = json_line(raw, self.batch, f"{self.path}:{lineno}")
            if obj is None:
                continue
            uuid = obj.get("uuid")
            parent = obj.get("parentUuid")
            records.append(
                _Record(
                    lineno,
                    obj,
                    uuid if isinstance(uuid, str) and uuid else None,
                    parent if isinstance(parent, str) and parent else None,
                )
            )
        return records

    def _key(self, records: list[_Record]) -> str:
        """The session id: the file name's, else the first one recorded (for renamed copies)."""
        stem = self.path.stem
        if UUID.fullmatch(stem):
            return stem
        if "key" not in self.state:
            ids = (r.obj.get("sessionId") for r in records)
            self.state["key"] = next((i for i in ids if isinstance(i, str) and i), stem)
        return str(self.state["key"])

    def _own(self, records: list[_Record], own: str | None) -> list[_Record]:
        """This session's records: no replayed parent lines, no sub-agent lines, each uuid once."""
        recent: list[str] = list(self.state.get("recent", []))
        seen = set(recent)
        kept: list[_Record] = []
        for record in records:
            session = record.obj.get("sessionId")
            if own and isinstance(session, str) and session and session != own:
                continue
            if record.obj.get("isSidechain") is True:
                continue
            if record.uuid is not None:
                if record.uuid in seen:
                    continue
                seen.add(record.uuid)
                recent.append(record.uuid)
            kept.append(record)
        # Duplicated lines are written close together: a short window catches them across reads.
        self.state["recent"] = recent[-64:]
        return kept

    def _rewinds_earlier(self, records: list[_Record]) -> bool:
        earlier = set(self.state.get("prompt_parents", []))
        return any(r.parent in earlier for r in records if r.prompt)

    def _remember_prompts(self, records: list[_Record]) -> None:
        parents: list[str] = list(self.state.get("prompt_parents", []))
        parents.extend(r.parent for r in records if r.parent and r.prompt)
        self.state["prompt_parents"] = parents[-2000:]

    # -- records -------------------------------------------------------------------------------

    def _record(self, record: _Record, uuids: set[str], own: str | None) -> None:
        obj = record.obj
        kind = obj.get("type")
        where = f"{self.path}:{record.lineno}"
        at = iso_to_utc(obj.get("timestamp"))
        if kind in ("user", "assistant"):
            self._context(obj, at)
            message = obj.get("message")
            if not isinstance(message, dict):
                self.batch.skip("wrong type in message", where)
                return
            if kind == "user":
                self._user(record, message, at, where)
            else:
                self._assistant(record, message, at, where)
        elif kind == "summary":
            leaf, summary = obj.get("leafUuid"), obj.get("summary")
            if not isinstance(leaf, str) or not leaf or not isinstance(summary, str) or not summary.strip():
                return
            if leaf in uuids or leaf == self.state.get("last_uuid"):
                self.state["summary"] = summary.strip()
                self.changed = True
            elif UUID.fullmatch(leaf):
                self.foreign[leaf] = summary.strip()
        elif kind in ("custom-title", "ai-title"):
            self._title(obj, own, custom=kind == "custom-title")
        elif kind == "attachment":
            self._queued(record, at)
        elif isinstance(kind, str) and kind in _BOOKKEEPING:
            return
        else:
            self.batch.skip("unknown record type", where)

    def _context(self, obj: dict[str, Any], at: str | None) -> None:
        cwd = obj.get("cwd")
        if isinstance(cwd, str) and cwd and "project" not in self.state:
            self.state["project"] = cwd
        if at:
            self.state.setdefault("started", at)
            self.state["updated"] = max(at, self.state.get("updated", at))

    def _title(self, obj: dict[str, Any], own: str | None, *, custom: bool) -> None:
        title = obj.get("customTitle" if custom else "aiTitle")
        session = obj.get("sessionId")
        if not isinstance(title, str) or not title.strip():
            return
        if own and isinstance(session, str) and session and session != own:
            return
        if custom or not self.state.get("custom_title"):
            self.state["title"] = title.strip()
            self.state["custom_title"] = custom or bool(self.state.get("custom_title"))
            self.changed = True

    def _user(self, record: _Record, message: dict[str, Any], at: str | None, where: str) -> None:
        obj = record.obj
        if obj.get("isCompactSummary") is True:
            self._compacted(message)
            return
        if obj.get("isMeta") is True:
            return
        blocks = _blocks(message.get("content"))
        if blocks is None:
            self.batch.skip("wrong type in message content", where)
            return
        texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        ident = record.uuid or f"L{record.lineno}"
        if texts:
            spoken = _user_text("\n\n".join(texts))
            if spoken is not None:
                role, text = spoken
                command = text if role == SHELL else None
                self.messages.append(Message(role=role, text=text, id=ident, at=at, command=command))
        for index, block in enumerate(results):
            self._result(block, f"{ident}#{index}" if index else ident, at)

    def _compacted(self, message: dict[str, Any]) -> None:
        """A compaction summary: its statement of the task is the title when the session has none."""
        blocks = _blocks(message.get("content")) or []
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
        intent = _INTENT.search(text)
        if intent and not self.state.get("title"):
            self.state["title"] = intent.group(1).strip()
            self.changed = True

    def _queued(self, record: _Record, at: str | None) -> None:
        """A prompt typed while the agent was busy: it is recorded only as a queued-command attachment."""
        attachment = record.obj.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
            return  # hook output, file deltas and the like
        origin = attachment.get("origin")
        if attachment.get("commandMode", "prompt") != "prompt" or (
            isinstance(origin, dict) and origin.get("kind", "human") != "human"
        ):
            return  # a task notification or another agent, not the person
        blocks = _blocks(attachment.get("prompt"))
        texts = [b["text"] for b in blocks or [] if b.get("type") == "text" and isinstance(b.get("text"), str)]
        spoken = _user_text("\n\n".join(texts)) if texts else None
        if spoken is not None:
            self._context(record.obj, at)
            role, text = spoken
            ident = record.uuid or f"L{record.lineno}"
            self.messages.append(
                Message(role=role, text=text, id=ident, at=at, command=text if role == SHELL else None)
            )

    def _result(self, block: dict[str, Any], ident: str, at: str | None) -> None:
        tools: dict[str, str] = self.state.setdefault("tools", {})
        call = block.get("tool_use_id")
        tool = tools.pop(call, None) if isinstance(call, str) else None
        text = _result_text(block.get("content"))
        failed = block.get("is_error") is True or (tool in _SHELL_TOOLS and bool(SHELL_FAILURE.search(text)))
        self.messages.append(
            Message(role=TOOL, text=excerpt(text) or "(no output)", id=ident, at=at, tool=tool, is_error=failed)
        )

    def _assistant(self, record: _Record, message: dict[str, Any], at: str | None, where: str) -> None:
        model = message.get("model")
        if record.obj.get("isApiErrorMessage") is True or model == "<synthetic>":
            return  # the tool's own error or filler, not the model speaking
        if isinstance(model, str) and model:
            self.state["model"] = model
        blocks = _blocks(message.get("content"))
        if blocks is None:
            self.batch.skip("wrong type in message content", where)
            return
        mid = message.get("id")
        group = mid if isinstance(mid, str) and mid else (record.uuid or f"L{record.lineno}")
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                self._say(group, block["text"], record.lineno, at)
            elif kind in ("tool_use", "server_tool_use"):
                self._call(block, record.lineno, at)
        self.state["last_msg"] = group

    def _say(self, group: str, text: str, lineno: int, at: str | None) -> None:
        text = drop_tagged(text, "system-reminder")
        if not text:
            return
        merged = self.groups.get(group)
        if merged is None:
            # The response began before this read: its first part was already returned.
            ident = f"{group}@L{lineno}" if group == self.previous_msg else group
            merged = self.groups[group] = Message(role=ASSISTANT, text=text, id=ident, at=at)
            self.messages.append(merged)
        elif text not in merged.text:
            merged.text = f"{merged.text}\n\n{text}"

    def _call(self, block: dict[str, Any], lineno: int, at: str | None) -> None:
        name = block.get("name") if isinstance(block.get("name"), str) else "tool"
        call = block.get("id") if isinstance(block.get("id"), str) else None
        tools: dict[str, str] = self.state.setdefault("tools", {})
        if call and call in tools:
            return  # the same block written twice
        arguments = block.get("input")
        command = None
        if name in _SHELL_TOOLS and isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
            command = clip_command(arguments["command"].strip()) or None
        self.messages.append(
            Message(
                role=TOOL,
                text=excerpt(command or render_input(arguments, limit=120, tidy_cut=False)),
                id=call or f"L{lineno}",
                at=at,
                tool=name,
                command=command,
            )
        )
        if call:
            tools[call] = str(name)
            while len(tools) > 200:  # calls whose result never came
                tools.pop(next(iter(tools)))

    def _session(self, key: str) -> Session:
        state = self.state
        return Session(
            source=NAME,
            key=key,
            path=str(self.path),
            messages=self.messages,
            project=state.get("project"),
            title=state.get("title"),
            summary=state.get("summary"),
            started_at=state.get("started"),
            updated_at=state.get("updated"),
            model=state.get("model"),
            restart=self.restart,
        )


def _summarised(path: Path, summaries: dict[str, str]) -> list[Session]:
    """Sessions of the other transcripts in ``path``'s folder that hold a summarised leaf, with that summary.

    A leaf is the summarised session's last message, so each file's tail is searched first; only
    leaves not found there cost a look through whole files (up to a bound).
    """
    left = dict(summaries)
    found: list[Session] = []
    siblings = sorted(p for p in path.parent.glob("*.jsonl") if p != path and _is_transcript(p) and files.candidate(p))
    for whole in (False, True):
        for sibling in siblings:
            if not left:
                return found
            try:
                size = sibling.stat().st_size
                if whole and size > _MAX_SUMMARY_SEARCH:
                    continue
                with files.open_binary(sibling) as fh:
                    fh.seek(0 if whole else max(0, size - _SUMMARY_TAIL))
                    data = fh.read(_MAX_SUMMARY_SEARCH)
            except OSError:
                continue
            for leaf in [leaf for leaf in left if leaf.encode() in data]:
                summary = left.pop(leaf)
                key = sibling.stem if UUID.fullmatch(sibling.stem) else None
                if key is not None:
                    found.append(Session(NAME, key, str(sibling), project=_cwd_near(data, leaf), summary=summary))
    return found


def _cwd_near(data: bytes, leaf: str) -> str | None:
    """The working directory recorded on the line that holds ``leaf``."""
    at = data.find(leaf.encode())
    start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
    obj = jsonl.parse(data[start : end if end >= 0 else len(data)].decode("utf-8", errors="replace"))
    cwd = obj.get("cwd") if isinstance(obj, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None


def _abandoned(records: list[_Record]) -> set[str]:
    """Uuids on branches a rewind left behind: of sibling prompts, all but the one that goes on furthest."""
    siblings: dict[str, list[str]] = {}
    for record in records:
        if record.parent and record.uuid and record.prompt:
            siblings.setdefault(record.parent, []).append(record.uuid)
    forks = {parent: kids for parent, kids in siblings.items() if len(kids) > 1}
    if not forks:
        return set()
    # Parents precede children in the file, so one backward pass gives each subtree's last line.
    reach: dict[str, int] = {}
    for record in reversed(records):
        if record.uuid:
            reach[record.uuid] = max(reach.get(record.uuid, 0), record.lineno)
            if record.parent:
                reach[record.parent] = max(reach.get(record.parent, 0), reach[record.uuid])
    dropped: set[str] = set()
    for kids in forks.values():
        winner = max(kids, key=lambda kid: reach.get(kid, 0))
        dropped.update(kid for kid in kids if kid != winner)
    for record in records:
        if record.uuid and record.parent in dropped:
            dropped.add(record.uuid)
    return dropped


def _is_prompt(obj: dict[str, Any]) -> bool:
    """A ``user`` line with words of the person's: rewinds are told apart by these, never by tool results."""
    if obj.get("type") != "user" or obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
        return False
    message = obj.get("message")
    blocks = _blocks(message.get("content")) if isinstance(message, dict) else None
    if not blocks or any(b.get("type") == "tool_result" for b in blocks):
        return False
    texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    return bool(texts) and _user_text("\n\n".join(texts)) is not None


def _blocks(content: object) -> list[dict[str, Any]] | None:
    """Content blocks of a message (a plain string is one text block); None when the type is wrong."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return None


def _user_text(raw: str) -> tuple[str, str] | None:
    """(role, text) of what the person typed, or None when the text is injected or housekeeping."""
    name = _COMMAND_NAME.search(raw)
    if name:
        args = _COMMAND_ARGS.search(raw)
        words = args.group(1).strip() if args else ""
        command = name.group(1).strip()
        if not words or command in _HOUSEKEEPING:
            return None
        return USER, f"/{command} {words}"
    shell = _BASH_INPUT.search(raw)
    if shell:
        line = shell.group(1).strip()
        return (SHELL, line) if line else None
    text = drop_tagged(raw, *_INJECTED)
    if not text or text.startswith("[Request interrupted"):
        return None
    return USER, text


def _result_text(content: object) -> str:
    """Readable text of a tool result: injected reminders out, spilled output reduced to its preview."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    else:
        text = ""
    text = drop_tagged(text, "system-reminder")
    spilled = _PERSISTED.search(text)
    if spilled:
        # The full output went to tool-results/*.txt; the inline preview is its head, which is what an excerpt keeps.
        text = _PERSISTED_NOTICE.sub("", spilled.group(1))
    return text.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()


IMPORTER = ClaudeCodeImporter()
