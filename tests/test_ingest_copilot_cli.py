"""The Copilot CLI importer: events.jsonl logs and legacy JSON dumps in, sessions of clean messages out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import base, importer
from engram_cli.ingest.base import ASSISTANT, TOOL, USER, Batch, Session

SAMPLES = Path(__file__).parent / "fixtures" / "agent-logs" / "copilot-cli"
EVENTS = SAMPLES / "vibecodingtracker_events.jsonl"
LEGACY = SAMPLES / "vibecodingtracker_legacy_history-session-state.json"
SESSION_ID = "6b1f0c7e-2a3d-4c5b-9e8f-7a6b5c4d3e2f"

copilot = importer("copilot-cli")


def only_session(batch: Batch) -> Session:
    assert len(batch.sessions) == 1
    return batch.sessions[0]


def texts(session: Session, role: str) -> list[str]:
    return [m.text for m in session.messages if m.role == role]


def event(kind: str, data: dict[str, Any], ident: str, **extra: Any) -> str:
    record = {"type": kind, "data": data, "id": ident, "timestamp": "2026-05-01T08:00:00.000Z", "parentId": None}
    record.update(extra)
    return json.dumps(record, ensure_ascii=False) + "\n"


def start() -> str:
    return event("session.start", {"sessionId": SESSION_ID, "context": {"cwd": "/home/dev/api"}}, "e0")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / ".copilot" / "session-state" / SESSION_ID / "events.jsonl"


def write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def append(path: Path, *chunks: str | bytes) -> None:
    with path.open("ab") as fh:
        for chunk in chunks:
            fh.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)


# -- the real events.jsonl ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def real() -> Session:
    batch = copilot.read(EVENTS, None)
    assert not batch.skipped
    return only_session(batch)


def test_a_real_events_log_gives_the_request_as_typed(real: Session) -> None:
    (typed,) = texts(real, USER)
    assert typed.startswith("請不要修改任何代碼 我希望你幫我調查一下 有沒有好一點的自動生成文檔")
    assert typed.endswith("請幫我調查 不要產生代碼或編輯代碼")
    everything = "\n".join(m.text for m in real.messages)
    assert "<current_datetime>" not in everything  # transformedContent is not read
    assert "You have not yet marked the task as complete" not in everything  # the autopilot nudge
    assert "You are the GitHub Copilot CLI" not in everything  # system prompt
    assert "WklqAWb8" not in everything  # reasoningOpaque


def test_each_tool_call_appears_once_and_status_tools_not_at_all(real: Session) -> None:
    ids = [m.id for m in real.messages if m.role == TOOL]
    assert len(ids) == len(set(ids))  # requested in the message and started by the runtime: once
    assert not {"report_intent", "task_complete"} & {m.tool for m in real.messages}
    bash = [m for m in real.messages if m.tool == "bash"]
    assert [m.command for m in bash if m.command] == [
        "ls /home/wei/repo/VibeCodingTracker/.github/workflows/",
        'grep -rn "///" /home/wei/repo/VibeCodingTracker/src --include="*.rs" | head -30',
    ]
    results = [m for m in bash if not m.command]
    assert results[0].text.endswith("<exited with exit code 0>") and not results[0].is_error
    assert [m.tool for m in real.messages if m.role == TOOL].count("web_search") == 6  # 3 calls, 3 results
    assert len(real.messages) == 24


def test_session_metadata_and_the_agents_own_summary(real: Session) -> None:
    assert real.key == "96ef38f0-9d09-45c3-8124-6448c36090ed"
    assert real.project == "/home/wei/repo/VibeCodingTracker"
    assert real.model == "claude-sonnet-4.6"
    assert real.summary is not None and real.summary.startswith("完成 Rust 文件生成工具調查")
    assert real.started_at == "2026-04-23T17:08:08.893000Z"
    assert texts(real, ASSISTANT)[0].startswith("以下是我的調查結果")


# -- the legacy JSON dump -----------------------------------------------------------------------


def test_a_legacy_dump_is_read_from_its_timeline() -> None:
    session = only_session(copilot.read(LEGACY, None))
    assert session.key == "0b2a81da-02cf-4cbb-ae14-07c597b84f4e"
    assert session.started_at == "2025-10-11T12:54:52.206000Z"
    assert texts(session, USER)[0].startswith('## 任務：將專案描述中的 "Vibe Coding Tracker" 改為 "Vibe Code Tracker"')
    assert "Connected to GitHub MCP Server" not in "\n".join(m.text for m in session.messages)  # info banners
    commands = [m.command for m in session.messages if m.command]
    assert commands[1] == "cd /home/wei/repo/VibeCodingTracker && cargo check 2>&1 | head -20"
    assert len(texts(session, ASSISTANT)) == 5
    assert len(session.messages) == 36  # 1 prompt, 5 replies, 15 calls with their results
    assert not any(m.is_error for m in session.messages)


def test_a_rewritten_legacy_dump_returns_only_new_entries_or_everything_when_history_changed(tmp_path: Path) -> None:
    path = Path(shutil.copy(LEGACY, tmp_path / LEGACY.name))
    first = copilot.read(path, None)
    assert copilot.read(path, first.cursor).sessions == []
    document = json.loads(path.read_text())
    document["timeline"].append(
        {"id": "n1", "timestamp": "2025-10-11T12:57:00.000Z", "type": "user", "text": "Also update the CHANGELOG"}
    )
    path.write_text(json.dumps(document, ensure_ascii=False))
    second = copilot.read(path, first.cursor)
    grown = only_session(second)
    assert [(m.role, m.text) for m in grown.messages] == [(USER, "Also update the CHANGELOG")]
    assert not grown.restart
    document["timeline"][2]["text"] = "A different request"
    path.write_text(json.dumps(document, ensure_ascii=False))
    again = only_session(copilot.read(path, second.cursor))
    assert again.restart and again.messages[0].text == "A different request" and len(again.messages) == 37


def test_a_legacy_dump_without_a_timeline_falls_back_to_chat_messages(tmp_path: Path) -> None:
    chat = [
        {"role": "system", "content": "You are Copilot."},
        {"role": "user", "content": "Run the linter"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command":"ruff check ."}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "E501 line too long\n<exited with exit code 1>"},
        {"role": "assistant", "content": "One long line to fix."},
    ]
    path = tmp_path / "session_x.json"
    path.write_text(
        json.dumps({"sessionId": "x1", "startTime": "2025-09-01T10:00:00Z", "chatMessages": chat, "timeline": []})
    )
    session = only_session(copilot.read(path, None))
    assert [(m.role, m.text, m.command, m.is_error) for m in session.messages] == [
        (USER, "Run the linter", None, False),
        (TOOL, "ruff check .", "ruff check .", False),
        (TOOL, "E501 line too long\n<exited with exit code 1>", None, True),
        (ASSISTANT, "One long line to fix.", None, False),
    ]


# -- tool outcomes ------------------------------------------------------------------------------


def test_failed_tools_are_marked(log: Path) -> None:
    write(
        log,
        start(),
        event(
            "tool.execution_start", {"toolCallId": "t1", "toolName": "bash", "arguments": {"command": "npm test"}}, "e1"
        ),
        event(
            "tool.execution_complete",
            {"toolCallId": "t1", "success": True, "result": {"content": "1 failing\n<exited with exit code 1>"}},
            "e2",
        ),
        event("tool.execution_start", {"toolCallId": "t2", "toolName": "view", "arguments": {"path": "/nope"}}, "e3"),
        event(
            "tool.execution_complete",
            {"toolCallId": "t2", "success": False, "error": {"message": "Path does not exist", "code": "failure"}},
            "e4",
        ),
    )
    session = only_session(copilot.read(log, None))
    assert [(m.tool, m.text, m.is_error) for m in session.messages] == [
        ("bash", "npm test", False),
        ("bash", "1 failing\n<exited with exit code 1>", True),
        ("view", "path=/nope", False),
        ("view", "Path does not exist", True),
    ]
    assert session.project == "/home/dev/api" and session.key == SESSION_ID


def test_a_sub_agents_own_events_are_left_to_its_parent_call(log: Path) -> None:
    sub = {"parentToolCallId": "t1"}
    write(
        log,
        start(),
        event(
            "tool.execution_start", {"toolCallId": "t1", "toolName": "task", "arguments": {"prompt": "Survey"}}, "e1"
        ),
        event("assistant.message", {"messageId": "m9", "content": "Looking around.", "toolRequests": [], **sub}, "e2"),
        event(
            "tool.execution_start", {"toolCallId": "t2", "toolName": "grep", "arguments": {"pattern": "x"}, **sub}, "e3"
        ),
        event("tool.execution_complete", {"toolCallId": "t1", "success": True, "result": {"content": "Report."}}, "e4"),
    )
    session = only_session(copilot.read(log, None))
    assert [(m.tool, m.text) for m in session.messages] == [("task", "prompt=Survey"), ("task", "Report.")]


# -- incremental reading ------------------------------------------------------------------------


def test_appended_events_come_back_alone(log: Path) -> None:
    write(log, start(), event("user.message", {"content": "Add pagination"}, "e1"))
    first = copilot.read(log, None)
    assert copilot.read(log, first.cursor).sessions == []  # unchanged
    append(
        log,
        event(
            "assistant.message", {"messageId": "m1", "content": "Added cursor pagination.", "toolRequests": []}, "e2"
        ),
        event("session.ephemeral_thing", {"x": 1}, "e3", ephemeral=True),
    )
    later = only_session(copilot.read(log, first.cursor))
    assert [(m.role, m.id, m.text) for m in later.messages] == [(ASSISTANT, "m1", "Added cursor pagination.")]
    assert later.project == "/home/dev/api" and not later.restart


def test_a_tool_result_read_later_still_knows_its_tool(log: Path) -> None:
    request = {"toolCallId": "t1", "name": "bash", "arguments": {"command": "make"}}
    write(log, start(), event("assistant.message", {"messageId": "m1", "content": "", "toolRequests": [request]}, "e1"))
    first = copilot.read(log, None)
    append(
        log,
        event("tool.execution_start", {"toolCallId": "t1", "toolName": "bash", "arguments": {"command": "make"}}, "e2"),
        event("tool.execution_complete", {"toolCallId": "t1", "success": False, "result": {"content": "boom"}}, "e3"),
    )
    later = only_session(copilot.read(log, first.cursor)).messages
    assert [(m.tool, m.text, m.is_error) for m in later] == [("bash", "boom", True)]


def test_a_partial_last_line_waits_until_it_is_complete(log: Path) -> None:
    write(log, start())
    first = copilot.read(log, None)
    whole = event("user.message", {"content": "Ship it"}, "e1")
    append(log, whole[:20])
    waiting = copilot.read(log, first.cursor)
    assert waiting.sessions == [] and waiting.cursor.offset == first.cursor.offset
    append(log, whole[20:])
    assert texts(only_session(copilot.read(log, waiting.cursor)), USER) == ["Ship it"]


def test_a_replaced_file_is_read_again_from_the_start(log: Path) -> None:
    write(log, start(), *(event("user.message", {"content": f"Prompt {i}"}, f"e{i}") for i in range(1, 4)))
    first = copilot.read(log, None)
    write(log, start(), event("user.message", {"content": "Fresh"}, "e1"))
    again = only_session(copilot.read(log, first.cursor))
    assert again.restart and texts(again, USER) == ["Fresh"]


def test_the_summary_alone_is_news(log: Path) -> None:
    write(log, start(), event("user.message", {"content": "Tidy the README"}, "e1"))
    first = copilot.read(log, None)
    append(log, event("session.task_complete", {"summary": "Tidied the README.", "success": True}, "e2"))
    later = only_session(copilot.read(log, first.cursor))
    assert later.messages == [] and later.summary == "Tidied the README."


# -- malformed input ----------------------------------------------------------------------------

MALFORMED = {
    "invalid UTF-8": (b'{"type":"user.message","data":{"content":"\xc3"}}\n', "invalid UTF-8"),
    "binary junk": (b"\x00\x00\x00\x07junk\n", "binary data"),
    "truncated JSON": (b'{"type":"user.message","data":{"content":"hal\n', "invalid JSON"),
    "JSON that is not an object": (b'"user.message"\n', "not a JSON object"),
    "unknown record type": (b'{"type":"telemetry","data":{}}\n', "unknown record type"),
    "a type that is not a string": (b'{"type":["user.message"],"data":{}}\n', "unknown record type"),
    "data of the wrong type": (b'{"type":"user.message","data":"hello"}\n', "wrong type in event data"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_lines_are_skipped_and_counted(case: str, log: Path) -> None:
    bad, reason = MALFORMED[case]
    write(log, start(), event("user.message", {"content": "Before"}, "e1"))
    append(log, bad, event("user.message", {"content": "After"}, "e2"))
    batch = copilot.read(log, None)
    assert batch.skipped == {reason: 1}
    assert batch.notes == [f"{log}:3: {reason}"]
    assert texts(only_session(batch), USER) == ["Before", "After"]


def test_wrong_types_in_known_fields_fall_back_to_defaults(log: Path) -> None:
    write(
        log,
        event("session.start", {"sessionId": 9, "context": "cwd", "selectedModel": []}, "e0"),
        event("user.message", {"content": ["not", "text"]}, "e1"),
        event("assistant.message", {"content": 3, "toolRequests": "none", "messageId": {}}, "e2"),
        event("tool.execution_start", {"toolCallId": "t1", "toolName": 5, "arguments": "{broken"}, "e3"),
        event("tool.execution_complete", {"toolCallId": "t1", "result": 12, "error": ["x"]}, "e4"),
        event("user.message", {"content": "Still here"}, "e5", timestamp=12345),
    )
    session = only_session(copilot.read(log, None))
    assert session.key == SESSION_ID  # the directory's name
    assert (session.project, session.model) == (None, None)
    assert [(m.role, m.tool, m.text) for m in session.messages] == [
        (TOOL, "tool", "input={broken"),
        (TOOL, "tool", "(no output)"),
        (USER, None, "Still here"),
    ]
    assert session.messages[-1].at is None


def test_a_huge_line_is_skipped(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1000)
    write(
        log,
        start(),
        event("user.message", {"content": "z" * 3000}, "e1"),
        event("user.message", {"content": "ok"}, "e2"),
    )
    batch = copilot.read(log, None)
    assert batch.skipped == {"huge line": 1}
    assert texts(only_session(batch), USER) == ["ok"]


def test_a_broken_legacy_dump_is_counted(tmp_path: Path) -> None:
    for name, content, reason in [
        ("a.json", b'{"sessionId": "x", "timeline": [', "invalid JSON"),
        ("b.json", b'{"sessionId": "x"}', "not a Copilot CLI session"),
        ("c.json", b"\xc3\x28", "invalid UTF-8"),
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        batch = copilot.read(path, None)
        assert batch.sessions == [] and batch.skipped == {reason: 1}
    odd = tmp_path / "d.json"
    odd.write_text(
        json.dumps({"sessionId": "d", "timeline": [7, {"type": "hologram"}, {"type": "user", "text": "hi"}]})
    )
    batch = copilot.read(odd, None)
    assert batch.skipped == {"not a JSON object": 1, "unknown record type": 1}
    assert texts(only_session(batch), USER) == ["hi"]


VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
EVENT = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "session.start",
                "user.message",
                "assistant.message",
                "tool.execution_start",
                "tool.execution_complete",
                "x",
            ]
        )
        | VALUE,
        "data": st.fixed_dictionaries(
            {},
            optional={
                "content": VALUE,
                "toolRequests": st.lists(
                    st.fixed_dictionaries({}, optional={"toolCallId": VALUE, "name": VALUE, "arguments": VALUE}),
                    max_size=3,
                )
                | VALUE,
                "messageId": VALUE,
                "error": VALUE,
                "summary": VALUE,
                "newModel": VALUE,
                "parentToolCallId": VALUE,
                "toolCallId": VALUE,
                "toolName": VALUE,
                "arguments": VALUE,
                "result": VALUE,
                "context": VALUE,
                "success": VALUE,
            },
        )
        | VALUE,
    },
    optional={"id": VALUE, "timestamp": VALUE, "ephemeral": VALUE},
)


def json_object(chunk: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(chunk)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(st.binary(max_size=200) | EVENT.map(lambda d: json.dumps(d).encode() + b"\n"), max_size=8))
def test_arbitrary_input_never_raises(chunks: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(chunks))
    first = copilot.read(path, None)
    with path.open("ab") as fh:
        fh.write(b"".join(chunks[:3]) + b"\n")
    copilot.read(path, first.cursor)
    legacy = tmp_path / "legacy.json"
    legacy.write_bytes(b"".join(chunks))
    copilot.read(legacy, None)
    # The same values as a legacy dump's timeline (behind a real prompt, so it is read) and as chat messages.
    entries = [e for e in map(json_object, chunks) if e is not None]
    legacy.write_text(json.dumps({"sessionId": "s", "timeline": [{"type": "user", "text": "hi"}, *entries]}))
    copilot.read(legacy, None)
    chat = [e.get("data") for e in entries]
    legacy.write_text(json.dumps({"sessionId": "s", "timeline": [], "chatMessages": chat}))
    copilot.read(legacy, None)


# -- where the logs are -------------------------------------------------------------------------


def test_locate_finds_sessions_in_the_default_place(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / ".copilot"
    current = write(root / "session-state" / SESSION_ID / "events.jsonl", "")
    flat = write(root / "session-state" / "0f0e0d0c.jsonl", "")
    legacy = write(root / "history-session-state" / "session_0b2a81da_1760187292206.json", "")
    write(root / "session-state" / SESSION_ID / "workspace.yaml", "")
    write(root / "config.json", "{}")
    write(root / "mcp-config.json", "{}")
    assert copilot.locate({}, home) == sorted([current, flat, legacy])
    assert copilot.files(root / "session-state") == sorted([current, flat])
    assert copilot.files(home) == sorted([current, flat, legacy])


def test_locate_honours_copilot_home_and_the_older_xdg_config_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".copilot" / "session-state" / "ignored" / "events.jsonl", "")
    moved = write(tmp_path / "ch" / "session-state" / "s1" / "events.jsonl", "")
    xdg = write(tmp_path / "xdg" / ".copilot" / "session-state" / "s2" / "events.jsonl", "")
    env = {"COPILOT_HOME": str(tmp_path / "ch"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert copilot.locate(env, home) == sorted([moved, xdg])


def test_locate_returns_nothing_when_there_is_nothing(tmp_path: Path) -> None:
    assert copilot.locate({}, tmp_path) == []
    assert copilot.files(tmp_path / "missing") == []
    assert copilot.files(EVENTS) == [EVENTS]
    assert copilot.files(SAMPLES / "SOURCES.md") == []
