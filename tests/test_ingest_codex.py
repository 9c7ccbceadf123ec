"""The Codex importer: three rollout layouts in, one session of clean messages per file out."""

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
from engram_cli.ingest.extract import extract
from engram_cli.ingest.extract.fixes import changed_lines

SAMPLES = Path(__file__).parent / "fixtures" / "agent-logs" / "codex"
REAL = SAMPLES / "vibecodingtracker_codex_v0.39.jsonl"
MODERN = SAMPLES / "claude-code-log_fixtures" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
EARLY = SAMPLES / "claude-code-log_fixtures" / "rollout-44444444-4444-4444-8444-444444444444.jsonl"
TS_ERA = (
    Path(__file__).parent
    / "fixtures"
    / "ingest"
    / "codex"
    / "rollout-2025-04-16-5f2b7a1c-3d4e-4f60-8a9b-0c1d2e3f4a5b.json"
)
SESSION_ID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

codex = importer("codex")


def only_session(batch: Batch) -> Session:
    assert len(batch.sessions) == 1
    return batch.sessions[0]


def texts(session: Session, role: str) -> list[str]:
    return [m.text for m in session.messages if m.role == role]


def envelope(kind: str, payload: dict[str, Any], at: str = "2026-02-01T10:00:00.000Z") -> str:
    return json.dumps({"timestamp": at, "type": kind, "payload": payload}, ensure_ascii=False) + "\n"


def meta(cwd: str = "/home/dev/shop") -> str:
    return envelope("session_meta", {"id": SESSION_ID, "timestamp": "2026-02-01T10:00:00.000Z", "cwd": cwd})


def said(role: str, text: str) -> str:
    kind = "input_text" if role == "user" else "output_text"
    return envelope("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})


def call(name: str, arguments: dict[str, Any], call_id: str) -> str:
    payload = {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}
    return envelope("response_item", payload)


def output(call_id: str, value: Any) -> str:
    return envelope("response_item", {"type": "function_call_output", "call_id": call_id, "output": value})


@pytest.fixture
def rollout(tmp_path: Path) -> Path:
    return tmp_path / "sessions" / "2026" / "02" / "01" / f"rollout-2026-02-01T11-00-00-{SESSION_ID}.jsonl"


def write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def append(path: Path, *chunks: str | bytes) -> None:
    with path.open("ab") as fh:
        for chunk in chunks:
            fh.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)


# -- real and published samples -----------------------------------------------------------------


@pytest.fixture(scope="module")
def real() -> Session:
    batch = codex.read(REAL, None)
    assert not batch.skipped
    return only_session(batch)


def test_a_real_rollout_gives_the_request_once_without_injected_context(real: Session) -> None:
    users = texts(real, USER)
    assert len(users) == 1  # written as a response item and as a user_message event
    assert users[0].startswith("幫我檢查一下 go.mod 裡面 為何 go版本是 1.24?")
    assert users[0].endswith("最後幫我把 TODO.md 刪除")
    everything = "\n".join(m.text for m in real.messages)
    assert "<environment_context>" not in everything
    assert "# Context from my IDE setup" not in everything


def test_assistant_replies_appear_once_and_reasoning_not_at_all(real: Session) -> None:
    replies = texts(real, ASSISTANT)
    assert (
        replies.count("Scanning the repo for go.mod, Python version references, and TODO.md before making changes.")
        == 1
    )
    assert len(replies) == 9
    assert replies[-1].startswith("Here’s what I changed and what I found.")


def test_shell_calls_give_the_command_and_outputs_their_exit_status(real: Session) -> None:
    calls = [m for m in real.messages if m.tool == "shell" and m.command]
    assert calls[0].command == "ls -la"  # unwrapped from ["bash", "-lc", "ls -la"]
    assert calls[1].command == "sed -n '1,200p' go.mod"
    first_output = real.messages[real.messages.index(calls[0]) + 1]
    assert first_output.text.startswith("total 124") and not first_output.is_error
    rejected = next(m for m in real.messages if m.text == "patch rejected: empty patch")
    assert rejected.is_error and rejected.tool == "shell"
    failed_patch = real.messages[-1]
    assert (failed_patch.tool, failed_patch.is_error) == ("apply_patch", True)
    assert failed_patch.text == "Failed to apply patch: context mismatch"
    assert [m.is_error for m in real.messages].count(True) == 2


