"""Cursor chats, kept in the editor's state databases (``state.vscdb``, SQLite, opened read-only).

Cursor stores its chats as JSON values in two key-value tables, ``ItemTable`` and
``cursorDiskKV``, of ``User/globalStorage/state.vscdb`` and of one
``User/workspaceStorage/<hash>/state.vscdb`` per opened folder (``workspace.json`` beside it
names the folder). The layout changed over time, and every generation is read:

- until 2024, in a workspace's ``ItemTable``: ``workbench.panel.aichat.view.aichat.chatdata``
  (chat tabs of user/ai bubbles), ``composer.composerData`` (composers with their
  conversation inline) and ``aiService.prompts`` (what was typed, chat and inline edits);
- since, in the global ``cursorDiskKV``: ``composerData:<id>`` (title, times, model, the list
  of bubble ids) and ``bubbleId:<composer>:<bubble>`` (one message each: type 1 user, 2
  assistant, with thinking and tool calls).

The databases are rewritten in place, so each read compares with what the cursor state
remembers per conversation: a marker that changes with it (``lastUpdatedAt`` and the
bubble count for composers), how many messages were returned and a hash of them. New
messages after an unchanged prefix are returned alone; anything else returns the whole
conversation with ``restart``. Bubbles seldom carry a time: messages then have none, and
the session carries the composer's creation and last-update times.

A composer's folder is found in its user bubbles' ``workspaceUris``, in the global
``composer.composerHeaders`` index, or in the workspace database that lists the composer.

Not read: ``~/.cursor/projects/*/agent-transcripts`` hold the same composer conversations
(the file name is the composer id) without ids, times or model, so reading them too would
count every conversation twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

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
    iso_to_utc,
    loose_json,
    open_read_only,
    render_input,
    since_last_read,
    uri_path,
    utf8,
)

_CHATDATA = "workbench.panel.aichat.view.aichat.chatdata"
_PROMPTS = "aiService.prompts"
_COMPOSERS = "composer.composerData"
_HEADERS = "composer.composerHeaders"
_ITEM_KEYS = (_CHATDATA, _PROMPTS, _COMPOSERS, _HEADERS)
_ARG_LIMIT = 200
# Directories never worth descending into when searching a tree for databases.
_PRUNE = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", "History", "logs", "CachedData"})


class CursorImporter:
    name = "cursor"
    agent = "cursor"
    description = "Cursor chats and composers (Cursor/User/{globalStorage,workspaceStorage/*}/state.vscdb)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """The global and workspace databases of Cursor on macOS, Linux (``XDG_CONFIG_HOME``) and Windows."""
        found: list[Path] = []
        for user_dir in _user_dirs(env, home):
            global_db = user_dir / "globalStorage" / "state.vscdb"
            if files.candidate(global_db):
                found.append(global_db)
            workspaces = user_dir / "workspaceStorage"
            if workspaces.is_dir():
                found.extend(files.glob(workspaces, "*/state.vscdb"))
        return found

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path] if path.suffix == ".vscdb" else []
        found: list[Path] = []
        for top, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _PRUNE)
            found.extend(Path(top) / n for n in sorted(names) if n == "state.vscdb")
        return found

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()
        stamp = _stamp(path, st)
        if cursor is not None and cursor.state.get("stamp") == stamp:
            return Batch([], cursor)
        # With a write-ahead log, new data can sit in "-wal" while the database file itself stays
        # as it was: the cursor then never looks unchanged, and the stamp above decides instead.
        wal = stamp[3] is not None
        fresh = Cursor(path=str(path), inode=st.st_ino, size=st.st_size, mtime_ns=0 if wal else st.st_mtime_ns)
        batch = Batch([], fresh)
        previous: dict[str, Any] = dict(cursor.state.get("conversations", {})) if cursor else {}
        try:
            conn = open_read_only(path)
        except apsw.Error as exc:
            return _unreadable(batch, cursor, path, exc)
        try:
            conn.setbusytimeout(2000)
            conversations = list(_Reader(path, conn, batch).conversations())
            state = _compare(conversations, previous, batch)
        except apsw.Error as exc:
            return _unreadable(batch, cursor, path, exc)
        finally:
            conn.close()
        fresh.state = {"stamp": stamp, "conversations": state}
        return batch


IMPORTER = CursorImporter()


def _user_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    dirs = [home / "Library" / "Application Support" / "Cursor" / "User", config / "Cursor" / "User"]
    if env.get("APPDATA"):
        dirs.append(Path(env["APPDATA"]) / "Cursor" / "User")
    return dirs


def _stamp(path: Path, st: os.stat_result) -> list[int | None]:
    """What identifies this version of the database: the file, and its write-ahead log if there is one."""
    try:
        wal = os.stat(f"{path}-wal")
    except OSError:
        return [st.st_ino, st.st_size, st.st_mtime_ns, None, None]
    return [st.st_ino, st.st_size, st.st_mtime_ns, wal.st_size, wal.st_mtime_ns]


def _unreadable(batch: Batch, cursor: Cursor | None, path: Path, exc: apsw.Error) -> Batch:
    """Nothing from a database that failed part way; a busy one is tried again next time, a broken
    one once it changes."""
    batch.sessions.clear()
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        batch.skip("database busy", str(path))
        batch.cursor = cursor or Cursor(path=str(path))
        return batch
    batch.skip("unreadable database", f"{path} ({type(exc).__name__})")
    batch.cursor.state = dict(cursor.state) if cursor else {}
    batch.cursor.state["stamp"] = _stamp(path, path.stat())
    return batch


# --- reading the tables ----------------------------------------------------------------------


@dataclass
class _Conversation:
    key: str
    title: str | None
    project: str | None
    started_at: str | None
    updated_at: str | None
    model: str | None
    # Changes whenever the conversation does, so an unchanged one is not even loaded; None: always load.
    marker: str | None
    load: Callable[[], list[Message]]
    # Where the folder is found when ``project`` is None; called after ``load`` (bubbles may say).
    locate: Callable[[], str | None] | None = None


class _WrongType(ValueError):
    """A known field holds a value of the wrong type."""


class _Reader:
    def __init__(self, path: Path, conn: apsw.Connection, batch: Batch) -> None:
        self.path = path
        self.conn = conn
        self.batch = batch
        self.tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self._uris: dict[str, str] = {}  # composerId -> folder named by its user bubbles
        self._listed: dict[str, str] | None = None  # composerId -> folder, from the workspace databases

    def conversations(self) -> Iterator[_Conversation]:
        items = self._items()
        folder = _workspace_folder(self.path.parent)
        typed: set[str] = set()
        tabs = items.get(_CHATDATA)
        if tabs is not None:
            for conv in self._tabs(tabs, folder):
                typed.update(m.text for m in conv.load() if m.role == USER)
                yield conv
        inline = items.get(_COMPOSERS)
        headers_only = False
        if inline is not None:
            for composer, has_conversation in self._inline_composers(inline, folder):
                headers_only = headers_only or not has_conversation
                if composer is not None:
                    typed.update(m.text for m in composer.load() if m.role == USER)
                    yield composer
        prompts = items.get(_PROMPTS)
        # Once composers live in the global database, the prompts of this list are in there too.
        if prompts is not None and not headers_only:
            typed_only = self._prompts(prompts, folder, typed)
            if typed_only is not None:
                yield typed_only
        if "cursorDiskKV" in self.tables:
            yield from self._composers(items.get(_HEADERS), folder)

    # ItemTable

    def _items(self) -> dict[str, Any]:
        if "ItemTable" not in self.tables:
            return {}
        marks = ", ".join("?" for _ in _ITEM_KEYS)
        found: dict[str, Any] = {}
        # Values are read as bytes and decoded here: a damaged row that is not UTF-8 is one skipped value, not a
        # UnicodeDecodeError from the binding that fails the whole file.
        items = f"SELECT key, CAST(value AS BLOB) FROM ItemTable WHERE key IN ({marks})"
        for key, value in self.conn.execute(items, _ITEM_KEYS):
            parsed = self._json(value, f"{self.path}:ItemTable:{key}")
            if parsed is not None:
                found[key] = parsed
        return found

    def _json(self, value: Any, where: str) -> Any:
        if isinstance(value, bytes):
            value = decode(value, self.batch, where)
        if not isinstance(value, str):
            if value is not None:
                self.batch.skip("wrong field type", where)
            return None
        try:
            return json.loads(value)
        except ValueError:
            self.batch.skip("invalid JSON", where)
            return None

    def _tabs(self, data: Any, folder: str | None) -> Iterator[_Conversation]:
        where = f"{self.path}:ItemTable:{_CHATDATA}"
        tabs = data.get("tabs") if isinstance(data, dict) else None
        if not isinstance(tabs, list):
            self.batch.skip("wrong field type", where)
            return
        for tab in tabs:
            if not isinstance(tab, dict) or not isinstance(tab.get("tabId"), str):
                self.batch.skip("wrong field type", f"{where} (tab)")
                continue
            raw = tab.get("bubbles")
            bubbles: list[Any] = raw if isinstance(raw, list) else []
            messages = [m for b in bubbles for m in self._tab_bubble(b, where)]
            models = [
                b.get("modelType") for b in bubbles if isinstance(b, dict) and isinstance(b.get("modelType"), str)
            ]
            title = tab.get("chatTitle")
            yield _Conversation(
                key=tab["tabId"],
                title=title if isinstance(title, str) and title else None,
                project=folder,
                started_at=None,
                updated_at=_time(tab.get("lastSendTime")),
                model=models[-1] if models else None,
                marker=None,
                load=_given(messages),
            )

    def _tab_bubble(self, bubble: Any, where: str) -> list[Message]:
        if not isinstance(bubble, dict):
            self.batch.skip("wrong field type", f"{where} (bubble)")
            return []
        bid = bubble.get("id") if isinstance(bubble.get("id"), str) else None
        kind = bubble.get("type")
        text = _text(bubble.get("text")) or (_text(bubble.get("rawText")) if kind == "ai" else "")
        if kind == "user":
            return [Message(USER, text, id=bid)] if text else []
        if kind == "ai":
            return [Message(ASSISTANT, text, id=bid)] if text else []
        self.batch.skip("unknown bubble type", f"{where} ({bid})")
        return []

    def _inline_composers(self, data: Any, folder: str | None) -> Iterator[tuple[_Conversation | None, bool]]:
        where = f"{self.path}:ItemTable:{_COMPOSERS}"
        composers = data.get("allComposers") if isinstance(data, dict) else None
        if not isinstance(composers, list):
            self.batch.skip("wrong field type", where)
            return
        for composer in composers:
            if not isinstance(composer, dict) or not isinstance(composer.get("composerId"), str):
                continue
            conversation = composer.get("conversation")
            if not isinstance(conversation, list) or not conversation:
                yield None, False
                continue
            cid = composer["composerId"]
            messages = [m for i, b in enumerate(conversation) for m in self._bubble(cid, b, i, f"{where} ({cid})")]
            yield self._composer_conversation(composer, folder, _given(messages)), True

    def _prompts(self, data: Any, folder: str | None, typed: set[str]) -> _Conversation | None:
        where = f"{self.path}:ItemTable:{_PROMPTS}"
        if not isinstance(data, list):
            self.batch.skip("wrong field type", where)
            return None
        messages: list[Message] = []
        repeats: dict[str, int] = {}
        for prompt in data:
            text = _text(prompt.get("text")) if isinstance(prompt, dict) else ""
            if not text or text in typed:
                continue  # already part of a chat above
            # The list has no ids or times and may lose old entries: the text itself names a prompt.
            digest = hashlib.sha1(utf8(text)).hexdigest()[:12]
            repeats[digest] = repeats.get(digest, 0) + 1
            suffix = f"-{repeats[digest]}" if repeats[digest] > 1 else ""
            messages.append(Message(USER, text, id=f"prompt-{digest}{suffix}"))
        if not messages:
            return None
        return _Conversation(
            key=f"{self.path}#{_PROMPTS}",
            title=None,
            project=folder,
            started_at=None,
            updated_at=None,
            model=None,
            marker=None,
            load=_given(messages),
        )

    # cursorDiskKV

    def _composers(self, headers: Any, folder: str | None) -> Iterator[_Conversation]:
        listed = _header_projects(headers)
        query = (
            "SELECT CAST(key AS BLOB), CAST(value AS BLOB) FROM cursorDiskKV "
            "WHERE key >= 'composerData:' AND key < 'composerData;'"
        )
        for raw_key, value in self.conn.execute(query).fetchall():
            key = raw_key.decode("utf-8", "replace") if isinstance(raw_key, bytes) else str(raw_key)
            where = f"{self.path}:cursorDiskKV:{key}"
            data = self._json(value, where)
            if data is None:
                continue
            if not isinstance(data, dict):
                self.batch.skip("wrong field type", where)
                continue
            cid = str(data["composerId"]) if isinstance(data.get("composerId"), str) else key.split(":", 1)[1]
            if data.get("status") == "generating":
                continue  # still being written: read it once it is done
            heads = data.get("fullConversationHeadersOnly")
            inline = data.get("conversation")
            if isinstance(heads, list) and heads:
                found = data.get("conversationMap")
                mapping: dict[str, Any] = found if isinstance(found, dict) else {}
                load, count = self._header_loader(cid, heads, mapping), len(heads)
            elif isinstance(inline, list) and inline:
                load, count = self._inline_loader(cid, inline, where), len(inline)
            else:
                continue  # opened and closed without a message
            conv = self._composer_conversation(data, listed.get(cid) or folder, load)
            conv.marker = f"{data.get('lastUpdatedAt')}|{count}" if data.get("lastUpdatedAt") is not None else None
            conv.locate = self._locator(cid)
            yield conv

    def _header_loader(self, cid: str, heads: list[Any], mapping: dict[str, Any]) -> Callable[[], list[Message]]:
        return lambda: self._bubbles_from_headers(cid, heads, mapping)

    def _inline_loader(self, cid: str, inline: list[Any], where: str) -> Callable[[], list[Message]]:
        return lambda: [m for i, b in enumerate(inline) for m in self._bubble(cid, b, i, where)]

    def _locator(self, cid: str) -> Callable[[], str | None]:
        return lambda: self._project_of(cid)

    def _bubbles_from_headers(self, cid: str, heads: list[Any], mapping: dict[str, Any]) -> list[Message]:
        messages: list[Message] = []
        query = "SELECT CAST(value AS BLOB) FROM cursorDiskKV WHERE key = ?"
        for index, head in enumerate(heads):
            bid = head.get("bubbleId") if isinstance(head, dict) else None
            if not isinstance(bid, str):
                self.batch.skip("wrong field type", f"{self.path}:cursorDiskKV:composerData:{cid} (header {index})")
                continue
            where = f"{self.path}:cursorDiskKV:bubbleId:{cid}:{bid}"
            bubble = mapping.get(bid)
            if bubble is None:
                row = self.conn.execute(query, (f"bubbleId:{cid}:{bid}",)).fetchone()
                if row is None:
                    self.batch.skip("missing bubble", where)
                    continue
                bubble = self._json(row[0], where)
                if bubble is None:
                    continue
            messages.extend(self._bubble(cid, bubble, index, where, bid))
        return messages

    def _bubble(self, cid: str, bubble: Any, index: int, where: str, bid: str | None = None) -> list[Message]:
        if not isinstance(bubble, dict):
            self.batch.skip("wrong field type", where)
            return []
        bid = bid or (bubble.get("bubbleId") if isinstance(bubble.get("bubbleId"), str) else None) or str(index)
        at = _time(bubble.get("createdAt"))
        kind = bubble.get("type")
        if kind == 1:
            text = _text(bubble.get("text")) or _rich_text(bubble.get("richText"))
            uris = bubble.get("workspaceUris")
            if cid not in self._uris and isinstance(uris, list):
                folder = next((_uri_path(u) for u in uris if isinstance(u, str) and _uri_path(u)), None)
                if folder:
                    self._uris[cid] = folder
            return [Message(USER, text, id=bid, at=at)] if text else []
        if kind != 2:
            self.batch.skip("unknown bubble type", where)
            return []
        out: list[Message] = []
        text = _text(bubble.get("text"))  # thinking lives in its own field and is left out
        if text:
            out.append(Message(ASSISTANT, text, id=bid, at=at))
        tool = bubble.get("toolFormerData")
        if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"]:
            out.extend(_tool_messages(bid, tool, at))
        return out

    def _composer_conversation(
        self, data: dict[str, Any], folder: str | None, load: Callable[[], list[Message]]
    ) -> _Conversation:
        name = data.get("name")
        config = data.get("modelConfig")
        model = config.get("modelName") if isinstance(config, dict) else None
        return _Conversation(
            key=str(data["composerId"]) if isinstance(data.get("composerId"), str) else "",
            title=name if isinstance(name, str) and name else None,
            project=folder,
            started_at=_time(data.get("createdAt")),
            updated_at=_time(data.get("lastUpdatedAt")),
            model=model if isinstance(model, str) and model not in ("", "default") else None,
            marker=None,
            load=load,
        )

    # which folder a composer belongs to

    def _project_of(self, cid: str) -> str | None:
        """The folder of a composer of the global database: from its bubbles, else from the workspace
        databases beside this one, which list the composers opened in each folder."""
        if cid in self._uris:
            return self._uris[cid]
        if self._listed is None:
            self._listed = _workspace_composers(self.path.parent.parent / "workspaceStorage")
        return self._listed.get(cid)


def _given(messages: list[Message]) -> Callable[[], list[Message]]:
    return lambda: messages


def _header_projects(headers: Any) -> dict[str, str]:
    """composerId -> folder from the global ``composer.composerHeaders`` index."""
    found: dict[str, str] = {}
    composers = headers.get("allComposers") if isinstance(headers, dict) else None
    for head in composers if isinstance(composers, list) else []:
        if not isinstance(head, dict) or not isinstance(head.get("composerId"), str):
            continue
        ident = head.get("workspaceIdentifier")
        uri = ident.get("uri") if isinstance(ident, dict) else None
        fs_path = uri.get("fsPath") if isinstance(uri, dict) else None
        if isinstance(fs_path, str) and fs_path:
            found[head["composerId"]] = fs_path
    return found


def _workspace_composers(root: Path) -> dict[str, str]:
    """composerId -> folder, from every workspace database's composer list."""
    found: dict[str, str] = {}
    if not root.is_dir():
        return found
    for db in sorted(root.glob("*/state.vscdb")):
        folder = _workspace_folder(db.parent)
        if folder is None:
            continue
        try:
            conn = open_read_only(db)
            try:
                row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (_COMPOSERS,)).fetchone()
            finally:
                conn.close()
            data = json.loads(row[0]) if row else None
        except (apsw.Error, ValueError, UnicodeDecodeError, TypeError):
            continue  # a database that cannot say is simply not consulted
        composers = data.get("allComposers") if isinstance(data, dict) else None
        for composer in composers if isinstance(composers, list) else []:
            if isinstance(composer, dict) and isinstance(composer.get("composerId"), str):
                found.setdefault(composer["composerId"], folder)
    return found


