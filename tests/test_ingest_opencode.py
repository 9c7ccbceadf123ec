"""OpenCode: the SQLite store (built here after the documented schema) and the legacy JSON tree."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.base import ASSISTANT, TOOL, TOOL_EXCERPT, USER, Batch, Session

LEGACY = Path(__file__).parent / "fixtures" / "ingest" / "opencode" / "storage"
LEGACY_SESSION = "ses_7f3a1c2e9ffeLegacyBuild"

opencode = importer("opencode")

# The tables OpenCode's Drizzle schema creates (session.sql.ts, project.sql.ts), optional columns included.
SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, name TEXT,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    workspace_id TEXT, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT, title TEXT NOT NULL,
    version TEXT NOT NULL, share_url TEXT, summary_additions INTEGER, summary_deletions INTEGER,
    summary_files INTEGER, summary_diffs TEXT, cost REAL NOT NULL DEFAULT 0, revert TEXT, permission TEXT,
    agent TEXT, model TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
    time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""
T0 = 1_760_000_000_000


class Store:
    """An opencode.db written the way OpenCode writes it (WAL, JSON ``data`` without the ids)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = apsw.Connection(str(path))
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(SCHEMA)

    def project(self, pid: str, worktree: str) -> None:
        self.db.execute("INSERT INTO project VALUES (?, ?, 'git', NULL, ?, ?)", (pid, worktree, T0, T0))

    def session(self, sid: str, pid: str, directory: str, title: str, t: int, model: str | None = None) -> None:
        self.db.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, model, time_created, time_updated)"
            " VALUES (?, ?, ?, ?, ?, '1.0.0', ?, ?, ?)",
            (sid, pid, sid[-6:], directory, title, model, t, t),
        )

    def message(self, sid: str, mid: str, t: int, data: dict[str, Any], updated: int | None = None) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, t, updated or t, json.dumps(data))
        )

    def part(self, sid: str, mid: str, pid: str, t: int, data: dict[str, Any] | str) -> None:
        raw = data if isinstance(data, str) else json.dumps(data)
        self.db.execute("INSERT OR REPLACE INTO part VALUES (?, ?, ?, ?, ?, ?)", (pid, mid, sid, t, t, raw))


def user(t: int) -> dict[str, Any]:
    return {"role": "user", "time": {"created": t}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}  # fmt: skip