def test_session_metadata_comes_from_session_meta_and_turn_context(real: Session) -> None:
    assert real.key == "01996135-afde-7911-97f0-d863511eca56"
    assert real.project == "/proj/ds906659/gai/claude-code"
    assert real.model == "aide-gpt-5"
    assert real.started_at == "2025-09-19T09:02:12.446000Z"
    assert len(real.messages) == 49


def test_modern_envelope_with_custom_and_mcp_tools() -> None:
    batch = codex.read(MODERN, None)
    assert batch.skipped == {"unknown record type": 1}  # future_synthetic_record
    session = only_session(batch)
    assert texts(session, USER) == ["List the synthetic files."]
    assert texts(session, ASSISTANT) == ["The synthetic files are alpha.txt and beta.txt."]
    tools = [(m.tool, m.command, m.text) for m in session.messages if m.role == TOOL]
    assert tools == [
        ("exec_command", "find . -maxdepth 1 -type f", "find . -maxdepth 1 -type f"),
        ("exec_command", None, "./alpha.txt\n./beta.txt"),
        ("apply_patch", None, "Add File: gamma.txt, new_string=synthetic"),
        ("apply_patch", None, "Done!"),
        ("mcp__synthetic__lookup", None, "query=fixture"),
        ("mcp__synthetic__lookup", None, '{"status":"ok"}'),
    ]
    assert "SYNTHETIC_ENCRYPTED" not in "\n".join(m.text for m in session.messages)
    assert (session.project, session.model) == ("/workspace/synthetic-project", "synthetic-model")


def custom_call(name: str, text: str, call_id: str) -> str:
    return envelope("response_item", {"type": "custom_tool_call", "name": name, "input": text, "call_id": call_id})


PATCH = (
    "*** Begin Patch\n*** Update File: config/db.py\n@@\n-PORT = 5432\n+PORT = 5433\n"
    " HOST = 'db'\n-POOL = 5\n+POOL = 5\n+TIMEOUT_S = 30\n+\n*** Add File: .env.example\n"
    "+OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\n*** End Patch"
)


def test_an_apply_patch_keeps_its_files_and_added_lines_as_an_edits_new_string(rollout: Path) -> None:
    write(rollout, meta(), custom_call("apply_patch", PATCH, "c1"), call("apply_patch", {"input": PATCH}, "c2"))
    custom, function = only_session(codex.read(rollout, None)).messages
    assert custom.text == function.text
    # Removed lines, context, blank lines and a line put back unchanged are not what the patch added.
    head, _, secret = custom.text.rpartition("\n")
    assert head == "Update File: config/db.py; Add File: .env.example, new_string=PORT = 5433\nTIMEOUT_S = 30"
    assert secret.startswith("OPENAI_API_KEY=") and "sk-proj-abcdef" not in secret  # redacted as it is cut
    assert changed_lines(custom.text, edit_input=True)[:2] == ["PORT = 5433", "TIMEOUT_S = 30"]


def test_a_long_patch_keeps_a_bounded_number_of_short_lines(rollout: Path) -> None:
    body = "".join(f"+value_{i} = '{'x' * 300}'\n" for i in range(40))
    write(
        rollout, meta(), custom_call("apply_patch", f"*** Begin Patch\n*** Add File: big.py\n{body}*** End Patch", "c1")
    )
    [message] = only_session(codex.read(rollout, None)).messages
    lines = message.text.removeprefix("Add File: big.py, new_string=").split("\n")
    assert 1 < len(lines) <= 8 and all(len(line) <= 162 for line in lines)
    assert lines[0].startswith("value_0 = 'xxx")


PATCH_CALLS = {
    "custom": custom_call("apply_patch", PATCH, "c1"),
    "shell": call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{PATCH}\nEOF"}, "c1"),
}