def _workspace_folder(directory: Path) -> str | None:
    """The folder (or multi-root workspace file's directory) a workspace database belongs to."""
    data = optional_json(directory / "workspace.json")
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("folder"), str):
        return _uri_path(data["folder"])
    if isinstance(data.get("workspace"), str):
        target = _uri_path(data["workspace"])
        return str(Path(target).parent) if target else None
    return None


def _uri_path(uri: str) -> str | None:
    """The path of a ``file://`` (or remote) URI; a one-letter scheme is a URI's too, not a drive."""
    return uri_path(uri, drive_letters=False)


# --- messages --------------------------------------------------------------------------------


def _tool_messages(bid: str, tool: dict[str, Any], at: str | None) -> list[Message]:
    name = tool["name"]
    params = _loose_json(tool.get("params")) or _loose_json(tool.get("rawArgs"))
    command = params.get("command") if isinstance(params, dict) and "terminal" in name else None
    if isinstance(command, str) and command:
        rendered = command
    else:
        command = None
        rendered = _render_args(params)
    out = [Message(TOOL, rendered, id=f"{bid}:tool", at=at, tool=name, command=command)]
    status = str(tool["status"]) if isinstance(tool.get("status"), str) else ""
    output, failed = _tool_result(_loose_json(tool.get("result")))
    failed = failed or status in ("error", "failed")
    if output or failed:
        out.append(Message(TOOL, excerpt(output or status), id=f"{bid}:result", at=at, tool=name, is_error=failed))
    elif status == "cancelled":
        out.append(Message(TOOL, "cancelled", id=f"{bid}:result", at=at, tool=name))
    return out


