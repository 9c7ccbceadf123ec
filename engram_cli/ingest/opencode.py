"""OpenCode: sessions in a SQLite database, or (older versions) in a tree of JSON files.

Layout (LOG-FORMATS.md §7): ``$XDG_DATA_HOME/opencode`` (``~/.local/share/opencode`` on every OS).
Current versions keep ``opencode.db`` (other release channels ``opencode-<channel>.db``), in WAL mode
and often in use, so it is opened read-only. Tables: ``session`` (``id, project_id, parent_id,
directory, title, time_created, time_updated``…), ``message`` and ``part`` (``id``, ids of their
session/message, ``time_created, time_updated``, ``data`` = the JSON record without its ids) and
``project`` (``id, worktree``). Before that, the same records were files:
``storage/session/<projectID>/<sessionID>.json``, ``storage/message/<sessionID>/<messageID>.json``,
``storage/part/<messageID>/<partID>.json``, ``storage/project/<projectID>.json``; they are read only
when no database exists, since OpenCode copies them into the database when it migrates.

A message's words are in its parts: ``text`` parts become user or assistant messages (``synthetic``
and ``ignored`` ones are what OpenCode injected, e.g. the content of an attached file, and are
dropped); a ``tool`` part is a call (``state.input``; the ``bash`` tool's ``command``) and, once done,
its result (``state.output`` cut to an excerpt, or ``state.error`` with ``is_error``). Reasoning,
step markers, snapshots, patches and file attachments are noise. An assistant message flagged
``summary`` is OpenCode's compaction summary and becomes the session's summary. The last assistant
message is left for the next run while it is still being written (no ``time.completed``).

Rows change while a response streams, so the cursor keeps, per session, the largest ``time_updated``
seen (of the session, its messages and parts), the number of messages read and their digest: only
changed sessions are re-read, and they return the messages after those, or everything again with
``restart=True`` when earlier messages changed (a revert).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
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
    Importer,
    Message,
    Session,
    excerpt,
    optional_json,
)
from engram_cli.ingest.common import epoch_to_utc, messages_digest, open_read_only, render_input, since_last_read

SHELL_TOOLS = ("bash",)
# Parts that carry no words: markers, file snapshots and attachments, sub-task plumbing.
QUIET_PARTS = ("reasoning", "step-start", "step-finish", "snapshot", "patch", "file", "agent", "subtask", "retry",
               "compaction")  # fmt: skip
PARAM_CHARS = 200
FAILED_OUTPUT = ("Traceback (most recent call last)", "FAILED", "command not found")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _parse(value: Any) -> Any:
    """A JSON column's value, or None when it is not JSON text."""
    try:
        return json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None


@dataclass
class _Record:
    """One message with its parts, whichever store it came from."""

    id: str
    info: dict[str, Any]
    parts: list[tuple[str, dict[str, Any]]]


@dataclass
class _SessionRow:
    """What the store says about a session itself; every field but the id may be missing."""

    id: str
    title: str | None = None
    project: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    model: str | None = None


@dataclass
class _Converted:
    messages: list[Message] = field(default_factory=list)
    summary: str | None = None
    model: str | None = None


def _convert(records: list[_Record], batch: Batch, where: str) -> _Converted:
    out = _Converted()
    for position, record in enumerate(records):
        info = record.info
        role = info.get("role")
        time = _dict(info.get("time"))
        at = epoch_to_utc(time.get("created"))
        if role == USER:
            model = _dict(info.get("model")).get("modelID")
            out.model = model if isinstance(model, str) else out.model
            texts = _texts(record, batch, where, user=True)
            if texts:
                out.messages.append(Message(role=USER, text="\n\n".join(texts), id=record.id, at=at))
        elif role == ASSISTANT:
            last = position == len(records) - 1
            if last and time.get("completed") is None and not info.get("error"):
                break  # still being written: read it once it is complete
            if isinstance(info.get("modelID"), str):
                out.model = info["modelID"]
            if info.get("summary") is True:
                out.summary = "\n\n".join(_texts(record, batch, where, user=False)) or out.summary
                continue
            out.messages.extend(_assistant(record, at, batch, where))
        else:
            batch.skip("unknown role", f"{where}/{record.id}")
    return out