@pytest.mark.parametrize("via", sorted(PATCH_CALLS))
@pytest.mark.parametrize(
    ("report", "thanks"),
    [
        ("The API won't start: ERROR db: connect ECONNREFUSED 127.0.0.1:5432", "great, it works now"),
        ("接口起不来，报错：ERROR db: connect ECONNREFUSED 127.0.0.1:5432", "好了，能连上了"),
    ],
)
def test_a_codex_fix_holds_the_lines_its_patch_added(report: str, thanks: str, via: str, rollout: Path) -> None:
    write(
        rollout,
        meta(),
        said("user", report),
        said("assistant", "The database moved to port 5433; the config still says 5432."),
        PATCH_CALLS[via],
        envelope("response_item", {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done!"}),
        said("user", thanks),
    )
    items, _ = extract(only_session(codex.read(rollout, None)), {})
    [fix] = [item for item in items if item.type == "procedural"]
    assert "`PORT = 5433`" in fix.content and "ECONNREFUSED" in fix.content


def test_the_early_flat_format() -> None:
    session = only_session(codex.read(EARLY, None))
    assert session.key == "44444444-4444-4444-8444-444444444444"
    assert session.started_at == "2026-01-04T05:06:07.000000Z"
    assert [(m.role, m.text, m.id) for m in session.messages] == [
        (USER, "Open the synthetic legacy session.", "L2"),
        (ASSISTANT, "The synthetic legacy session is open.", "L3"),
    ]


def test_early_state_records_are_not_messages(rollout: Path) -> None:
    write(
        rollout,
        json.dumps({"id": SESSION_ID, "timestamp": "2025-05-01T09:00:00Z", "cwd": "/srv/app"}) + "\n",
        json.dumps({"record_type": "state"}) + "\n",
        json.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}) + "\n",
    )
    batch = codex.read(rollout, None)
    assert not batch.skipped
    assert [(m.text, m.id) for m in only_session(batch).messages] == [("hi", "L3")]
    assert only_session(batch).project == "/srv/app"


def test_the_typescript_era_single_json_file() -> None:
    session = only_session(codex.read(TS_ERA, None))
    assert session.key == "5f2b7a1c-3d4e-4f60-8a9b-0c1d2e3f4a5b"
    assert session.started_at == "2025-04-16T10:12:03.512000Z"
    assert [(m.role, m.id, m.command, m.is_error) for m in session.messages] == [
        (USER, "0", None, False),
        (TOOL, "call_t1", "npm test", False),
        (TOOL, "3", None, True),  # the JSON output's metadata.exit_code is 1
        (TOOL, "call_t2", "cat package.json", False),
        (TOOL, "5", None, False),
        (ASSISTANT, "msg_67ff7b24", None, False),
    ]
    assert session.messages[2].text == 'npm ERR! Missing script: "test"'


# -- outputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text", "failed"),
    [
        ('{"output":"ok\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}', "ok", False),
        ('{"output":"boom\\n","metadata":{"exit_code":2}}', "boom", True),
        ("Exit code: 1\nWall time: 0.3 seconds\nOutput:\nModuleNotFoundError: x\n", "ModuleNotFoundError: x", True),
        ("Chunk ID: a1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nready\n", "ready", False),
        ("execution error: sandbox denied", "execution error: sandbox denied", True),
        ("...\n1 failed, 3 passed in 0.2s\n", "...\n1 failed, 3 passed in 0.2s", True),
        ([{"type": "input_text", "text": "listed"}], "listed", False),
        ("", "(no output)", False),
    ],
)
def test_shell_outputs_in_every_shape(value: Any, text: str, failed: bool, rollout: Path) -> None:
    write(rollout, meta(), call("shell_command", {"command": "pytest -q"}, "c1"), output("c1", value))
    result = only_session(codex.read(rollout, None)).messages[-1]
    assert (result.tool, result.text, result.is_error) == ("shell_command", text, failed)


def test_non_shell_tools_are_not_judged_by_their_text(rollout: Path) -> None:
    write(rollout, meta(), call("view_image", {"path": "a.png"}, "c1"), output("c1", "error: nothing to see"))
    assert not only_session(codex.read(rollout, None)).messages[-1].is_error


