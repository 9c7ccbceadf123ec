"""The Claude Code importer: real transcripts in, sessions of clean messages out, read incrementally."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import base, importer
from engram_cli.ingest.base import ASSISTANT, SHELL, TOOL, USER, Batch, Cursor, Session

SAMPLES = Path(__file__).parent / "fixtures" / "agent-logs" / "claude-code"
SYNTHETIC = Path(__file__).parent / "fixtures" / "ingest" / "claude-code" / "7d3c9a52-1f0e-4b6a-9c41-0a8e5b2f6d13.jsonl"
INIT = SAMPLES / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
ORCHESTRATOR = SAMPLES / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
REWIND = SAMPLES / "claude-code-log_fixtures" / "dag_compact_after_rewind.jsonl"
SUBAGENT = next((SAMPLES / "claude-code-log_fixtures" / "minimal_showcase").rglob("agent-showcol1.jsonl"))
SESSION_ID = "3b9f1c2e-8d7a-4e6f-9a1b-2c3d4e5f6a7b"

claude = importer("claude-code")


def only_session(batch: Batch) -> Session:
    assert len(batch.sessions) == 1
    return batch.sessions[0]


def texts(session: Session, role: str) -> list[str]:
    return [m.text for m in session.messages if m.role == role]


def line(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> str:
    """One transcript line of session SESSION_ID."""
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {
            "id": extra.pop("mid", f"msg_{uuid}"),
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
        }
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "cwd": "/home/dev/shop",
        "sessionId": SESSION_ID,
        "uuid": uuid,
        "timestamp": "2026-03-02T10:00:00.000Z",
        "message": message,
    }
    record.update(extra)
    return json.dumps(record) + "\n"


def prompt(uuid: str, parent: str | None, text: str) -> str:
    return line("user", uuid, parent, text)


def reply(uuid: str, parent: str | None, text: str, **extra: Any) -> str:
    return line("assistant", uuid, parent, [{"type": "text", "text": text}], **extra)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return tmp_path / "projects" / "-home-dev-shop" / f"{SESSION_ID}.jsonl"


def write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def append(path: Path, *lines: str | bytes) -> None:
    with path.open("ab") as fh:
        for chunk in lines:
            fh.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)


# -- real samples -------------------------------------------------------------------------------


def test_a_real_init_session_keeps_answers_tool_calls_and_results() -> None:
    session = only_session(claude.read(INIT, None))
    assert session.source == "claude-code"
    assert session.key == "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
    assert session.project == "/path/to/Demo"
    assert session.model == "claude-sonnet-4-20250514"
    assert session.started_at == "2025-09-03T00:47:19.293000Z"
    assert session.updated_at == "2025-09-03T00:47:52.264000Z"
    # `/init` has no words of the person's and its expansion is isMeta: no user message at all.
    assert texts(session, USER) == []
    # Three responses carry text; one (msg_01TqDZ…) is split over a text line and a TodoWrite line.
    assistant = [m for m in session.messages if m.role == ASSISTANT]
    assert [m.id for m in assistant] == [
        "msg_01TqDZoU6FcpxB4u2AmpgWfZ",
        "msg_01RaR4giiko9W2SCE3aCLQjb",
        "msg_01EoAxzgxSHRavtZuynqjwKT",
    ]
    assert assistant[0].text.startswith("I'll analyze the codebase and create a CLAUDE.md file")
    calls = [m for m in session.messages if m.role == TOOL and m.id and m.id.startswith("toolu_")]
    results = [m for m in session.messages if m.role == TOOL and m not in calls]
    assert len(calls) == 12 and len(results) == 12
    assert len(session.messages) == 27
    ls = next(m for m in calls if m.id == "toolu_012Gbtu9wRFgVWjdDUHE3djw")
    assert (ls.tool, ls.command, ls.text) == ("Bash", "ls -la", "ls -la")
    denied = next(m for m in results if m.tool == "Write")
    assert denied.is_error and "haven't granted it yet" in denied.text
    assert next(m for m in calls if m.tool == "Glob").text == "pattern=package.json"
    assert not any(m.is_error for m in results if m is not denied)
    assert all(m.at and m.at.endswith("Z") for m in session.messages)


def test_slash_command_words_are_kept_and_inline_sub_agents_are_not() -> None:
    session = only_session(claude.read(ORCHESTRATOR, None))
    users = texts(session, USER)
    assert users == ["/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"]
    everything = "\n".join(m.text for m in session.messages)
    # The 22 sidechain lines (the Task sub-agents' own prompts and tool calls) are gone ...
    assert "tree /path/to/Demo" not in everything
    assert not any(m.text.startswith("Examine the package.json") for m in session.messages)
    # ... while the parent keeps the Task calls and the sub-agent's report as the Task result.
    task_results = [m for m in session.messages if m.tool == "Task" and not (m.id or "").startswith("toolu_")]
    assert task_results[0].is_error and "required parameter `prompt` is missing" in task_results[0].text
    assert task_results[1].text.startswith("## Package.json Analysis Summary")
    assert len(session.messages) == 30
    assert texts(session, ASSISTANT)[-1].startswith("CLAUDE.mdファイルを最新の状態にアップデートしました")


def test_a_rewind_keeps_the_branch_that_continues_and_drops_the_compaction_summary() -> None:
    session = only_session(claude.read(REWIND, None))
    assert [m.text for m in session.messages] == [
        "Start",
        "Ready",
        "Second attempt",
        "Second answer",
        "Keep going",
        "Kept going",
        "After compaction",
        "Final answer",
    ]
    assert session.key == "s1"  # not a uuid file name: the recorded session id


def test_a_summary_whose_leaf_is_in_another_session_is_not_this_sessions_summary() -> None:
    session = only_session(claude.read(SAMPLES / "simonw_sample_session.jsonl", None))
    assert session.summary is None
    assert session.key == "test-session-id"
    assert texts(session, USER) == ["Create a hello world function", "Now add a goodbye function"]
    commit = next(m for m in session.messages if m.tool == "Bash" and m.command)
    assert commit.command == "git add . && git commit -m 'Add hello function'"


def test_sub_agent_files_are_not_sessions_of_their_own() -> None:
    assert claude.files(SUBAGENT) == []
    assert claude.read(SUBAGENT, None).sessions == []
    assert SUBAGENT not in claude.files(SAMPLES)
    assert INIT in claude.files(SAMPLES) and REWIND in claude.files(SAMPLES)


# -- noise and structure (synthetic 2.x transcript) -----------------------------------------------


@pytest.fixture(scope="module")
def synthetic() -> Session:
    batch = claude.read(SYNTHETIC, None)
    assert not batch.skipped
    return only_session(batch)


def test_noise_is_dropped(synthetic: Session) -> None:
    everything = "\n".join(f"{m.text}\n{m.command}" for m in synthetic.messages)
    for noise in (
        "<system-reminder>",
        "The user opened",  # a reminder appended to the prompt
        "malware",  # a reminder appended to a tool result
        "The clock is probably not pinned",  # thinking
        "iVBORw0KGgo",  # base64 image
        "Set model to opus",  # local command output
        "Review the code in the upload module carefully",  # slash-command expansion (isMeta)
        "Request interrupted",
        "API Error",
        "Replayed prompt",  # the parent session's lines, replayed on resume
        "Search the repository for clock usages",  # a sub-agent's prompt
        "Full output saved to",
        "task-notification",
        "formatted 1 file",  # hook output
    ):
        assert noise not in everything, noise


def test_what_the_person_said_is_kept_in_order(synthetic: Session) -> None:
    spoken = [(m.role, m.text) for m in synthetic.messages if m.role in (USER, SHELL)]
    assert spoken == [
        (USER, "Fix the flaky upload test in tests/test_upload.py"),  # written twice, read once
        (USER, "Here is the screenshot of the error"),
        (USER, "/review the upload module"),  # `/model opus` is housekeeping
        (SHELL, "git status --short"),
        (USER, "Also check the CI config"),  # typed while the agent worked: once, though queued and dequeued
    ]
    shell = synthetic.messages[-2]
    assert shell.command == "git status --short"


def test_a_response_split_over_lines_sharing_its_message_id_is_one_message(synthetic: Session) -> None:
    merged = [m for m in synthetic.messages if m.id == "msg_01B"]
    assert len(merged) == 1
    assert merged[0].text == "The S3 mock clock is not pinned.\n\nI'll pin it in conftest.py."
    assert [m.id for m in synthetic.messages if m.role == ASSISTANT] == [
        "msg_01A",
        "msg_01B",
        "msg_01E",
        "msg_01F",
        "msg_01G",
    ]


def test_tool_calls_and_results(synthetic: Session) -> None:
    bash = [m for m in synthetic.messages if m.tool == "Bash"]
    assert [(m.command, m.is_error) for m in bash] == [
        ("pytest tests/test_upload.py -q | tail -5", False),
        (None, True),  # exit code 0 through the pipe, but the output says FAILED
        ("pytest tests/test_upload.py -q", False),
        (None, False),
    ]
    read_result = next(m for m in synthetic.messages if m.tool == "Read" and m.id != "toolu_02")
    assert read_result.text.startswith("import pytest")  # the spilled output's inline preview
    edit = next(m for m in synthetic.messages if m.id == "toolu_03")
    assert edit.text.startswith("file_path=/work/shop/tests/conftest.py, old_string=return FakeS3()")


def test_session_metadata(synthetic: Session) -> None:
    assert synthetic.key == "7d3c9a52-1f0e-4b6a-9c41-0a8e5b2f6d13"
    assert synthetic.project == "/work/shop"
    assert synthetic.title == "upload clock fix"  # a rename beats any AI title, even a later one
    assert synthetic.summary == "Pinned the S3 mock clock to fix the flaky upload test"
    assert synthetic.model == "claude-opus-4-5"
    assert synthetic.started_at == "2026-03-02T09:00:07.000000Z"
    assert synthetic.updated_at == "2026-03-02T09:03:21.000000Z"
    assert len(synthetic.messages) == 18


# -- incremental reading ------------------------------------------------------------------------


def test_appended_lines_come_back_alone(tmp_path: Path) -> None:
    copy = shutil.copy(INIT, tmp_path / INIT.name)
    first = claude.read(Path(copy), None)
    assert claude.read(Path(copy), first.cursor).sessions == []  # unchanged
    own = INIT.stem
    append(
        Path(copy),
        prompt("new-1", "549b3502-6e30-4fa5-869f-c998df26c3f0", "Also add a Makefile").replace(SESSION_ID, own),
        reply("new-2", "new-1", "Added a Makefile with test and lint targets.").replace(SESSION_ID, own),
        # A line replayed from another session is not this session's.
        prompt("new-3", "new-2", "From elsewhere"),
    )
    second = claude.read(Path(copy), first.cursor)
    session = only_session(second)
    assert [(m.role, m.text) for m in session.messages] == [
        (USER, "Also add a Makefile"),
        (ASSISTANT, "Added a Makefile with test and lint targets."),
    ]
    assert not session.restart
    assert session.project == "/path/to/Demo"  # learnt from the first read, kept in the cursor
    assert second.cursor.state["lines"] == 32


def test_a_partial_last_line_waits_until_it_is_complete(transcript: Path) -> None:
    write(transcript, prompt("u1", None, "Run the tests"))
    first = claude.read(transcript, None)
    whole = reply("a1", "u1", "All 40 tests pass.")
    append(transcript, whole[:25])
    waiting = claude.read(transcript, first.cursor)
    assert waiting.sessions == [] and waiting.cursor.offset == first.cursor.offset
    append(transcript, whole[25:])
    done = claude.read(transcript, waiting.cursor)
    assert texts(only_session(done), ASSISTANT) == ["All 40 tests pass."]


def test_a_replaced_file_is_read_again_from_the_start(transcript: Path) -> None:
    write(transcript, prompt("u1", None, "First version"), reply("a1", "u1", "One"), reply("a2", "a1", "Two"))
    first = claude.read(transcript, None)
    transcript.write_text(prompt("u9", None, "Shorter"), encoding="utf-8")
    again = only_session(claude.read(transcript, first.cursor))
    assert again.restart
    assert texts(again, USER) == ["Shorter"]


def test_a_rewind_into_lines_already_read_returns_the_whole_session_again(transcript: Path) -> None:
    write(
        transcript,
        prompt("u1", None, "Make the export faster"),
        reply("a1", "u1", "Which export?"),
        prompt("u2", "a1", "The CSV one, use pandas"),
        reply("a2", "u2", "Switched the CSV export to pandas."),
    )
    first = claude.read(transcript, None)
    # Rewound to before "The CSV one": a new prompt under the same parent.
    append(transcript, prompt("u3", "a1", "The CSV one, but keep the csv module"), reply("a3", "u3", "Kept csv."))
    again = only_session(claude.read(transcript, first.cursor))
    assert again.restart
    assert [m.text for m in again.messages] == [
        "Make the export faster",
        "Which export?",
        "The CSV one, but keep the csv module",
        "Kept csv.",
    ]


def test_a_response_continued_after_a_read_keeps_a_distinct_id(transcript: Path) -> None:
    write(transcript, prompt("u1", None, "Explain"), reply("a1", "u1", "First part.", mid="msg_X"))
    first = claude.read(transcript, None)
    append(transcript, reply("a2", "a1", "Second part.", mid="msg_X"))
    later = only_session(claude.read(transcript, first.cursor))
    assert [(m.id, m.text) for m in later.messages] == [("msg_X@L3", "Second part.")]
    whole = only_session(claude.read(transcript, None))
    assert [(m.id, m.text) for m in whole.messages if m.role == ASSISTANT] == [("msg_X", "First part.\n\nSecond part.")]


def test_a_tool_result_read_later_still_knows_its_tool(transcript: Path) -> None:
    call = line(
        "assistant", "a1", "u1", [{"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "make"}}]
    )
    write(transcript, prompt("u1", None, "Build it"), call)
    first = claude.read(transcript, None)
    result = [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "make: *** No rule", "is_error": True}]
    append(transcript, line("user", "r1", "a1", result))
    later = only_session(claude.read(transcript, first.cursor)).messages
    assert [(m.tool, m.is_error, m.text) for m in later] == [("Bash", True, "make: *** No rule")]


# -- malformed input ----------------------------------------------------------------------------

MALFORMED = {
    "invalid UTF-8": (b'{"type":"user","message":{"content":"caf\xe9"}}\n', "invalid UTF-8"),
    "binary junk": (b"\x00\x01\x02\xff\xfe\n", "invalid UTF-8"),
    "NUL bytes in text": (b'{"type":"user"}\x00\x00\n', "binary data"),
    "truncated JSON": (b'{"type":"user","message":{"content":"half\n', "invalid JSON"),
    "JSON that is not an object": (b'["user", "hello"]\n', "not a JSON object"),
    "unknown record type": (b'{"type":"hologram","uuid":"h1"}\n', "unknown record type"),
    "message of the wrong type": (b'{"type":"user","uuid":"w1","message":"hello"}\n', "wrong type in message"),
    "content of the wrong type": (
        b'{"type":"assistant","uuid":"w2","message":{"id":"m","content":42}}\n',
        "wrong type in message content",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_lines_are_skipped_and_counted(case: str, transcript: Path) -> None:
    bad, reason = MALFORMED[case]
    write(transcript, prompt("u1", None, "Before"))
    append(transcript, bad, prompt("u2", "u1", "After"))
    batch = claude.read(transcript, None)
    assert batch.skipped == {reason: 1}
    assert batch.notes == [f"{transcript}:2: {reason}"]
    assert texts(only_session(batch), USER) == ["Before", "After"]


def test_wrong_types_in_known_fields_fall_back_to_defaults(transcript: Path) -> None:
    odd = {
        "type": "user",
        "uuid": ["not", "a", "string"],
        "parentUuid": 7,
        "sessionId": 12,
        "cwd": {"path": "/x"},
        "timestamp": 1710000000,
        "isSidechain": "no",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": 5}, "stray", {"type": "text", "text": "Fine"}],
        },
    }
    write(transcript, json.dumps(odd) + "\n")
    batch = claude.read(transcript, None)
    session = only_session(batch)
    assert [(m.text, m.id, m.at) for m in session.messages] == [("Fine", "L1", None)]
    assert session.project is None


def test_a_huge_line_is_skipped(transcript: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1000)
    write(transcript, prompt("u1", None, "x" * 5000), prompt("u2", None, "Small"))
    batch = claude.read(transcript, None)
    assert batch.skipped == {"huge line": 1}
    assert texts(only_session(batch), USER) == ["Small"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
# Shapes of the real records, with any JSON value (of any type) where a leaf is expected.
WORDS = st.sampled_from(["hi", "", "<command-name>/x</command-name>", "<bash-input>ls</bash-input>", "u1"]) | JSON
BLOCK = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image"]) | JSON},
    optional={k: WORDS for k in ("text", "id", "name", "input", "content", "is_error", "tool_use_id")},
)
MESSAGE = st.fixed_dictionaries(
    {}, optional={"id": WORDS, "model": WORDS, "content": WORDS | st.lists(BLOCK, max_size=3)}
)
ATTACHMENT = st.fixed_dictionaries(
    {"type": st.just("queued_command") | JSON}, optional={"prompt": WORDS, "commandMode": WORDS, "origin": JSON}
)
FIELDS = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "summary", "system", "ai-title", "attachment", "x"]) | JSON},
    optional={
        "message": MESSAGE | JSON,
        "attachment": ATTACHMENT | JSON,
        "isSidechain": JSON,
        "isCompactSummary": JSON,
        "uuid": JSON,
        "parentUuid": JSON,
        "sessionId": JSON,
        "isMeta": JSON,
        "timestamp": JSON,
        "leafUuid": JSON,
        "summary": st.text(min_size=1, max_size=5) | JSON,
        "aiTitle": JSON,
        "customTitle": JSON,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(st.binary(max_size=200) | FIELDS.map(lambda d: json.dumps(d).encode() + b"\n"), max_size=8))
def test_arbitrary_input_never_raises(chunks: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION_ID}.jsonl"
    path.write_bytes(b"".join(chunks))
    batch = claude.read(path, None)
    assert batch.cursor.offset <= path.stat().st_size
    # Reading again from the cursor after more junk never raises either.
    with path.open("ab") as fh:
        fh.write(b"\n".join(chunks[:2]) + b"\n")
    claude.read(path, batch.cursor)


# -- where the logs are -------------------------------------------------------------------------


def test_locate_finds_transcripts_in_the_default_places(tmp_path: Path) -> None:
    home = tmp_path / "home"
    main = write(home / ".claude" / "projects" / "-work-a" / f"{SESSION_ID}.jsonl", "")
    xdg = write(home / ".config" / "claude" / "projects" / "-work-b" / "b.jsonl", "")
    write(home / ".claude" / "projects" / "-work-a" / "agent-1234.jsonl", "")
    write(home / ".claude" / "projects" / "-work-a" / SESSION_ID / "subagents" / "agent-5678.jsonl", "")
    write(home / ".claude" / "history.jsonl", "")
    assert claude.locate({}, home) == sorted([main, xdg])


def test_locate_honours_claude_config_dir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".claude" / "projects" / "-work-a" / "ignored.jsonl", "")
    custom = write(tmp_path / "elsewhere" / "projects" / "-work-c" / "c.jsonl", "")
    assert claude.locate({"CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")}, home) == [custom]


def test_locate_returns_nothing_when_there_is_nothing(tmp_path: Path) -> None:
    assert claude.locate({}, tmp_path) == []
    assert claude.files(tmp_path / "missing") == []


def test_an_unchanged_file_returns_the_same_cursor(tmp_path: Path) -> None:
    copy = Path(shutil.copy(SYNTHETIC, tmp_path / SYNTHETIC.name))
    first = claude.read(copy, None)
    again = claude.read(copy, first.cursor)
    assert again.sessions == [] and again.cursor is first.cursor
    assert isinstance(first.cursor, Cursor) and first.cursor.offset == copy.stat().st_size
    json.dumps(first.cursor.state)  # the loader stores it as JSON