def _texts(record: _Record, batch: Batch, where: str, *, user: bool) -> list[str]:
    texts = []
    for part_id, part in record.parts:
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                batch.skip("wrong type", f"{where}/{part_id}")
            elif text.strip() and not part.get("synthetic") and not part.get("ignored"):
                texts.append(text.strip())
        elif user and kind not in QUIET_PARTS:
            batch.skip("unknown part type", f"{where}/{part_id}")
    return texts


def _assistant(record: _Record, at: str | None, batch: Batch, where: str) -> list[Message]:
    out: list[Message] = []
    for part_id, part in record.parts:
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                batch.skip("wrong type", f"{where}/{part_id}")
            elif text.strip() and not part.get("synthetic") and not part.get("ignored"):
                out.append(Message(role=ASSISTANT, text=text.strip(), id=part_id, at=at))
        elif kind == "tool":
            out.extend(_tool(part_id, part, at, batch, where))
        elif kind not in QUIET_PARTS:
            batch.skip("unknown part type", f"{where}/{part_id}")
    return out


def _tool(part_id: str, part: dict[str, Any], at: str | None, batch: Batch, where: str) -> list[Message]:
    name, state = part.get("tool"), part.get("state")
    if not isinstance(name, str) or not isinstance(state, dict):
        batch.skip("wrong type", f"{where}/{part_id}")
        return []
    params = _dict(state.get("input"))
    started = epoch_to_utc(_dict(state.get("time")).get("start")) or at
    command = params.get("command")
    if name in SHELL_TOOLS and isinstance(command, str) and command.strip():
        call = Message(role=TOOL, text=command.strip(), id=part_id, at=started, tool=name, command=command.strip())
    else:
        rendered = excerpt(render_input(params, limit=PARAM_CHARS, separator=" "))
        call = Message(role=TOOL, text=rendered, id=part_id, at=started, tool=name)
    status = state.get("status")
    ended = epoch_to_utc(_dict(state.get("time")).get("end")) or started
    if status == "error":
        error = state.get("error")
        text = excerpt(error if isinstance(error, str) else "failed")
        return [call, Message(role=TOOL, text=text, id=f"{part_id}:result", at=ended, tool=name, is_error=True)]
    if status == "completed":
        output = state.get("output")
        output = output if isinstance(output, str) else ""
        exit_code = _dict(state.get("metadata")).get("exit")
        failed = (isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0) or (
            name in SHELL_TOOLS and any(sign in output for sign in FAILED_OUTPUT)
        )
        result = Message(role=TOOL, text=excerpt(output), id=f"{part_id}:result", at=ended, tool=name, is_error=failed)
        return [call, result]
    return [call]  # pending or running inside a finished message: the call was made, no result came


def _sessions(
    name: str, path: Path, rows: list[tuple[_SessionRow, list[_Record]]], seen: Mapping[str, Any], batch: Batch
) -> dict[str, dict[str, Any]]:
    """Turn loaded sessions into the batch's sessions; returns their new cursor entries."""
    states: dict[str, dict[str, Any]] = {}
    for row, records in rows:
        converted = _convert(records, batch, f"{path}:{row.id}")
        messages = converted.messages
        before = _dict(seen.get(row.id))
        count = int(before.get("n", 0))
        session = Session(
            source=name,
            key=row.id,
            path=str(path),
            project=row.project,
            title=row.title,
            summary=converted.summary,
            started_at=row.started_at,
            updated_at=row.updated_at,
            model=converted.model or row.model,
        )
        if count == 0:
            session.messages = messages
        else:
            session.messages, session.restart = since_last_read(messages, count, before.get("d"), messages_digest)
        if session.messages or session.restart:
            batch.sessions.append(session)
        states[row.id] = {"n": len(messages), "d": messages_digest(messages)}
    return states


# -- the SQLite store -------------------------------------------------------------------------------


