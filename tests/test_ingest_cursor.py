"""Cursor importer: the real workspace database, a composer database built here, changes, bad data, locations."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.base import Batch, Session
from engram_cli.ingest.cursor import IMPORTER

SAMPLE = Path(__file__).parent / "fixtures" / "agent-logs" / "cursor" / "derived_workspace_state_subset.vscdb"
SCHEMA = (
    "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
    "CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
)
T0 = 1748772000000  # 2025-06-01T10:00:00Z in milliseconds
PARAGRAPH = {"type": "paragraph", "children": [{"type": "text", "text": "rename the module"}]}
RICH = json.dumps({"root": {"children": [PARAGRAPH]}})  # the editor's state, when the plain text was left empty


def by_key(batch: Batch) -> dict[str, Session]:
    return {s.key: s for s in batch.sessions}


def make_db(path: Path, items: dict[str, Any] | None = None, kv: dict[str, Any] | None = None) -> Path:
    """A state.vscdb with Cursor's two tables; values are JSON-encoded unless given as bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA synchronous=OFF")  # a test database need not survive a power cut
    with conn:
        conn.execute(SCHEMA)
        put(conn, "ItemTable", items or {})
        put(conn, "cursorDiskKV", kv or {})
    conn.close()
    return path


def put(conn: apsw.Connection, table: str, values: dict[str, Any]) -> None:
    for key, value in values.items():
        raw = value if isinstance(value, bytes) else json.dumps(value)
        conn.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (key, raw))


def update(path: Path, kv: dict[str, Any]) -> None:
    conn = apsw.Connection(str(path))
    put(conn, "cursorDiskKV", kv)
    conn.close()


def composer(cid: str, bubbles: list[str], **extra: Any) -> dict[str, Any]:
    heads = [{"bubbleId": b, "type": 1 if b.startswith("u") else 2} for b in bubbles]
    return {"_v": 10, "composerId": cid, "createdAt": T0, "lastUpdatedAt": T0 + 60_000, "status": "completed",
            "fullConversationHeadersOnly": heads, **extra}  # fmt: skip


def shell_tool(command: str, output: str, code: int) -> dict[str, Any]:
    return {"name": "run_terminal_cmd", "toolCallId": "t1", "status": "completed",
            "params": json.dumps({"command": command, "is_background": False}),
            "result": json.dumps({"output": output, "exitCodeV2": code})}  # fmt: skip


BUBBLES: dict[str, Any] = {
    "bubbleId:c1:u1": {"_v": 3, "type": 1, "bubbleId": "u1", "text": "the login test fails",
                       "createdAt": "2025-06-01T10:00:05.000Z", "workspaceUris": ["file:///home/me/src/app"]},
    "bubbleId:c1:a1": {"_v": 3, "type": 2, "bubbleId": "a1", "text": "", "thinking": {"text": "secret reasoning"},
                       "toolFormerData": shell_tool("pytest -q tests/test_login.py", "1 failed, 2 passed", 1)},
    "bubbleId:c1:a2": {"_v": 3, "type": 2, "bubbleId": "a2", "text": "",
                       "toolFormerData": {"name": "read_file", "status": "completed",
                                          "params": json.dumps({"target_file": "app/login.py"}),
                                          "result": json.dumps({"contents": "def login(token): ..."})}},
    "bubbleId:c1:a3": {"_v": 3, "type": 2, "bubbleId": "a3",
                       "text": "The token check compared bytes to str; fixed in app/login.py."},
}  # fmt: skip


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".config" / "Cursor" / "User"


@pytest.fixture
def global_db(user_dir: Path) -> Path:
    headers = {"allComposers": [{"composerId": "c2", "workspaceIdentifier": {"uri": {"fsPath": "/home/me/src/other"}}}]}
    kv = {
        "composerData:c1": composer("c1", ["u1", "a1", "a2", "a3"], name="Fix login",
                                    modelConfig={"modelName": "claude-4-sonnet"}),
        "composerData:c2": {"composerId": "c2", "createdAt": T0, "conversation": [
            {"type": 1, "bubbleId": "x1", "text": "hello"}, {"type": 2, "bubbleId": "x2", "text": "hi there"}]},
        "composerData:c3": composer("c3", []),  # opened, never used
        "composerData:c4": composer("c4", ["u9"], status="generating"),
        "composerData:c5": composer("c5", ["u5"]),
        "bubbleId:c4:u9": {"type": 1, "text": "still typing"},
        "bubbleId:c5:u5": {"type": 1, "bubbleId": "u5", "text": "", "richText": RICH},
        **BUBBLES,
    }  # fmt: skip
    listing = make_db(
        user_dir / "workspaceStorage" / "ws1" / "state.vscdb",
        items={"composer.composerData": {"allComposers": [{"composerId": "c5"}]}},
    )
    (listing.parent / "workspace.json").write_text(json.dumps({"folder": "file:///home/me/src/listed"}))
    return make_db(user_dir / "globalStorage" / "state.vscdb", items={"composer.composerHeaders": headers}, kv=kv)