def test_local_shell_calls_and_powershell_wrappers(rollout: Path) -> None:
    local = {"type": "local_shell_call", "call_id": "c1", "status": "completed"}
    local["action"] = {"type": "exec", "command": ["bash", "-lc", "cargo test"], "working_directory": "/w"}
    write(
        rollout,
        meta(),
        envelope("response_item", local),
        call("shell", {"command": ["powershell.exe", "-NoProfile", "-Command", "dotnet build"]}, "c2"),
        call("shell", {"command": ["git", "commit", "-m", "fix: pin clock"]}, "c3"),
    )
    commands = [m.command for m in only_session(codex.read(rollout, None)).messages]
    assert commands == ["cargo test", "dotnet build", "git commit -m 'fix: pin clock'"]


def test_injected_user_blocks_are_dropped(rollout: Path) -> None:
    agents = "# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>\nUse pnpm.\n</INSTRUCTIONS>"
    write(
        rollout,
        meta(),
        said("user", agents),
        said("user", "<user_instructions>\nBe terse.\n</user_instructions>"),
        said("user", "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n</environment_context>"),
        envelope(
            "response_item", {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}]}
        ),
        said("user", "<turn_aborted>\nThe user interrupted.\n</turn_aborted>"),
        said("user", "Rename the column to created_at"),
        envelope("event_msg", {"type": "user_message", "message": "Rename the column to created_at", "images": []}),
        envelope("event_msg", {"type": "agent_message", "message": "Renamed."}),
        said("assistant", "Renamed."),
    )
    session = only_session(codex.read(rollout, None))
    assert [(m.role, m.text) for m in session.messages] == [
        (USER, "Rename the column to created_at"),
        (ASSISTANT, "Renamed."),
    ]


# -- incremental reading ------------------------------------------------------------------------


def test_appended_lines_come_back_alone_with_the_context_of_earlier_lines(rollout: Path) -> None:
    write(rollout, meta("/home/dev/shop"), said("user", "Add a health endpoint"), said("assistant", "Added /healthz."))
    first = codex.read(rollout, None)
    assert codex.read(rollout, first.cursor).sessions == []  # unchanged
    append(rollout, said("user", "Now test it"), call("shell", {"command": ["bash", "-lc", "pytest"]}, "c9"))
    second = codex.read(rollout, first.cursor)
    later = only_session(second)
    assert [m.text for m in later.messages] == ["Now test it", "pytest"]
    assert later.project == "/home/dev/shop"  # session_meta was in the first read
    assert later.key == SESSION_ID and not later.restart
    append(rollout, output("c9", '{"output":"1 passed","metadata":{"exit_code":0}}'))
    last = only_session(codex.read(rollout, second.cursor))
    assert [(m.tool, m.text) for m in last.messages] == [("shell", "1 passed")]  # the call's name is remembered


def test_a_partial_last_line_waits_until_it_is_complete(rollout: Path) -> None:
    write(rollout, meta())
    first = codex.read(rollout, None)
    whole = said("user", "Deploy to staging")
    append(rollout, whole[:30])
    waiting = codex.read(rollout, first.cursor)
    assert waiting.sessions == [] and waiting.cursor.offset == first.cursor.offset
    append(rollout, whole[30:])
    assert texts(only_session(codex.read(rollout, waiting.cursor)), USER) == ["Deploy to staging"]


def test_a_replaced_file_is_read_again_from_the_start(rollout: Path) -> None:
    write(rollout, meta(), said("user", "One"), said("user", "Two"), said("user", "Three"))
    first = codex.read(rollout, None)
    write(rollout, meta(), said("user", "Only"))
    again = only_session(codex.read(rollout, first.cursor))
    assert again.restart and texts(again, USER) == ["Only"]