def _query(connection: Any, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows as dicts by column name, so optional columns of other versions are simply absent."""
    cursor = connection.cursor()
    names: list[str] = []
    rows = []
    for row in cursor.execute(sql, params):
        names = names or [d[0] for d in cursor.get_description()]  # only known while the statement runs
        rows.append(dict(zip(names, row, strict=True)))
    return rows


def _json(value: Any, batch: Batch, where: str) -> dict[str, Any] | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    try:
        data = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        batch.skip("invalid JSON", where)
        return None
    return data


def _wal(path: Path) -> list[int] | None:
    """Size and mtime of the write-ahead log: new rows land there before the database file changes."""
    try:
        st = path.with_name(path.name + "-wal").stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _read_database(name: str, path: Path, cursor: Cursor | None) -> Batch:
    st = path.stat()
    wal = _wal(path)
    if cursor is not None and cursor.unchanged(st) and cursor.state.get("wal") == wal:
        return Batch([], cursor)
    batch = Batch([], cursor or Cursor(path=str(path)))
    seen = _dict(cursor.state.get("sessions")) if cursor is not None else {}
    try:
        connection = open_read_only(path)
    except apsw.Error:
        batch.skip("unreadable database", str(path))
        return batch
    try:
        connection.set_busy_timeout(2000)
        connection.execute("BEGIN")  # one snapshot for all the queries while OpenCode keeps writing
        loaded, marks = _load_database(connection, path, seen, batch)
        connection.execute("COMMIT")
    except apsw.Error:
        # Corrupt, not a database, or a schema this reader does not know: keep the old cursor.
        batch.skip("unreadable database", str(path))
        return batch
    finally:
        connection.close()
    states = _sessions(name, path, loaded, seen, batch)
    sessions: dict[str, Any] = {}
    for sid, mark in marks.items():
        sessions[sid] = {**(states.get(sid) or _dict(seen.get(sid))), "u": mark}
    last = max(marks.values(), default=None)
    batch.cursor = Cursor(
        path=str(path),
        inode=st.st_ino,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        last_at=epoch_to_utc(last),
        state={"wal": wal, "sessions": sessions},
    )
    return batch


def _load_database(
    connection: Any, path: Path, seen: Mapping[str, Any], batch: Batch
) -> tuple[list[tuple[_SessionRow, list[_Record]]], dict[str, int]]:
    """The sessions changed since ``seen`` with their messages, and every session's change mark."""
    latest: dict[str, int] = {}
    for table in ("message", "part"):
        for row in _query(connection, f"SELECT session_id AS sid, MAX(time_updated) AS t FROM {table} GROUP BY 1"):
            if isinstance(row["t"], int):
                latest[str(row["sid"])] = max(latest.get(str(row["sid"]), 0), row["t"])
    try:
        worktrees = {str(r["id"]): r["worktree"] for r in _query(connection, "SELECT id, worktree FROM project")}
    except apsw.SQLError:  # the project table is only a fallback for the session's directory
        worktrees = {}
    loaded: list[tuple[_SessionRow, list[_Record]]] = []
    marks: dict[str, int] = {}
    for row in _query(connection, "SELECT * FROM session ORDER BY time_created, id"):
        sid = str(row["id"])
        updated = row.get("time_updated")
        mark = max(updated if isinstance(updated, int) else 0, latest.get(sid, 0))
        marks[sid] = mark
        if mark <= int(_dict(seen.get(sid)).get("u", -1)):
            continue
        model_id = _dict(_parse(row.get("model"))).get("id")
        directory = row.get("directory")
        worktree = worktrees.get(str(row.get("project_id")))
        session = _SessionRow(
            id=sid,
            title=row.get("title") if isinstance(row.get("title"), str) else None,
            project=directory if isinstance(directory, str) and directory else worktree,
            started_at=epoch_to_utc(row.get("time_created")),
            updated_at=epoch_to_utc(mark),
            model=model_id if isinstance(model_id, str) else None,
        )
        parts: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        query = "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id"
        for part in _query(connection, query, (sid,)):
            data = _json(part["data"], batch, f"{path}:part/{part['id']}")
            if data is not None:
                parts.setdefault(str(part["message_id"]), []).append((str(part["id"]), data))
        records = []
        query = "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id"
        for message in _query(connection, query, (sid,)):
            data = _json(message["data"], batch, f"{path}:message/{message['id']}")
            if data is not None:
                records.append(_Record(str(message["id"]), data, parts.get(str(message["id"]), [])))
        loaded.append((session, records))
    return loaded, marks


# -- the legacy JSON tree ---------------------------------------------------------------------------


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # removed since it was listed (a reverted message): the next run sees the change
        return 0


def _read_json(path: Path, batch: Batch) -> dict[str, Any] | None:
    try:
        data = json.loads(files.read_bytes(path).decode("utf-8"))
    except OSError:
        return None  # see _mtime
    except UnicodeDecodeError:
        batch.skip("invalid UTF-8", str(path))
        return None
    except ValueError:
        batch.skip("invalid JSON", str(path))
        return None
    if not isinstance(data, dict):
        batch.skip("not an object", str(path))
        return None
    return data


def _json_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def _read_storage(name: str, path: Path, cursor: Cursor | None) -> Batch:
    storage = path.parents[2]  # storage/session/<projectID>/<sessionID>.json
    st = path.stat()
    batch = Batch([], cursor or Cursor(path=str(path)))
    info = _read_json(path, batch)
    if info is None:
        return batch
    sid = str(info.get("id") or path.stem)
    message_files = _json_files(storage / "message" / sid)
    part_files = {m.stem: _json_files(storage / "part" / m.stem) for m in message_files}
    # The session's files change one by one; their latest mtime tells whether anything did.
    every = [*message_files, *(f for files in part_files.values() for f in files)]
    # A removed message shows only in its directory's mtime.
    mark = max([st.st_mtime_ns, _mtime(storage / "message" / sid), *(_mtime(f) for f in every)])
    seen = cursor.state if cursor is not None else {}
    if cursor is not None and seen.get("u") == mark:
        return Batch([], cursor)
    records = []
    for file in message_files:
        message = _read_json(file, batch)
        if message is None:
            continue
        parts = [(str(p.get("id") or f.stem), p) for f in part_files[file.stem] if (p := _read_json(f, batch))]
        records.append(_Record(str(message.get("id") or file.stem), message, parts))
    records.sort(key=lambda r: (_number(_dict(r.info.get("time")).get("created")), r.id))
    time = _dict(info.get("time"))
    project = info.get("directory")
    if not isinstance(project, str) or not project:
        worktree = _dict(optional_json(storage / "project" / f"{info.get('projectID')}.json")).get("worktree")
        project = worktree if isinstance(worktree, str) else None
    row = _SessionRow(
        id=sid,
        title=info.get("title") if isinstance(info.get("title"), str) else None,
        project=project,
        started_at=epoch_to_utc(time.get("created")),
        updated_at=epoch_to_utc(time.get("updated")),
    )
    states = _sessions(name, path, [(row, records)], {sid: seen} if seen else {}, batch)
    batch.cursor = Cursor(
        path=str(path),
        inode=st.st_ino,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        last_at=row.updated_at,
        state={"u": mark, **states[sid]},
    )
    return batch


def _databases(directory: Path) -> list[Path]:
    found = [directory / "opencode.db", *sorted(directory.glob("opencode-*.db"))]
    return [p for p in found if files.candidate(p)]


def _storage_sessions(storage: Path) -> list[Path]:
    return sorted(p for p in (storage / "session").glob("*/*.json") if files.candidate(p))


def _is_storage_session(path: Path) -> bool:
    return path.suffix == ".json" and len(path.parents) > 2 and path.parents[1].name == "session"


@dataclass
class OpenCodeImporter:
    name: str = "opencode"
    agent: str = "opencode"
    description: str = "OpenCode sessions (~/.local/share/opencode: opencode.db, or legacy storage/ JSON)"

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        data = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
        root = data / "opencode"
        # The database holds everything the JSON tree had once OpenCode migrated it: read one, not both.
        return _databases(root) or _storage_sessions(root / "storage")

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path] if path.suffix == ".db" or _is_storage_session(path) else []
        if found := _databases(path):
            return found
        storage = path if path.name == "storage" else path / "storage"
        return _storage_sessions(storage)

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        if path.suffix == ".json":
            return _read_storage(self.name, path, cursor)
        return _read_database(self.name, path, cursor)


IMPORTER: Importer = OpenCodeImporter()