def test_is_registered() -> None:
    assert importer("cursor") is IMPORTER
    assert IMPORTER.agent == "cursor"


# --- the real workspace database --------------------------------------------------------------


def test_old_chat_tabs_of_a_real_workspace_database(tmp_path: Path) -> None:
    workspace = tmp_path / "workspaceStorage" / "f87f6e0b2cf1ae8645cc0c5ffaa99529"
    workspace.mkdir(parents=True)
    db = workspace / "state.vscdb"
    shutil.copy(SAMPLE, db)
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///c%3A/Users/ydebray/Downloads/ticketing"}))
    batch = IMPORTER.read(db, None)
    assert not batch.skipped
    sessions = by_key(batch)
    assert set(sessions) == {"8420c7ae-355b-48e8-a441-87fb714a6ef5", "cf567e3f-3326-4ed1-b21a-ebf77816d0b8"}
    outliers = sessions["8420c7ae-355b-48e8-a441-87fb714a6ef5"]
    assert outliers.title == "Identifying Outliers in Helpdesk Tickets"
    assert outliers.project == "c:/Users/ydebray/Downloads/ticketing"
    assert outliers.model == "claude-3.5-sonnet"
    assert outliers.updated_at == "2024-11-15T01:37:41.220000Z"
    assert [m.role for m in outliers.messages] == ["user", "assistant"] * 4  # the empty draft bubble is left out
    assert outliers.messages[0].text == "give one example of outlier based on the @helpdesk_tickets.csv"
    assert outliers.messages[0].id == "ec134833-a069-477e-a648-b0bbb2607ad3"
    assert outliers.messages[1].text.startswith("Looking at the helpdesk_tickets.csv, I can identify ticket #2")
    # Every typed prompt of aiService.prompts is in a tab already: no separate prompt session.
    refactor = sessions["cf567e3f-3326-4ed1-b21a-ebf77816d0b8"]
    assert refactor.messages[0].text == "refactor to have a chat function that will be reused in the 3 main functions"