def _tool_result(result: Any) -> tuple[str, bool]:
    """(output text, failed) of a tool result: JSON with output/contents/error and an exit code, or text."""
    if result is None:
        return "", False
    if isinstance(result, str):
        return result, bool(OUTPUT_FAILURE.search(result))
    if not isinstance(result, dict):
        return json.dumps(result, ensure_ascii=False), False
    code = next((result[k] for k in ("exitCode", "exitCodeV2") if isinstance(result.get(k), int)), None)
    error = result.get("error") if isinstance(result.get("error"), str) else ""
    text = next(
        (result[k] for k in ("output", "contents", "content", "stdout", "result") if isinstance(result.get(k), str)),
        error or json.dumps(result, ensure_ascii=False),
    )
    if code is not None:
        return text, code != 0 or bool(error)
    return text, bool(error) or bool(OUTPUT_FAILURE.search(text))


def _loose_json(value: Any) -> Any:
    """Tool params and results are JSON inside a string; keep the string when it is not JSON."""
    return loose_json(value, keep_too_deep=False)


def _render_args(args: Any) -> str:
    if isinstance(args, str):
        return excerpt(args)
    if not isinstance(args, dict):
        return excerpt(json.dumps(args, ensure_ascii=False)) if args is not None else ""
    return excerpt(render_input(args, limit=_ARG_LIMIT, fold_space=False))


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _rich_text(value: Any) -> str:
    """The words of the editor's rich-text JSON (Lexical: nested ``children`` with ``text`` leaves),
    for the user bubbles whose plain ``text`` was left empty."""
    tree = _loose_json(value)
    if not isinstance(tree, dict):
        return ""
    lines: list[str] = []

    def walk(node: Any, line: list[str]) -> None:
        if not isinstance(node, dict):
            return
        if isinstance(node.get("text"), str):
            line.append(node["text"])
        children = node.get("children")
        if isinstance(children, list):
            for child in children:
                if isinstance(child, dict) and child.get("type") == "paragraph":
                    paragraph: list[str] = []
                    walk(child, paragraph)
                    lines.append("".join(paragraph))
                else:
                    walk(child, line)

    rest: list[str] = []
    walk(tree.get("root", tree), rest)
    return "\n".join([*lines, "".join(rest)]).strip()