def test_a_rewritten_json_session_returns_only_new_items_or_everything_when_history_changed(tmp_path: Path) -> None:
    path = Path(shutil.copy(TS_ERA, tmp_path / TS_ERA.name))
    first = codex.read(path, None)
    assert codex.read(path, first.cursor).sessions == []
    document = json.loads(path.read_text())
    document["items"].append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add it"}]})
    path.write_text(json.dumps(document, indent=2))
    grown = codex.read(path, first.cursor)
    assert [m.text for m in only_session(grown).messages] == ["Add it"]
    assert not only_session(grown).restart
    document["items"][0]["content"][0]["text"] = "Why does `npm test` fail on CI?"
    path.write_text(json.dumps(document))
    rewritten = only_session(codex.read(path, grown.cursor))
    assert rewritten.restart and len(rewritten.messages) == 7
    assert rewritten.messages[0].text == "Why does `npm test` fail on CI?"


def test_compressed_rollouts_are_counted_not_read(tmp_path: Path) -> None:
    zst = tmp_path / f"rollout-2026-02-01T11-00-00-{SESSION_ID}.jsonl.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd\x00\x00")
    batch = codex.read(zst, None)
    assert batch.sessions == [] and batch.skipped == {"compressed (zstd) not supported": 1}
    assert codex.read(zst, batch.cursor).skipped == {}  # counted once, not on every run


# -- malformed input ----------------------------------------------------------------------------