def test_the_database_is_opened_read_only(tmp_path: Path) -> None:
    db = tmp_path / "state.vscdb"
    shutil.copy(SAMPLE, db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    db.chmod(0o444)
    IMPORTER.read(db, None)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.vscdb"]  # no journal, no -wal left behind


# --- composers in cursorDiskKV ----------------------------------------------------------------


def test_composers_become_sessions_with_their_bubbles(global_db: Path) -> None:
    batch = IMPORTER.read(global_db, None)
    assert not batch.skipped
    sessions = by_key(batch)
    assert set(sessions) == {"c1", "c2", "c5"}  # c3 is empty, c4 is still being written
    login = sessions["c1"]
    assert login.title == "Fix login"
    assert login.model == "claude-4-sonnet"
    assert login.project == "/home/me/src/app"  # from the user bubble's workspaceUris
    assert login.started_at == "2025-06-01T10:00:00.000000Z"
    assert login.updated_at == "2025-06-01T10:01:00.000000Z"
    roles = [(m.role, m.id) for m in login.messages]
    assert roles == [("user", "u1"), ("tool", "a1:tool"), ("tool", "a1:result"), ("tool", "a2:tool"),
                     ("tool", "a2:result"), ("assistant", "a3")]  # fmt: skip
    assert login.messages[0].at == "2025-06-01T10:00:05.000000Z"
    run, result = login.messages[1], login.messages[2]
    assert (run.tool, run.command, run.text) == (
        "run_terminal_cmd",
        "pytest -q tests/test_login.py",
        "pytest -q tests/test_login.py",
    )
    assert result.is_error and result.text == "1 failed, 2 passed"
    assert login.messages[3].text == "target_file=app/login.py"
    assert not login.messages[4].is_error
    assert "secret reasoning" not in "\n".join(m.text for m in login.messages)


def test_a_composers_folder_comes_from_the_headers_index_or_the_workspace_that_lists_it(global_db: Path) -> None:
    sessions = by_key(IMPORTER.read(global_db, None))
    assert sessions["c2"].project == "/home/me/src/other"
    assert [m.text for m in sessions["c2"].messages] == ["hello", "hi there"]  # legacy inline conversation
    assert sessions["c5"].project == "/home/me/src/listed"
    assert [m.text for m in sessions["c5"].messages] == ["rename the module"]


def test_new_bubbles_are_returned_alone(global_db: Path) -> None:
    first = IMPORTER.read(global_db, None)
    update(global_db, {
        "composerData:c1": composer("c1", ["u1", "a1", "a2", "a3", "u2"], lastUpdatedAt=T0 + 120_000),
        "bubbleId:c1:u2": {"type": 1, "bubbleId": "u2", "text": "also add a regression test"},
    })  # fmt: skip
    second = IMPORTER.read(global_db, first.cursor)
    assert [(s.key, [m.text for m in s.messages], s.restart) for s in second.sessions] == [
        ("c1", ["also add a regression test"], False)
    ]
    assert second.cursor.state["conversations"]["c1"][1] == 7


def test_an_edited_bubble_returns_the_whole_composer_as_a_restart(global_db: Path) -> None:
    first = IMPORTER.read(global_db, None)
    edited = {**BUBBLES["bubbleId:c1:a3"], "text": "Fixed differently."}
    update(global_db, {"composerData:c1": composer("c1", ["u1", "a1", "a2", "a3"], lastUpdatedAt=T0 + 180_000),
                       "bubbleId:c1:a3": edited})  # fmt: skip
    session = by_key(IMPORTER.read(global_db, first.cursor))["c1"]
    assert session.restart
    assert session.messages[-1].text == "Fixed differently."
    assert len(session.messages) == 6


def test_unchanged_database_returns_nothing(global_db: Path) -> None:
    first = IMPORTER.read(global_db, None)
    again = IMPORTER.read(global_db, first.cursor)
    assert again.sessions == []
    assert again.cursor is first.cursor


def test_a_composer_still_being_written_is_read_once_done(global_db: Path) -> None:
    first = IMPORTER.read(global_db, None)
    update(global_db, {"composerData:c4": composer("c4", ["u9"], lastUpdatedAt=T0 + 1)})
    assert [m.text for m in by_key(IMPORTER.read(global_db, first.cursor))["c4"].messages] == ["still typing"]


@pytest.fixture
def wal_writer(global_db: Path) -> Iterator[apsw.Connection]:
    """Cursor running: the database in WAL mode, with an open connection holding unmerged writes."""
    conn = apsw.Connection(str(global_db))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    put(conn, "ItemTable", {"some.setting": True})  # the log exists once something was written
    yield conn
    conn.close()


def test_writes_still_in_the_write_ahead_log_are_seen(global_db: Path, wal_writer: apsw.Connection) -> None:
    first = IMPORTER.read(global_db, None)
    assert first.cursor.mtime_ns == 0  # the database file alone cannot say whether anything changed
    put(wal_writer, "cursorDiskKV", {
        "composerData:c5": composer("c5", ["u5", "u6"], lastUpdatedAt=T0 + 5),
        "bubbleId:c5:u6": {"type": 1, "bubbleId": "u6", "text": "and update the imports"},
    })  # fmt: skip
    second = IMPORTER.read(global_db, first.cursor)
    assert [m.text for m in by_key(second)["c5"].messages] == ["and update the imports"]
    assert IMPORTER.read(global_db, second.cursor).sessions == []


def test_prompts_without_a_conversation_are_kept_once_each(tmp_path: Path) -> None:
    prompts = [{"text": "add docstrings", "commandType": 1}, {"text": "add docstrings", "commandType": 1},
               {"text": "", "commandType": 1}]  # fmt: skip
    db = make_db(tmp_path / "ws" / "state.vscdb", items={"aiService.prompts": prompts})
    session = only = IMPORTER.read(db, None).sessions[0]
    assert only.key == f"{db}#aiService.prompts"
    assert [m.text for m in session.messages] == ["add docstrings", "add docstrings"]
    assert len({m.id for m in session.messages}) == 2
    # Where composers live in the global database, these prompts are in there already.
    headers_only = {"allComposers": [{"composerId": "c1"}]}
    listed = make_db(tmp_path / "ws2" / "state.vscdb",
                     items={"aiService.prompts": prompts, "composer.composerData": headers_only})  # fmt: skip
    assert IMPORTER.read(listed, None).sessions == []


# --- bad data ---------------------------------------------------------------------------------


def test_bad_values_are_skipped_and_counted(tmp_path: Path) -> None:
    kv = {
        "composerData:bad": b"{not json",
        "composerData:list": [1, 2],
        "composerData:c6": composer("c6", ["u1", "u2", "a7", "a8"]),
        "bubbleId:c6:u1": {"type": 1, "text": "kept"},
        "bubbleId:c6:u2": b'{"type": 1, "text": "caf\xe9"}',
        "bubbleId:c6:a7": {"type": 7, "text": "?"},
        "bubbleId:c6:a8": {"type": 2, "text": "also kept", "toolFormerData": {"name": 5}},
    }
    db = make_db(tmp_path / "state.vscdb", kv=kv)
    batch = IMPORTER.read(db, None)
    assert batch.skipped == {"invalid JSON": 1, "wrong field type": 1, "invalid UTF-8": 1, "unknown bubble type": 1}
    assert [m.text for m in by_key(batch)["c6"].messages] == ["kept", "also kept"]


def test_a_missing_bubble_is_counted(tmp_path: Path) -> None:
    db = make_db(tmp_path / "state.vscdb", kv={"composerData:c7": composer("c7", ["u1", "u2"]),
                                               "bubbleId:c7:u2": {"type": 1, "text": "here"}})  # fmt: skip
    batch = IMPORTER.read(db, None)
    assert batch.skipped == {"missing bubble": 1}
    assert [m.text for m in batch.sessions[0].messages] == ["here"]


@pytest.mark.parametrize("content", [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_file_that_is_not_a_database_is_counted_not_fatal(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "state.vscdb"
    db.write_bytes(content)
    batch = IMPORTER.read(db, None)
    assert batch.skipped["unreadable database"] == 1
    assert batch.sessions == []
    assert IMPORTER.read(db, batch.cursor).skipped == {}  # not re-read until it changes


KEYS = st.sampled_from(
    ["type", "text", "bubbleId", "toolFormerData", "name", "params", "result", "status", "createdAt", "tabs",
     "fullConversationHeadersOnly", "conversation", "lastUpdatedAt", "composerId", "workspaceUris", "bubbles"]
)  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=20,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON, JSON, JSON)
def test_arbitrary_json_values_never_raise(tmp_path: Path, data: Any, bubble: Any, tabs: Any) -> None:
    db = tmp_path / "fuzz.vscdb"
    db.unlink(missing_ok=True)
    heads = {"fullConversationHeadersOnly": [{"bubbleId": "b"}], "composerId": "c"}
    make_db(db, items={"workbench.panel.aichat.view.aichat.chatdata": tabs, "aiService.prompts": tabs},
            kv={"composerData:x": data, "composerData:c": heads, "bubbleId:c:b": bubble})  # fmt: skip
    IMPORTER.read(db, None)


# --- where the databases are ------------------------------------------------------------------


def test_locate_finds_global_and_workspace_databases(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert IMPORTER.locate({}, home) == []
    linux = make_db(home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    work = make_db(home / ".config" / "Cursor" / "User" / "workspaceStorage" / "abc" / "state.vscdb")
    mac = make_db(home / "Library" / "Application Support" / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    assert IMPORTER.locate({}, home) == [mac, linux, work]
    assert IMPORTER.read(mac, None).skipped == {}  # a path with a space, passed to SQLite as a URI
    xdg = make_db(tmp_path / "xdg" / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    roaming = make_db(tmp_path / "AppData" / "Roaming" / "Cursor" / "User" / "workspaceStorage" / "w" / "state.vscdb")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "APPDATA": str(tmp_path / "AppData" / "Roaming")}
    assert IMPORTER.locate(env, home) == [mac, xdg, roaming]
    assert IMPORTER.files(tmp_path / "AppData") == [roaming]
    assert IMPORTER.files(SAMPLE) == [SAMPLE]
    assert IMPORTER.files(tmp_path / "nothing.txt") == []