def assistant(t: int, completed: int | None, **extra: Any) -> dict[str, Any]:
    time = {"created": t} if completed is None else {"created": t, "completed": completed}
    return {"role": "assistant", "time": time, "parentID": "msg_x", "modelID": "claude-sonnet-4-5",
            "providerID": "anthropic", "mode": "build", "path": {"cwd": "/home/dev/api", "root": "/home/dev/api"},
            "cost": 0.01, "tokens": {"input": 900, "output": 120, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            **extra}  # fmt: skip


def tool(name: str, status: str, params: dict[str, Any], **state: Any) -> dict[str, Any]:
    timing = {"start": T0 + 3000, "end": T0 + 4000}
    return {"type": "tool", "callID": f"call_{name}", "tool": name,
            "state": {"status": status, "input": params, "time": timing, **state}}  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """Three sessions: a finished one, one with a compaction summary, one still being answered."""
    data = tmp_path / "share" / "opencode"
    data.mkdir(parents=True)
    db = Store(data / "opencode.db")
    db.project("prj_api", "/home/dev/api")
    db.project("prj_web", "/home/dev/web")
    db.session("ses_A", "prj_api", "/home/dev/api", "Why does /health return 500?", T0,
               model='{"id": "claude-sonnet-4-5", "providerID": "anthropic"}')  # fmt: skip
    db.message("ses_A", "msg_A1", T0, user(T0))
    db.part("ses_A", "msg_A1", "prt_A1a", T0, {"type": "text", "text": "Why does /health return 500?"})
    db.part("ses_A", "msg_A1", "prt_A1b", T0, {"type": "text", "synthetic": True,
            "text": 'Called the Read tool with the following input: {"filePath":"/home/dev/api/app.py"}'})  # fmt: skip
    db.part("ses_A", "msg_A1", "prt_A1c", T0, {"type": "file", "mime": "text/x-python", "filename": "app.py",
            "url": "file:///home/dev/api/app.py"})  # fmt: skip
    db.message("ses_A", "msg_A2", T0 + 2000, assistant(T0 + 2000, T0 + 30_000))
    db.part("ses_A", "msg_A2", "prt_A2a", T0 + 2000, {"type": "step-start", "snapshot": "abc123"})
    db.part("ses_A", "msg_A2", "prt_A2b", T0 + 2100, {"type": "reasoning", "text": "Probably a missing variable."})
    db.part("ses_A", "msg_A2", "prt_A2c", T0 + 2200, {"type": "text", "text": "Checking the logs."})
    db.part("ses_A", "msg_A2", "prt_A2d", T0 + 3000, tool("bash", "completed",
            {"command": "tail -n 20 logs/app.log", "description": "Show recent log lines"},
            output="Traceback (most recent call last):\n  File \"app.py\", line 8\nKeyError: 'DATABASE_URL'\n" * 40,
            title="tail -n 20 logs/app.log", metadata={"exit": 0}))  # fmt: skip
    db.part("ses_A", "msg_A2", "prt_A2e", T0 + 5000, tool("read", "error", {"filePath": "/home/dev/api/.env"},
            error="Error: File not found: /home/dev/api/.env"))  # fmt: skip
    db.part("ses_A", "msg_A2", "prt_A2f", T0 + 6000, {"type": "text",
            "text": "DATABASE_URL is not set: add it to .env (see .env.example)."})  # fmt: skip
    db.part("ses_A", "msg_A2", "prt_A2g", T0 + 6000, {"type": "step-finish", "reason": "stop", "cost": 0.01})
    db.session("ses_B", "prj_web", "", "Auth refactor", T0 + 100_000)
    db.message("ses_B", "msg_B1", T0 + 100_000, user(T0 + 100_000))
    db.part("ses_B", "msg_B1", "prt_B1a", T0 + 100_000, {"type": "text", "text": "Move auth into middleware"})
    db.message("ses_B", "msg_B2", T0 + 101_000, assistant(T0 + 101_000, T0 + 102_000, summary=True))
    db.part("ses_B", "msg_B2", "prt_B2a", T0 + 101_000, {"type": "text",
            "text": "Auth now lives in middleware/auth.ts; routes no longer check tokens."})  # fmt: skip
    db.session("ses_C", "prj_api", "/home/dev/api", "Pagination", T0 + 200_000)
    db.message("ses_C", "msg_C1", T0 + 200_000, user(T0 + 200_000))
    db.part("ses_C", "msg_C1", "prt_C1a", T0 + 200_000, {"type": "text", "text": "Add pagination to /orders"})
    db.message("ses_C", "msg_C2", T0 + 201_000, assistant(T0 + 201_000, None))
    db.part("ses_C", "msg_C2", "prt_C2a", T0 + 201_000, {"type": "text", "text": "Adding limit and off"})
    return db


def by_key(batch: Batch) -> dict[str, Session]:
    return {s.key: s for s in batch.sessions}


# -- the database ---------------------------------------------------------------------------------------


def test_database_sessions_keep_words_tools_and_results(store: Store) -> None:
    batch = opencode.read(store.path, None)
    assert batch.skipped == {}
    session = by_key(batch)["ses_A"]
    assert (session.source, session.project, session.title) == (
        "opencode",
        "/home/dev/api",
        "Why does /health return 500?",
    )
    assert session.model == "claude-sonnet-4-5"
    assert session.started_at == "2025-10-09T08:53:20.000000Z"
    assert [(m.id, m.role, m.tool) for m in session.messages] == [
        ("msg_A1", USER, None), ("prt_A2c", ASSISTANT, None), ("prt_A2d", TOOL, "bash"),
        ("prt_A2d:result", TOOL, "bash"), ("prt_A2e", TOOL, "read"), ("prt_A2e:result", TOOL, "read"),
        ("prt_A2f", ASSISTANT, None),
    ]  # fmt: skip
    first, _, call, result, read, failed, answer = session.messages
    assert first.text == "Why does /health return 500?"  # the synthetic Read part and the file are gone
    assert first.at == "2025-10-09T08:53:20.000000Z"
    assert call.command == call.text == "tail -n 20 logs/app.log"
    assert result.is_error and len(result.text) <= TOOL_EXCERPT + 2  # a traceback, cut to an excerpt
    assert read.text == "filePath=/home/dev/api/.env" and read.command is None
    assert failed.is_error and failed.text == "Error: File not found: /home/dev/api/.env"
    assert answer.text.startswith("DATABASE_URL is not set")
    assert "Probably a missing variable" not in "\n".join(m.text for m in session.messages)  # reasoning


def test_compaction_summary_and_project_worktree(store: Store) -> None:
    session = by_key(opencode.read(store.path, None))["ses_B"]
    assert session.summary == "Auth now lives in middleware/auth.ts; routes no longer check tokens."
    assert [m.text for m in session.messages] == ["Move auth into middleware"]
    assert session.project == "/home/dev/web"  # no directory on the session: its project's worktree


def test_a_response_still_being_written_waits_for_the_next_run(store: Store) -> None:
    first = opencode.read(store.path, None)
    assert [m.text for m in by_key(first)["ses_C"].messages] == ["Add pagination to /orders"]
    store.message("ses_C", "msg_C2", T0 + 201_000, assistant(T0 + 201_000, T0 + 209_000), updated=T0 + 209_000)
    store.part("ses_C", "msg_C2", "prt_C2a", T0 + 209_000, {"type": "text", "text": "Added limit and offset."})
    second = opencode.read(store.path, first.cursor)
    assert list(by_key(second)) == ["ses_C"]
    assert [(m.id, m.text) for m in by_key(second)["ses_C"].messages] == [("prt_C2a", "Added limit and offset.")]
    assert not by_key(second)["ses_C"].restart


def test_new_messages_only_and_nothing_when_unchanged(store: Store) -> None:
    first = opencode.read(store.path, None)
    same = opencode.read(store.path, first.cursor)
    assert same.sessions == [] and same.cursor == first.cursor
    store.message("ses_A", "msg_A3", T0 + 50_000, user(T0 + 50_000))
    store.part("ses_A", "msg_A3", "prt_A3a", T0 + 50_000, {"type": "text", "text": "Thanks, that fixed it"})
    second = opencode.read(store.path, first.cursor)
    assert list(by_key(second)) == ["ses_A"]
    assert [m.id for m in by_key(second)["ses_A"].messages] == ["msg_A3"]


def test_a_revert_returns_the_session_whole(store: Store) -> None:
    first = opencode.read(store.path, None)
    store.db.execute("DELETE FROM part WHERE message_id = 'msg_A2'; DELETE FROM message WHERE id = 'msg_A2'")
    store.db.execute("UPDATE session SET time_updated = ? WHERE id = 'ses_A'", (T0 + 60_000,))
    again = by_key(opencode.read(store.path, first.cursor))["ses_A"]
    assert again.restart and [m.id for m in again.messages] == ["msg_A1"]


def test_the_database_is_only_read_even_while_opencode_writes(store: Store) -> None:
    before = hashlib.sha256(store.path.read_bytes()).hexdigest()
    store.db.execute("BEGIN IMMEDIATE")  # OpenCode holds the write lock
    try:
        batch = opencode.read(store.path, None)
    finally:
        store.db.execute("COMMIT")
    assert len(batch.sessions) == 3
    assert hashlib.sha256(store.path.read_bytes()).hexdigest() == before


def test_bad_rows_are_skipped_and_counted(store: Store) -> None:
    store.part("ses_A", "msg_A2", "prt_A2x", T0 + 7000, "{not json")
    store.part("ses_A", "msg_A2", "prt_A2y", T0 + 7000, {"type": "hologram"})
    store.part("ses_A", "msg_A2", "prt_A2z", T0 + 7000, {"type": "text", "text": 42})
    store.part("ses_A", "msg_A2", "prt_A2w", T0 + 7000, {"type": "tool", "tool": "bash", "state": "done"})
    store.message("ses_A", "msg_A9", T0 + 8000, {"role": "system", "time": {"created": "yesterday"}})
    batch = opencode.read(store.path, None)
    assert batch.skipped == {"invalid JSON": 1, "unknown part type": 1, "wrong type": 2, "unknown role": 1}
    assert len(by_key(batch)["ses_A"].messages) == 7


@pytest.mark.parametrize(
    "content",
    [b"", b"SQLite format 3\x00" + b"\xff" * 4000, bytes(range(256)) * 64],
    ids=["empty-file", "corrupt-header", "binary-junk"],
)
def test_an_unreadable_database_is_skipped(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(content)
    batch = opencode.read(path, None)
    assert batch.sessions == [] and batch.skipped == {"unreadable database": 1}
    assert path.read_bytes() == content


# -- the legacy JSON tree -------------------------------------------------------------------------------


def legacy_copy(tmp_path: Path) -> Path:
    storage = tmp_path / "opencode" / "storage"
    shutil.copytree(LEGACY, storage)
    return next((storage / "session").glob("*/*.json"))


def test_legacy_storage_session(tmp_path: Path) -> None:
    session_file = legacy_copy(tmp_path)
    session = by_key(opencode.read(session_file, None))[LEGACY_SESSION]
    assert (session.project, session.title) == ("/home/dev/site", "Fix the broken build")
    assert (session.started_at, session.updated_at) == ("2025-06-27T04:53:20.000000Z", "2025-06-27T04:54:50.000000Z")
    assert session.model == "gpt-5"
    assert [(m.role, m.tool, m.is_error) for m in session.messages] == [
        (USER, None, False), (TOOL, "bash", False), (TOOL, "bash", True), (TOOL, "read", False),
        (TOOL, "read", False), (ASSISTANT, None, False),
    ]  # fmt: skip
    assert session.messages[0].text == "npm run build fails on CI, can you fix it?"
    assert session.messages[1].command == "npm run build"
    assert "error TS2307" in session.messages[2].text  # exit code 2


def test_legacy_storage_is_read_again_only_when_a_file_changed(tmp_path: Path) -> None:
    session_file = legacy_copy(tmp_path)
    storage = session_file.parents[2]
    first = opencode.read(session_file, None)
    assert opencode.read(session_file, first.cursor).sessions == []
    message = storage / "message" / LEGACY_SESSION / "msg_7f3a1c2ea003.json"
    message.write_text(json.dumps({"id": "msg_7f3a1c2ea003", "sessionID": LEGACY_SESSION, "role": "user",
                                   "time": {"created": 1751000200000}}))  # fmt: skip
    (storage / "part" / "msg_7f3a1c2ea003").mkdir()
    (storage / "part" / "msg_7f3a1c2ea003" / "prt_7f3a1c2ed001.json").write_text(json.dumps(
        {"id": "prt_7f3a1c2ed001", "sessionID": LEGACY_SESSION, "messageID": "msg_7f3a1c2ea003", "type": "text",
         "text": "Now deploy it"}))  # fmt: skip
    second = by_key(opencode.read(session_file, first.cursor))[LEGACY_SESSION]
    assert [(m.id, m.text) for m in second.messages] == [("msg_7f3a1c2ea003", "Now deploy it")]


def test_legacy_message_files_that_are_not_json_are_skipped(tmp_path: Path) -> None:
    session_file = legacy_copy(tmp_path)
    broken = session_file.parents[2] / "message" / LEGACY_SESSION / "msg_7f3a1c2ea000.json"
    broken.write_bytes(b"\xff\xfe{")
    batch = opencode.read(session_file, None)
    assert batch.skipped == {"invalid UTF-8": 1}
    assert len(by_key(batch)[LEGACY_SESSION].messages) == 6


# -- where the files are --------------------------------------------------------------------------------


def test_locate_prefers_the_databases_and_honours_xdg_data_home(tmp_path: Path, store: Store) -> None:
    data = store.path.parents[1]
    beta = store.path.with_name("opencode-beta.db")
    Store(beta)
    shutil.copytree(LEGACY, store.path.parent / "storage")
    assert opencode.locate({"XDG_DATA_HOME": str(data)}, tmp_path / "home") == [store.path, beta]
    home = tmp_path / "home"
    legacy = home / ".local" / "share" / "opencode" / "storage"
    shutil.copytree(LEGACY, legacy)
    assert [p.name for p in opencode.locate({}, home)] == [f"{LEGACY_SESSION}.json"]  # no database: the JSON tree
    assert opencode.locate({}, tmp_path / "empty") == []


def test_files_under_a_path(tmp_path: Path, store: Store) -> None:
    assert opencode.files(store.path.parent) == [store.path]
    assert opencode.files(store.path) == [store.path]
    assert [p.stem for p in opencode.files(LEGACY)] == [LEGACY_SESSION]
    assert [p.stem for p in opencode.files(LEGACY.parent)] == [LEGACY_SESSION]
    assert opencode.files(LEGACY / "project" / "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750.json") == []


# -- fuzzing -------------------------------------------------------------------------------------


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=100, deadline=None)
@given(session=_JSON, message=_JSON, part=_JSON, junk=st.binary(max_size=200))
def test_arbitrary_legacy_files_and_corrupt_databases_never_raise(
    session: Any, message: Any, part: Any, junk: bytes
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        storage = Path(tmp) / "opencode" / "storage"
        for sub, value in (("session/p1/ses_1.json", session), ("message/ses_1/msg_1.json", message),
                           ("part/msg_1/prt_1.json", part)):  # fmt: skip
            target = storage / sub
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps(value), encoding="utf-8")
        assert isinstance(opencode.read(storage / "session" / "p1" / "ses_1.json", None), Batch)
        db = Path(tmp) / "opencode" / "opencode.db"
        db.write_bytes(b"SQLite format 3\x00" + junk)
        assert isinstance(opencode.read(db, None), Batch)