def _time(value: Any) -> str | None:
    """Milliseconds since the epoch (composers, tabs) or an ISO string (bubbles), in UTC."""
    if isinstance(value, str):
        return iso_to_utc(value, lenient=False)  # strict, as this importer has always read them
    return epoch_to_utc(value)


# --- what changed since last time ------------------------------------------------------------


def _compare(conversations: list[_Conversation], previous: dict[str, Any], batch: Batch) -> dict[str, Any]:
    """Add to ``batch`` what is new in each conversation; return the state to remember."""
    state: dict[str, Any] = {}
    for conv in conversations:
        if not conv.key:
            continue
        old = previous.get(conv.key)
        if isinstance(old, list) and len(old) == 3 and conv.marker is not None and old[0] == conv.marker:
            state[conv.key] = old
            continue
        messages = conv.load()
        project = conv.project or (conv.locate() if conv.locate else None)
        new, restart = messages, False
        if isinstance(old, list) and len(old) == 3 and isinstance(old[1], int):
            new, restart = since_last_read(messages, old[1], old[2], chain_digest)
        state[conv.key] = [conv.marker, len(messages), chain_digest(messages)]
        if new or restart:
            batch.sessions.append(
                Session(
                    source=IMPORTER.name,
                    key=conv.key,
                    path=batch.cursor.path,
                    messages=new,
                    project=project,
                    title=conv.title,
                    started_at=conv.started_at,
                    updated_at=conv.updated_at,
                    model=conv.model,
                    restart=restart,
                )
            )
    return state