MALFORMED = {
    "invalid UTF-8": (b'{"type":"response_item","payload":{"text":"\xff"}}\n', "invalid UTF-8"),
    "binary junk": (b"\x00\x01PNG\r\x00\x00\x1a\n", "binary data"),
    "truncated JSON": (b'{"timestamp":"2026-02-01T10:00:00Z","type":"response_item","payl\n', "invalid JSON"),
    "JSON that is not an object": (b"42\n", "not a JSON object"),
    "unknown record type": (b'{"timestamp":"x","type":"hologram","payload":{}}\n', "unknown record type"),
    "unknown item type": (b'{"type":"response_item","payload":{"type":"telepathy"}}\n', "unknown item type"),
    "payload of the wrong type": (b'{"type":"response_item","payload":"message"}\n', "wrong type in payload"),
    "content of the wrong type": (
        b'{"type":"response_item","payload":{"type":"message","role":"user","content":7}}\n',
        "wrong type in message content",
    ),
    "a line with no type at all": (b'{"hello":"world"}\n', "unknown record type"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_lines_are_skipped_and_counted(case: str, rollout: Path) -> None:
    bad, reason = MALFORMED[case]
    write(rollout, meta(), said("user", "Before"))
    append(rollout, bad, said("user", "After"))
    batch = codex.read(rollout, None)
    assert batch.skipped == {reason: 1}
    assert batch.notes == [f"{rollout}:3: {reason}"]
    assert texts(only_session(batch), USER) == ["Before", "After"]


def test_wrong_types_in_known_fields_fall_back_to_defaults(rollout: Path) -> None:
    write(
        rollout,
        envelope("session_meta", {"id": 5, "cwd": ["/x"], "timestamp": {}}),
        envelope("turn_context", {"model": 3, "cwd": None}),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{not json", "call_id": 4}),
        envelope("response_item", {"type": "function_call_output", "call_id": None, "output": {"odd": True}}),
        envelope("response_item", {"type": "message", "role": "user", "content": [1, {"text": None}, {"text": "ok"}]}),
    )
    session = only_session(codex.read(rollout, None))
    assert session.key == SESSION_ID  # from the file name
    assert session.project is None and session.model is None
    assert [(m.role, m.command) for m in session.messages] == [(TOOL, None), (TOOL, None), (USER, None)]
    assert session.messages[-1].text == "ok"


def test_a_huge_line_is_skipped(rollout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1000)
    write(rollout, meta(), said("user", "y" * 4000), said("user", "Small"))
    batch = codex.read(rollout, None)
    assert batch.skipped == {"huge line": 1}
    assert texts(only_session(batch), USER) == ["Small"]


def test_a_broken_json_session_is_counted(tmp_path: Path) -> None:
    for name, content, reason in [
        ("rollout-2025-04-16-a.json", b'{"session": {', "invalid JSON"),
        ("rollout-2025-04-16-b.json", b'{"session": {}, "items": 3}', "not a Codex session"),
        ("rollout-2025-04-16-c.json", b"\xff\xfe", "invalid UTF-8"),
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        batch = codex.read(path, None)
        assert batch.sessions == [] and batch.skipped == {reason: 1}


PAYLOAD = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
RECORD = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["session_meta", "turn_context", "response_item", "event_msg", "compacted", "x"])
        | PAYLOAD,
        "payload": st.fixed_dictionaries(
            {
                "type": st.sampled_from(["message", "function_call", "function_call_output", "patch_apply_end", "y"])
                | PAYLOAD
            },
            optional={
                "role": st.sampled_from(["user", "assistant"]) | PAYLOAD,
                "content": st.lists(st.fixed_dictionaries({}, optional={"type": PAYLOAD, "text": PAYLOAD}), max_size=3)
                | PAYLOAD,
                "name": st.sampled_from(["shell", "exec_command", "apply_patch"]) | PAYLOAD,
                "arguments": st.sampled_from(['{"command":["bash","-lc","ls"]}', '{"cmd":5}']) | PAYLOAD,
                "output": st.sampled_from(['{"output":"x","metadata":{"exit_code":"1"}}', "Exit code: 9"]) | PAYLOAD,
                "call_id": PAYLOAD,
                "action": PAYLOAD,
                "success": PAYLOAD,
                "stdout": PAYLOAD,
                "id": PAYLOAD,
                "cwd": PAYLOAD,
                "model": PAYLOAD,
            },
        )
        | PAYLOAD,
    },
    optional={"timestamp": PAYLOAD},
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    chunks=st.lists(
        st.binary(max_size=200)
        | RECORD.map(lambda d: json.dumps(d).encode() + b"\n")
        | RECORD.map(lambda d: json.dumps(d["payload"]).encode() + b"\n"),  # early flat format: bare items
        max_size=8,
    )
)
def test_arbitrary_input_never_raises(chunks: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / f"rollout-{SESSION_ID}.jsonl"
    path.write_bytes(b"".join(chunks))
    first = codex.read(path, None)
    with path.open("ab") as fh:
        fh.write(b"".join(chunks[:3]) + b"\n")
    codex.read(path, first.cursor)
    whole = path.with_suffix(".json")
    whole.write_bytes(b"".join(chunks))
    codex.read(whole, None)


# -- where the logs are -------------------------------------------------------------------------


def test_locate_finds_rollouts_in_every_layout(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = home / ".codex" / "sessions"
    modern = write(sessions / "2026" / "02" / "01" / f"rollout-2026-02-01T11-00-00-{SESSION_ID}.jsonl", "")
    ts_era = write(sessions / "rollout-2025-04-16-5f2b7a1c-3d4e-4f60-8a9b-0c1d2e3f4a5b.json", "")
    archived = write(home / ".codex" / "archived_sessions" / "rollout-2025-12-01T08-00-00-x.jsonl", "")
    compressed = write(sessions / "2026" / "01" / "05" / "rollout-2026-01-05T08-00-00-y.jsonl.zst", "")
    write(modern.with_name(modern.name + ".zst"), "")  # the plain copy wins
    write(home / ".codex" / "history.jsonl", "")
    write(home / ".codex" / "session_index.jsonl", "")
    assert codex.locate({}, home) == sorted([modern, ts_era, archived, compressed])


def test_locate_honours_codex_home(tmp_path: Path) -> None:
    write(tmp_path / "home" / ".codex" / "sessions" / "rollout-ignored.jsonl", "")
    custom = write(tmp_path / "ch" / "sessions" / "2026" / "01" / "01" / "rollout-2026-01-01T00-00-00-z.jsonl", "")
    assert codex.locate({"CODEX_HOME": str(tmp_path / "ch")}, tmp_path / "home") == [custom]


def test_locate_returns_nothing_when_there_is_nothing(tmp_path: Path) -> None:
    assert codex.locate({}, tmp_path) == []
    assert codex.files(tmp_path / "missing") == []
    assert codex.files(REAL) == [REAL]
    assert codex.files(SAMPLES) == sorted([MODERN, EARLY])
