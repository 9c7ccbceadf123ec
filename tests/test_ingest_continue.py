"""Continue importer: synthetic sessions in the documented format, rewrites, bad input, locations.

No real Continue session was found in public repositories; tests/fixtures/ingest/continue holds
two written by hand after the format of Continue's ``Session``/``ChatHistoryItem`` types: an agent
session with tool calls (message ids, toolCallStates, an image part, prompt logs) and an older
chat session (no ids, a plain workspace path, titled only in ``sessions.json``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.base import Batch, Session
from engram_cli.ingest.continue_dev import IMPORTER

FIXTURES = Path(__file__).parent / "fixtures" / "ingest" / "continue"
AGENT = FIXTURES / "sessions" / "8a3c1f2e-5b7d-4e9a-9c1d-2f6e8b4a7c10.json"
CHAT = FIXTURES / "sessions" / "c0ffee00-1111-4222-8333-444455556666.json"


def only(batch: Batch) -> Session:
    assert len(batch.sessions) == 1
    return batch.sessions[0]


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    target = tmp_path / ".continue" / "sessions"
    shutil.copytree(FIXTURES / "sessions", target)
    return target


def write(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc))


def item(role: str, content: Any, **message: Any) -> dict[str, Any]:
    return {"message": {"role": role, "content": content, **message}, "contextItems": []}


def test_is_registered() -> None:
    assert importer("continue") is IMPORTER
    assert IMPORTER.agent == "continue"


# --- the fixtures -----------------------------------------------------------------------------


def test_agent_session_with_tool_calls() -> None:
    batch = IMPORTER.read(AGENT, None)
    assert not batch.skipped
    session = only(batch)
    assert session.key == "8a3c1f2e-5b7d-4e9a-9c1d-2f6e8b4a7c10"
    assert session.title == "Fix failing date parser test"
    assert session.project == "/home/dev/src/calendar-app"  # from the file URI
    assert session.started_at == "2024-06-01T10:00:00.000000Z"  # dateCreated of sessions.json
    assert session.model == "Claude 3.5 Sonnet"
    assert [(m.role, m.id) for m in session.messages] == [
        ("user", "m-user-1"),
        ("assistant", "m-asst-1"),
        ("tool", "m-asst-1:call_run_1"),
        ("tool", "m-tool-1"),
        ("tool", "m-asst-2:call_read_1"),
        ("tool", "m-asst-2:call_read_1:result"),  # no tool message: the result comes from the call's state
        ("assistant", "m-asst-3"),
        ("user", "m-user-2"),
        ("assistant", "m-asst-4"),
    ]
    run, result = session.messages[2], session.messages[3]
    assert (run.tool, run.command) == ("builtin_run_terminal_command", "pytest tests/test_dates.py -q")
    assert result.is_error  # "1 failed": the command ran, the tests did not pass
    assert result.tool == "builtin_run_terminal_command"
    assert session.messages[4].text == "filepath=src/dates.py"
    assert session.messages[7].text == "Thanks. The date picker also shows 28 days, see the screenshot."
    everything = "\n".join(m.text for m in session.messages)
    assert "I should run the failing test first" not in everything  # thinking
    assert "You are a coding assistant" not in everything  # prompt logs
    assert "base64" not in everything and "iVBORw0KGgo" not in everything  # the image


def test_older_chat_session_without_ids() -> None:
    session = only(IMPORTER.read(CHAT, None))
    assert session.title == "Stop tracking a committed file"  # "New Session" in the file; the index has the title
    assert session.project == "/home/dev/src/notes"  # a plain path in older versions
    assert session.started_at == "2024-05-31T10:00:00.000000Z"
    assert session.model is None
    assert [(m.role, m.id) for m in session.messages] == [("user", "0"), ("assistant", "1")]
    assert session.messages[1].text.startswith("Run `git update-index --skip-worktree path/to/file`.")


# --- rewrites ---------------------------------------------------------------------------------


def test_a_rewritten_session_returns_only_the_new_messages(sessions_dir: Path) -> None:
    path = sessions_dir / CHAT.name
    first = IMPORTER.read(path, None)
    doc = json.loads(path.read_text())
    doc["history"].append(item("user", "and to undo it for every file?"))
    write(path, doc)
    second = only(IMPORTER.read(path, first.cursor))
    assert not second.restart
    assert [(m.id, m.text) for m in second.messages] == [("2", "and to undo it for every file?")]


def test_an_edited_message_returns_the_whole_session_as_a_restart(sessions_dir: Path) -> None:
    path = sessions_dir / CHAT.name
    first = IMPORTER.read(path, None)
    doc = json.loads(path.read_text())
    doc["history"][0]["message"]["content"] = "How do I untrack a committed file?"
    write(path, doc)
    second = only(IMPORTER.read(path, first.cursor))
    assert second.restart
    assert second.messages[0].text == "How do I untrack a committed file?"
    assert len(second.messages) == 2


def test_unchanged_session_returns_nothing() -> None:
    first = IMPORTER.read(AGENT, None)
    again = IMPORTER.read(AGENT, first.cursor)
    assert again.sessions == []
    assert again.cursor is first.cursor


def test_a_new_title_alone_is_reported(sessions_dir: Path) -> None:
    path = sessions_dir / AGENT.name
    first = IMPORTER.read(path, None)
    doc = json.loads(path.read_text())
    doc["title"] = "Leap-year bug in parse_date"
    write(path, doc)
    session = only(IMPORTER.read(path, first.cursor))
    assert session.title == "Leap-year bug in parse_date"
    assert session.messages == []
    assert not session.restart


def test_a_session_caught_half_written_is_read_again_later(sessions_dir: Path) -> None:
    path = sessions_dir / AGENT.name
    path.write_text(AGENT.read_text()[:300])
    batch = IMPORTER.read(path, None)
    assert batch.skipped == {"invalid JSON": 1}
    assert batch.sessions == []
    assert batch.cursor.inode is None  # not recorded as read
    shutil.copy(AGENT, path)
    assert len(only(IMPORTER.read(path, batch.cursor)).messages) == 9


# --- content rules ----------------------------------------------------------------------------


def test_failed_and_canceled_tool_calls(tmp_path: Path) -> None:
    def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    broken = call("c1", "builtin_create_new_file", {"filepath": "a.py", "contents": "x" * 500})
    stopped = call("c2", "builtin_run_terminal_command", {"command": "rm -rf build"})
    states = [
        {"toolCallId": "c1", "toolCall": broken, "status": "errored", "parsedArgs": {},
         "output": [{"name": "Error", "description": "", "content": "File already exists: a.py"}]},
        {"toolCallId": "c2", "toolCall": stopped, "status": "canceled", "parsedArgs": {}},
    ]  # fmt: skip
    history = [item("assistant", "", id="a1", toolCalls=[broken, stopped]) | {"toolCallStates": states}]
    path = tmp_path / "sessions" / "s.json"
    path.parent.mkdir()
    write(
        path, {"sessionId": "s", "title": "t", "workspaceDirectory": "file:///c%3A/Users/dev/app", "history": history}
    )
    session = only(IMPORTER.read(path, None))
    assert session.project == "c:/Users/dev/app"
    by_id = {m.id: m for m in session.messages}
    assert by_id["a1:c1:result"].is_error
    assert by_id["a1:c1:result"].text == "File already exists: a.py"
    assert len(by_id["a1:c1"].text) < 300  # long arguments are cut short
    assert by_id["a1:c2"].command == "rm -rf build"
    assert (by_id["a1:c2:result"].text, by_id["a1:c2:result"].is_error) == ("canceled", False)


def test_a_conversation_summary_becomes_the_session_summary(tmp_path: Path) -> None:
    summarized = item("assistant", "ok", id="a1") | {"conversationSummary": "Moved the date helpers to utils/dates.py."}
    path = tmp_path / "s.json"
    write(path, {"sessionId": "s", "history": [item("user", "go", id="u1"), summarized]})
    assert only(IMPORTER.read(path, None)).summary == "Moved the date helpers to utils/dates.py."


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"sessionId": "s", "title": "caf\xe9", "history": []}', "invalid UTF-8"),
        (b"\x00\x01binary\x00", "binary data"),
        (b'{"sessionId": "s", "history": [', "invalid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"sessionId": "s", "history": "none"}', "wrong field type"),
        (b'{"session_id": "old", "steps": []}', "unsupported old format"),
    ],
)
def test_bad_documents_are_skipped_and_counted(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(content)
    batch = IMPORTER.read(path, None)
    assert batch.skipped == {reason: 1}
    assert batch.sessions == []


def test_bad_history_items_are_skipped_and_counted(tmp_path: Path) -> None:
    history = [item("user", "kept"), "junk", {"message": {"content": "no role"}}, item("narrator", "?"),
               item("assistant", "also kept", toolCalls="not a list"), item("system", "You are helpful"),
               item("tool", "orphan output", toolCallId=["not", "an", "id"])]  # fmt: skip
    path = tmp_path / "s.json"
    write(path, {"sessionId": "s", "history": history})
    batch = IMPORTER.read(path, None)
    assert batch.skipped == {"wrong field type": 2, "unknown message role": 1}
    assert [m.text for m in only(batch).messages] == ["kept", "also kept", "orphan output"]


KEYS = st.sampled_from(
    ["message", "role", "content", "toolCalls", "toolCallStates", "toolCallId", "id",
     "function", "name", "arguments", "status", "output", "type", "text"]
)  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=15),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(JSON, max_size=6), JSON)
def test_arbitrary_history_never_raises(tmp_path: Path, history: list[Any], title: Any) -> None:
    path = tmp_path / "fuzz.json"
    write(path, {"sessionId": "s", "title": title, "workspaceDirectory": title, "history": history})
    IMPORTER.read(path, None)


# --- where the files are ----------------------------------------------------------------------


def test_locate_honours_continue_global_dir(tmp_path: Path, sessions_dir: Path) -> None:
    home = sessions_dir.parent.parent
    (home / ".continue" / "config.json").write_text("{}")
    expected = [sessions_dir / AGENT.name, sessions_dir / CHAT.name]
    assert IMPORTER.locate({}, home) == expected  # sessions.json and config.json are not sessions
    assert IMPORTER.locate({"CONTINUE_GLOBAL_DIR": str(home / ".continue")}, tmp_path / "elsewhere") == expected
    assert IMPORTER.locate({"CONTINUE_GLOBAL_DIR": str(tmp_path / "missing")}, home) == []
    assert IMPORTER.files(home / ".continue") == expected
    assert IMPORTER.files(sessions_dir / "sessions.json") == []
