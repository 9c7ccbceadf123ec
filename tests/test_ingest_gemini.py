"""Gemini CLI importer: real recordings in both layouts, incremental reads, rewinds, bad input, locations."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.base import MAX_LINE_BYTES, Batch, Cursor, Session
from engram_cli.ingest.gemini import IMPORTER

SAMPLES = Path(__file__).parent / "fixtures" / "agent-logs" / "gemini-cli"
JSONL = SAMPLES / "vibecodingtracker_session.jsonl"
LEGACY = SAMPLES / "vibecodingtracker_legacy_session.json"
SMALL = SAMPLES / "agentsview_tool_calls_with_results.json"


def only(batch: Batch) -> Session:
    assert len(batch.sessions) == 1
    return batch.sessions[0]


def texts(session: Session) -> str:
    return "\n".join(m.text for m in session.messages)


def chats_dir(root: Path, project: str = "myproj") -> Path:
    chats = root / ".gemini" / "tmp" / project / "chats"
    chats.mkdir(parents=True)
    return chats


def line(obj: Any) -> bytes:
    return (json.dumps(obj) + "\n").encode()


META = {"sessionId": "s-1", "projectHash": "abc", "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"}


def user(mid: str, text: str) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-05-01T10:00:01.000Z", "type": "user", "content": [{"text": text}]}


def gemini(mid: str, text: str, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": mid, "timestamp": "2026-05-01T10:00:02Z", "type": "gemini", "content": text}
    if calls is not None:
        record["toolCalls"] = calls
    record["model"] = "gemini-2.5-pro"
    return record


def shell_call(cid: str, command: str, output: str, status: str = "success") -> dict[str, Any]:
    response = {"id": cid, "name": "run_shell_command", "response": {"output": output}}
    return {"id": cid, "name": "run_shell_command", "args": {"command": command}, "status": status,
            "result": [{"functionResponse": response}], "timestamp": "2026-05-01T10:00:03Z"}  # fmt: skip


def test_is_registered() -> None:
    assert importer("gemini-cli") is IMPORTER
    assert IMPORTER.agent == "gemini-cli"


# --- the real samples -------------------------------------------------------------------------


def test_jsonl_recording_becomes_one_session_with_the_last_copy_of_each_message() -> None:
    batch = IMPORTER.read(JSONL, None)
    session = only(batch)
    assert not batch.skipped
    assert session.key == "0ab84937-9fe7-4284-986a-33c832af0b6a"
    assert session.started_at == "2026-04-23T12:52:52.759000Z"
    assert session.updated_at == "2026-04-23T12:58:35.591000Z"  # from the last $set
    assert session.model == "gemini-3.1-pro-preview"
    assert not session.restart
    ids = [m.id for m in session.messages]
    assert len(ids) == len(set(ids)) == 28
    users = [m for m in session.messages if m.role == "user"]
    # /init is what was typed; the prompt it expands to is not the person's words.
    assert users[0].text == "/init"
    assert users[1].text.startswith("幫我做一個小修改")
    assert len(users) == 2  # "System: Please continue." (a relayed tool response) is not a user message
    assert "You are an AI agent" not in texts(session)
    assert "System: Please continue" not in texts(session)
    assert "Request cancelled" not in texts(session)  # info records are the CLI talking
    assert "Initiating File Generation" not in texts(session)  # thoughts
    assert batch.cursor.offset == JSONL.stat().st_size
    assert batch.cursor.state["lines"] == 28


def test_jsonl_tool_calls_become_call_and_result_messages() -> None:
    session = only(IMPORTER.read(JSONL, None))
    calls = [m for m in session.messages if m.role == "tool" and not (m.id or "").endswith(":result")]
    results = [m for m in session.messages if (m.id or "").endswith(":result")]
    assert len(calls) == len(results) == 12
    read = next(m for m in calls if m.tool == "read_file")
    assert read.text == "file_path=README.md"
    replace = next(m for m in results if m.tool == "replace")
    assert replace.text.startswith("Successfully modified file: /home/wei/repo/discordbot/GEMINI.md")
    assert all(len(m.text) <= 602 for m in results)  # excerpts, not whole files
    assert not any(m.is_error for m in results)


def test_legacy_json_recording() -> None:
    batch = IMPORTER.read(LEGACY, None)
    session = only(batch)
    assert session.key == "8a20078e-2d5e-4f81-a640-9b879bbb7e6d"
    assert session.model == "gemini-3.1-pro-preview-customtools"
    assert [m.role for m in session.messages].count("user") == 1
    assert session.messages[0].text.startswith("請幫我依照專案實際狀況更新 README.md")
    assert session.messages[-1].role == "assistant"
    assert session.messages[-1].text.startswith("已經幫你整理好囉")
    writes = [m for m in session.messages if m.tool == "write_file" and not (m.id or "").endswith(":result")]
    assert len(writes) == 4
    assert all(len(m.text) < 1000 for m in writes)  # file contents in the arguments are cut short


def test_shell_like_tool_carries_its_command() -> None:
    session = only(IMPORTER.read(SMALL, None))
    run = next(m for m in session.messages if m.tool == "run_command" and m.command)
    assert run.command == "ls -la"
    assert run.text == "ls -la"
    assert session.messages[0].text == "Read the planning doc"
    assert session.messages[1].text == "Let me read that file."


# --- incremental reading ----------------------------------------------------------------------


def test_appended_lines_return_only_new_messages(tmp_path: Path) -> None:
    lines = JSONL.read_bytes().splitlines(keepends=True)
    path = tmp_path / "session-x.jsonl"
    path.write_bytes(b"".join(lines[:7]))  # up to the first copy of a gemini record (no tool calls yet)
    first = IMPORTER.read(path, None)
    assert [m.text for m in only(first).messages] == ["/init"]
    with path.open("ab") as fh:
        fh.write(b"".join(lines[7:]))
    second = IMPORTER.read(path, first.cursor)
    new = only(second).messages
    assert not only(second).restart
    assert "/init" not in [m.text for m in new]
    whole = only(IMPORTER.read(JSONL, None)).messages
    assert [m.id for m in only(first).messages] + [m.id for m in new] == [m.id for m in whole]
    # The re-appended record brought its five tool calls: they arrive now, the record's id once.
    assert sum(1 for m in new if (m.id or "").startswith("52e62e67")) == 10


def test_unchanged_file_returns_nothing_and_keeps_the_cursor() -> None:
    first = IMPORTER.read(JSONL, None)
    again = IMPORTER.read(JSONL, first.cursor)
    assert again.sessions == []
    assert again.cursor is first.cursor


def test_a_partial_last_line_waits_until_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "session-p.jsonl"
    path.write_bytes(line(META) + line(user("u1", "first")))
    first = IMPORTER.read(path, None)
    partial = json.dumps(user("u2", "second")).encode()
    with path.open("ab") as fh:
        fh.write(partial[:20])
    second = IMPORTER.read(path, first.cursor)
    assert second.sessions == []
    assert second.cursor.offset == first.cursor.offset
    with path.open("ab") as fh:
        fh.write(partial[20:] + b"\n")
    third = IMPORTER.read(path, second.cursor)
    assert [m.text for m in only(third).messages] == ["second"]


def test_rewind_returns_the_whole_remaining_session_as_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "session-r.jsonl"
    path.write_bytes(line(META) + line(user("u1", "keep me")) + line(gemini("g1", "ok")) + line(user("u2", "oops")))
    first = IMPORTER.read(path, None)
    assert len(only(first).messages) == 3
    with path.open("ab") as fh:
        fh.write(line({"$rewindTo": "u2"}) + line(user("u3", "better")))
    second = only(IMPORTER.read(path, first.cursor))
    assert second.restart
    assert [m.text for m in second.messages] == ["keep me", "ok", "better"]


def test_rewind_to_an_unknown_id_clears_the_session(tmp_path: Path) -> None:
    path = tmp_path / "session-r2.jsonl"
    path.write_bytes(line(META) + line(user("u1", "gone")) + line({"$rewindTo": "nope"}) + line(user("u2", "new")))
    assert [m.text for m in only(IMPORTER.read(path, None)).messages] == ["new"]


def test_messages_replaced_wholesale_by_set_restart_the_session(tmp_path: Path) -> None:
    path = tmp_path / "session-m.jsonl"
    path.write_bytes(line(META) + line(user("u1", "long question")) + line(gemini("g1", "long answer")))
    first = IMPORTER.read(path, None)
    with path.open("ab") as fh:
        fh.write(line({"$set": {"messages": [user("s1", "summary of the chat")]}}))
    second = only(IMPORTER.read(path, first.cursor))
    assert second.restart
    assert [m.text for m in second.messages] == ["summary of the chat"]


def test_a_returned_message_that_changes_restarts_the_session(tmp_path: Path) -> None:
    path = tmp_path / "session-c.jsonl"
    path.write_bytes(line(META) + line(user("u1", "q")) + line(gemini("g1", "draft answer")))
    first = IMPORTER.read(path, None)
    with path.open("ab") as fh:
        fh.write(line(gemini("g1", "final answer")))
    second = only(IMPORTER.read(path, first.cursor))
    assert second.restart
    assert [m.text for m in second.messages] == ["q", "final answer"]


def test_a_shrunk_or_replaced_file_is_read_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "session-s.jsonl"
    path.write_bytes(line(META) + line(user("u1", "one")) + line(user("u2", "two")))
    first = IMPORTER.read(path, None)
    path.write_bytes(line(META) + line(user("u9", "other")))
    second = only(IMPORTER.read(path, first.cursor))
    assert second.restart
    assert [m.text for m in second.messages] == ["other"]


def test_summary_set_later_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "session-y.jsonl"
    path.write_bytes(line(META) + line(user("u1", "q")))
    first = IMPORTER.read(path, None)
    with path.open("ab") as fh:
        fh.write(line({"$set": {"summary": "Fixed the flaky test", "lastUpdated": "2026-05-01T11:00:00Z"}}))
    session = only(IMPORTER.read(path, first.cursor))
    assert session.summary == "Fixed the flaky test"
    assert session.messages == []
    assert session.updated_at == "2026-05-01T11:00:00.000000Z"


def test_rewritten_json_session_returns_new_messages_or_restarts(tmp_path: Path) -> None:
    path = tmp_path / "session-j.json"
    doc: dict[str, Any] = {**META, "messages": [user("u1", "a"), gemini("g1", "b")]}
    path.write_text(json.dumps(doc))
    first = IMPORTER.read(path, None)
    doc["messages"].append(user("u2", "c"))
    path.write_text(json.dumps(doc, indent=2))
    second_batch = IMPORTER.read(path, first.cursor)
    second = only(second_batch)
    assert not second.restart
    assert [m.text for m in second.messages] == ["c"]
    doc["messages"] = doc["messages"][:1]  # rewound
    path.write_text(json.dumps(doc))
    third = only(IMPORTER.read(path, second_batch.cursor))
    assert third.restart
    assert [m.text for m in third.messages] == ["a"]


def test_json_caught_mid_write_is_read_again_later(tmp_path: Path) -> None:
    path = tmp_path / "session-w.json"
    path.write_text('{"sessionId": "s-1", "messages": [')
    batch = IMPORTER.read(path, None)
    assert batch.skipped["invalid JSON"] == 1
    assert batch.cursor.inode is None  # no stat recorded: the next run reads it again


# --- content rules ----------------------------------------------------------------------------


def test_odd_tool_results_are_tolerated(tmp_path: Path) -> None:
    odd = [
        {"id": "c1", "name": "read_file", "args": {}, "result": [{"functionResponse": "oops"}, 7, {"text": "t"}]},
        {"id": "c2", "name": "read_file", "args": {}, "result": "plain string"},
        {"id": "c3", "name": "read_file", "args": {}, "result": [{"functionResponse": {"response": {"n": 1}}}]},
    ]
    path = tmp_path / "session-o.json"
    path.write_text(json.dumps({**META, "messages": [gemini("g1", "", odd)]}))
    results = [m.text for m in only(IMPORTER.read(path, None)).messages if (m.id or "").endswith(":result")]
    assert results == ["t", "plain string", '{"n": 1}']


def test_failed_tools_are_errors(tmp_path: Path) -> None:
    failing = shell_call("c1", "pytest -q", "Output: 1 failed, 3 passed\nExit Code: 1")
    passing = shell_call("c2", "ls", "Output: a b\nProcess Group PGID: 7")
    refused = {"id": "c3", "name": "read_file", "args": {"file_path": "x"}, "status": "error",
               "result": [{"functionResponse": {"response": {"error": "File not found: x"}}}]}  # fmt: skip
    path = tmp_path / "session-e.json"
    path.write_text(json.dumps({**META, "messages": [gemini("g1", "", [failing, passing, refused])]}))
    session = only(IMPORTER.read(path, None))
    results = {m.id: m for m in session.messages if (m.id or "").endswith(":result")}
    assert results["g1:c1:result"].is_error
    assert not results["g1:c2:result"].is_error
    assert results["g1:c3:result"].is_error
    assert results["g1:c3:result"].text == "File not found: x"
    assert next(m for m in session.messages if m.id == "g1:c1").command == "pytest -q"


def test_referenced_file_contents_are_dropped_from_old_prompts(tmp_path: Path) -> None:
    prompt = (
        "explain @a.py\n--- Content from referenced files ---\nContent from @a.py:\nprint(1)\n--- End of content ---"
    )
    path = tmp_path / "session-f.json"
    path.write_text(json.dumps({**META, "messages": [user("u1", prompt)]}))
    assert [m.text for m in only(IMPORTER.read(path, None)).messages] == ["explain @a.py"]


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"id": "u9", "type": "user", "content": "caf\xe9"}\n', "invalid UTF-8"),
        (b"\x00\x01\x02garbage\x00\n", "binary data"),
        (b'{"id": "u9", "type": "user", "content": [{"te\n', "invalid JSON"),
        (b'{"$frobnicate": {"x": 1}}\n', "unknown record type"),
        (b'[1, 2, 3]\n', "not a JSON object"),
        (b'{"id": "g9", "type": "gemini", "content": "x", "toolCalls": "not a list"}\n', "wrong field type"),
        (b'{"id": "g9", "type": 5, "content": "x"}\n', "wrong field type"),
        (b'{"id": "g9", "type": "gemini", "content": "", "toolCalls": [{"name": "ls", "args": [1]}]}\n',
         "wrong field type"),
    ],
)  # fmt: skip
def test_bad_lines_are_skipped_and_counted(tmp_path: Path, raw: bytes, reason: str) -> None:
    path = tmp_path / "session-b.jsonl"
    path.write_bytes(line(META) + line(user("u1", "before")) + raw + line(user("u2", "after")))
    batch = IMPORTER.read(path, None)
    assert batch.skipped[reason] == 1
    assert [m.text for m in only(batch).messages] == ["before", "after"]
    assert any(note.startswith(f"{path}:3") for note in batch.notes)


def test_a_huge_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "session-h.jsonl"
    huge = b'{"id": "u9", "type": "user", "content": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n'
    path.write_bytes(line(META) + huge + line(user("u2", "after")))
    batch = IMPORTER.read(path, None)
    assert batch.skipped["huge line"] == 1
    assert [m.text for m in only(batch).messages] == ["after"]


@pytest.mark.parametrize("content", [b"\xff\xfe\x00junk", b"[]", b'"just a string"', b'{"messages": 3}'])
def test_bad_json_documents_never_crash(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "session-d.json"
    path.write_bytes(content)
    batch = IMPORTER.read(path, None)
    assert sum(batch.skipped.values()) >= 1
    assert all(not s.messages for s in batch.sessions)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_arbitrary_bytes_never_raise(tmp_path: Path, chunks: list[bytes]) -> None:
    path = tmp_path / "session-fuzz.jsonl"
    path.write_bytes(line(META) + b"\n".join(chunks))
    batch = IMPORTER.read(path, None)
    again = IMPORTER.read(path, Cursor(path=str(path), offset=len(line(META)), state={"lines": 1}))
    assert batch.cursor.offset <= path.stat().st_size
    assert again.cursor.offset <= path.stat().st_size


# --- where the files are ----------------------------------------------------------------------


def test_locate_uses_gemini_cli_home_and_the_default_home(tmp_path: Path) -> None:
    home, other = tmp_path / "home", tmp_path / "other"
    assert IMPORTER.locate({}, home) == []
    default = chats_dir(home) / "session-2026-05-01T10-00-aaaaaaaa.jsonl"
    default.write_bytes(line(META))
    moved = chats_dir(other) / "session-2026-05-01T10-00-bbbbbbbb.json"
    moved.write_text("{}")
    assert IMPORTER.locate({}, home) == [default]
    assert IMPORTER.locate({"GEMINI_CLI_HOME": str(other)}, home) == [moved]


def test_files_prefers_the_jsonl_a_resumed_session_was_copied_to_and_skips_subagents(tmp_path: Path) -> None:
    chats = chats_dir(tmp_path)
    (chats / "session-2026-03-27T10-19-8a20078e.json").write_text("{}")
    resumed = chats / "session-2026-03-27T10-19-8a20078e.jsonl"
    resumed.write_bytes(line(META))
    other = chats / "session-2026-03-28T09-00-11111111.json"
    other.write_text("{}")
    (chats / "8a20078e-full-id").mkdir()
    (chats / "8a20078e-full-id" / "sub-agent-id.jsonl").write_bytes(line(META))
    (tmp_path / ".gemini" / "tmp" / "myproj" / "logs.json").write_text("[]")
    assert IMPORTER.files(tmp_path) == [resumed, other]
    assert IMPORTER.files(other) == [other]


def test_project_comes_from_the_marker_the_registry_or_the_path_hash(tmp_path: Path) -> None:
    marked = chats_dir(tmp_path, "engram") / "session-a.jsonl"
    (marked.parent.parent / ".project_root").write_text("/home/me/src/engram\n")
    slugged = chats_dir(tmp_path, "webapp") / "session-b.jsonl"
    digest = hashlib.sha256(b"/home/me/src/legacy").hexdigest()
    hashed = chats_dir(tmp_path, digest) / "session-c.jsonl"
    registry = {"projects": {"/home/me/src/webapp": "webapp", "/home/me/src/legacy": "legacy"}}
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps(registry))
    for path in (marked, slugged, hashed):
        path.write_bytes(line(META) + line(user("u1", "hi")))
    assert only(IMPORTER.read(marked, None)).project == "/home/me/src/engram"
    assert only(IMPORTER.read(slugged, None)).project == "/home/me/src/webapp"
    assert only(IMPORTER.read(hashed, None)).project == "/home/me/src/legacy"
    loose = tmp_path / "loose.jsonl"
    shutil.copy(marked, loose)
    assert only(IMPORTER.read(loose, None)).project is None
