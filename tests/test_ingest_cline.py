"""Cline and Roo Code task directories: what the importers keep, drop, and resume from."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.base import ASSISTANT, TOOL, TOOL_EXCERPT, USER, Batch, Message, Session
from engram_cli.ingest.cline import API_FILE

SAMPLES = Path(__file__).parent / "fixtures" / "agent-logs" / "roo-code"
SYNTHETIC = Path(__file__).parent / "fixtures" / "ingest" / "cline"
NATURAL = SAMPLES / "natural-mini-uncondensed" / API_FILE
THINKING = SAMPLES / "tasks" / "6a716972-c33f-444f-a8f2-613f03410ace" / API_FILE
RESUMED = SAMPLES / "tasks" / "eaece8cc-d874-4e46-9330-52d772f31492" / API_FILE
CLINE_TASKS = SYNTHETIC / "saoudrizwan.claude-dev" / "tasks"

roo = importer("roo-code")
cline = importer("cline")


def only(batch: Batch) -> Session:
    assert len(batch.sessions) == 1, batch.sessions
    return batch.sessions[0]


def texts(messages: list[Message]) -> str:
    return "\n".join(m.text for m in messages)


def copy_task(source: Path, tasks: Path, name: str = "task-1") -> Path:
    """A writable copy of a task directory (the samples are read-only)."""
    target = tasks / name
    shutil.copytree(source.parent, target)
    for file in target.iterdir():
        file.chmod(0o644)
    return target / API_FILE


def write(path: Path, entries: Any) -> None:
    path.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")


# -- the real Roo Code samples ------------------------------------------------------------------------


def test_roo_task_keeps_the_conversation_and_drops_injected_context() -> None:
    session = only(roo.read(NATURAL, None))
    messages = session.messages
    assert session.source == "roo-code"
    assert session.key == "natural-mini-uncondensed"
    assert session.project == "c:/dev/roo-code"  # from "# Current Workspace Directory (…) Files"
    assert session.title == "Rédaction des réponses aux commentaires de review - PR #8438"
    assert session.started_at == "2025-10-01T15:12:41.984000Z"
    assert session.updated_at == "2025-10-01T15:14:33.268000Z"
    assert len(messages) == 22
    first = messages[0]
    assert first.role == USER and first.text.startswith("# Rédaction des réponses aux commentaires")
    assert first.at == "2025-10-01T15:12:41.984000Z"
    everything = texts(messages)
    for noise in ("<task>", "<environment_details>", "# VSCode Visible Files", "[ERROR] You did not use a tool",
                  "[Response interrupted", "<read_file>", "<attempt_completion>", "] Result:"):  # fmt: skip
        assert noise not in everything


def test_roo_xml_tool_calls_become_tool_messages_with_their_results() -> None:
    messages = only(roo.read(NATURAL, None)).messages
    call = next(m for m in messages if m.tool == "execute_command" and m.command)
    assert call.command == "git log --oneline -10"  # an unclosed call, cut short by the extension
    refused = messages[messages.index(call) + 1]
    assert refused.role == TOOL and refused.is_error
    assert 'Tool "execute_command" is not allowed in ask mode' in refused.text
    reads = [m for m in messages if m.tool == "read_file"]
    assert len(reads) == 14  # seven calls, each followed by its result
    assert reads[2].text == "path=webview-ui/src/components/chat/ChatView.tsx line_range=1-100"
    assert reads[3].text.startswith("<files>\n<file><path>webview-ui/src/components/chat/ChatView.tsx</path>")
    assert all(len(m.text) <= TOOL_EXCERPT + 2 for m in reads)  # file bodies cut to an excerpt
    assert not any(m.is_error for m in reads)


def test_roo_feedback_inside_a_tool_result_is_the_persons_message() -> None:
    messages = only(roo.read(NATURAL, None)).messages
    feedback = [m for m in messages if m.role == USER and m.text == "Lis les fichiers en entier stp"]
    assert len(feedback) == 1
    assert feedback[0].id == "14.1"  # the second message made from API entry 14


def test_roo_attempt_completion_is_the_assistants_answer() -> None:
    messages = only(roo.read(NATURAL, None)).messages
    last = messages[-1]
    assert last.role == ASSISTANT and last.id == "19"
    assert last.text.startswith("Voici les réponses professionnelles et concises")
    assert "</result>" not in last.text


def test_roo_thinking_tags_are_dropped() -> None:
    session = only(roo.read(THINKING, None))
    assert [(m.role, m.id) for m in session.messages] == [(USER, "0"), (ASSISTANT, "1")]
    assert session.messages[0].text == "test"
    assert "让我分析一下" not in texts(session.messages)  # the <thinking> block
    assert session.messages[1].text.startswith("我已经准备就绪")
    assert session.project == "f:/Develop/project/tools/Roo-Code"


def test_roo_resumed_task_keeps_the_task_but_not_the_resumption_prompts_or_diagnostics() -> None:
    session = only(roo.read(RESUMED, None))
    assert [m.text for m in session.messages] == ["Workspace Problems (see below for diagnostics)"]
    assert session.started_at == "2025-03-06T17:35:22.683000Z"


def test_roo_history_item_names_the_title_and_workspace(tmp_path: Path) -> None:
    api = copy_task(THINKING, tmp_path / "tasks")
    write(api.parent / "history_item.json", {"id": "task-1", "number": 3, "ts": 1739987607720,
          "task": "test the extension", "workspace": "/home/dev/Roo-Code", "mode": "code"})  # fmt: skip
    session = only(roo.read(api, None))
    assert session.title == "test the extension"
    assert session.project == "/home/dev/Roo-Code"


# -- Cline (synthetic, after the documented format) ---------------------------------------------------


def test_cline_native_tool_use_and_task_history_index() -> None:
    session = only(cline.read(CLINE_TASKS / "1718000000000" / API_FILE, None))
    assert (session.source, session.key) == ("cline", "1718000000000")
    assert session.project == "/home/dev/shop"  # state/taskHistory.json cwdOnTaskInitialization
    assert session.model == "claude-sonnet-4-5"
    assert session.title == "Make the tests in api/ pass"
    assert (session.started_at, session.updated_at) == ("2024-06-10T08:13:20.000000Z", "2024-06-10T08:16:40.000000Z")
    roles = [(m.id, m.role, m.tool) for m in session.messages]
    assert roles == [
        ("0", USER, None), ("1", ASSISTANT, None), ("1.1", TOOL, "execute_command"), ("2", TOOL, "execute_command"),
        ("3", TOOL, "read_file"), ("4", TOOL, "read_file"), ("5", ASSISTANT, None), ("5.1", TOOL, "replace_in_file"),
        ("6", TOOL, "replace_in_file"), ("6.1", USER, None), ("7", ASSISTANT, None),
    ]  # fmt: skip
    by_id = {m.id: m for m in session.messages}
    assert by_id["1.1"].command == "pytest -q api"
    assert by_id["2"].is_error and "FAILED api/test_app.py::test_total" in by_id["2"].text
    assert len(by_id["4"].text) <= TOOL_EXCERPT + 2
    assert by_id["6"].is_error and "denied" in by_id["6"].text
    assert by_id["6.1"].text == "Use Decimal for money, not float"
    assert by_id["7"].text.startswith("total() now multiplies by quantity")
    everything = texts(session.messages)
    assert "run them first" not in everything  # thinking block
    assert "iVBORw0KGgo" not in everything  # base64 image
    assert "<environment_details>" not in everything


def test_cline_older_xml_task_takes_its_times_from_ui_messages() -> None:
    session = only(cline.read(CLINE_TASKS / "1717000000000" / API_FILE, None))
    assert session.project is None  # not in the index, and no working directory in its environment
    assert session.model == "claude-3-5-sonnet-20241022"  # task_metadata.json model_usage
    assert (session.started_at, session.updated_at) == ("2024-05-29T16:26:40.000000Z", "2024-05-29T16:27:11.000000Z")
    assert [(m.role, m.tool, m.text[:20]) for m in session.messages] == [
        (USER, None, "why does npm test fa"),
        (ASSISTANT, None, "Let me run the tests"),
        (TOOL, "execute_command", "npm test"),
        (TOOL, "execute_command", "Command executed.\nOu"),
        (ASSISTANT, None, "Should I update the "),
        (USER, None, "Fix the component, t"),
    ]
    assert session.messages[3].is_error  # npm ERR!
    assert all(m.at is None for m in session.messages)


def test_cline_sdk_session_envelope_is_read(tmp_path: Path) -> None:
    path = SYNTHETIC / "sessions" / "sess_01" / "sess_01.messages.json"
    session = only(cline.read(path, None))
    assert (session.key, session.project, session.updated_at) == (
        "sess_01",
        "/home/dev/tool",
        "2026-06-10T09:00:00.000000Z",
    )
    assert [(m.role, m.command) for m in session.messages] == [
        (USER, None), (ASSISTANT, None), (TOOL, "rg -n 'command(\"export' src/"), (TOOL, None), (ASSISTANT, None)
    ]  # fmt: skip
    assert session.messages[3].tool == "bash"  # the result is named after its tool_use id
    assert roo.files(path) == []  # Roo has no SDK sessions


# -- incremental reading ------------------------------------------------------------------------------


def test_a_task_that_grew_returns_only_the_new_messages(tmp_path: Path) -> None:
    api = copy_task(NATURAL, tmp_path / "tasks")
    entries = json.loads(api.read_text(encoding="utf-8"))
    write(api, entries[:4])
    first = roo.read(api, None)
    assert [m.id for m in only(first).messages] == ["0", "1", "1.1", "2", "3", "3.1"]
    write(api, entries)
    second = roo.read(api, first.cursor)
    grown = only(second)
    assert not grown.restart
    assert [m.id for m in grown.messages][:3] == ["4", "5", "6"]
    assert len(grown.messages) == 22 - 6
    unchanged = roo.read(api, second.cursor)
    assert unchanged.sessions == [] and unchanged.cursor == second.cursor


def test_a_task_whose_earlier_messages_changed_is_returned_whole(tmp_path: Path) -> None:
    api = copy_task(NATURAL, tmp_path / "tasks")
    first = roo.read(api, None)
    entries = json.loads(api.read_text(encoding="utf-8"))
    entries[0]["content"][0]["text"] = "<task>\nA different task\n</task>"
    write(api, entries[:10])  # a condensed or resumed task rewrites what came before
    again = only(roo.read(api, first.cursor))
    assert again.restart
    assert again.messages[0].text == "A different task"
    assert len(again.messages) == len([m for m in only(first).messages if int(m.id.split(".")[0]) < 10])


def test_a_file_caught_mid_rewrite_is_not_consumed(tmp_path: Path) -> None:
    api = copy_task(THINKING, tmp_path / "tasks")
    whole = api.read_bytes()
    api.write_bytes(whole[: len(whole) // 2])  # the extension is writing it right now
    partial = roo.read(api, None)
    assert partial.sessions == [] and partial.skipped == {"invalid JSON": 1}
    api.write_bytes(whole)
    complete = roo.read(api, partial.cursor)
    assert len(only(complete).messages) == 2 and not only(complete).restart


# -- malformed input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\xff\xfe\x00garbage", "invalid UTF-8"),
        (bytes(range(256)) * 4, "invalid UTF-8"),
        (b'[{"role": "user", "content": "trunc', "invalid JSON"),
        (b'{"role": "user"}', "unexpected JSON shape"),
        (b'"just a string"', "unexpected JSON shape"),
    ],
    ids=["invalid-utf8", "binary-junk", "truncated-json", "object-not-list", "string"],
)
def test_unusable_files_are_skipped_and_counted(tmp_path: Path, content: bytes, reason: str) -> None:
    api = tmp_path / "tasks" / "t" / API_FILE
    api.parent.mkdir(parents=True)
    api.write_bytes(content)
    batch = cline.read(api, None)
    assert batch.sessions == [] and batch.skipped == {reason: 1}


def test_bad_entries_are_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    api = tmp_path / "tasks" / "t" / API_FILE
    api.parent.mkdir(parents=True)
    write(api, [
        "not an object",
        {"role": "system", "content": "unknown role"},
        {"type": "reasoning", "encrypted_content": "gAAAAB...", "id": "rs_1", "summary": []},
        {"role": "user", "content": 42},
        {"role": "user", "content": [7, {"type": "text", "text": ["not", "text"]}, {"type": "video"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "read_file", "input": "not a dict"}]},
        {"role": "user", "content": "<task>\nstill here\n</task>", "ts": "not a time", "future_field": {"x": 1}},
        {"role": "assistant", "content": "x" * 2_000_000},
        {"role": "assistant", "content": "<read_file>" + "<a>" * 5000 + "deep"},
    ])  # fmt: skip
    batch = cline.read(api, None)
    assert batch.skipped == {"not an object": 1, "unknown role": 1, "wrong type": 4, "unknown block type": 1}
    assert [m.text[:10] for m in only(batch).messages] == ["still here", "x" * 10, "a=<a><a><a"]  # cut at depth 8


# -- where the files are ------------------------------------------------------------------------------


def _plant(user_dir: Path, extension: str, task: str = "1718000000000") -> Path:
    tasks = user_dir / "globalStorage" / extension / "tasks"
    shutil.copytree(CLINE_TASKS / task, tasks / task)
    return (tasks / task / API_FILE).resolve()


def test_locate_finds_tasks_in_every_editor_and_platform_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    linux = _plant(home / ".config" / "Code" / "User", "saoudrizwan.claude-dev")
    mac = _plant(home / "Library" / "Application Support" / "VSCodium" / "User", "saoudrizwan.claude-dev")
    remote = _plant(home / ".vscode-server" / "data" / "User", "saoudrizwan.claude-dev")
    windows = _plant(tmp_path / "AppData" / "Roaming" / "Code" / "User", "SaoudRizwan.claude-dev")
    xdg = _plant(tmp_path / "xdg" / "Cursor" / "User", "saoudrizwan.claude-dev")
    cli_task = home / ".cline" / "data" / "tasks" / "1717000000000"
    shutil.copytree(CLINE_TASKS / "1717000000000", cli_task)
    sdk = tmp_path / "sdk"
    shutil.copytree(SYNTHETIC / "sessions", sdk)
    env = {"APPDATA": str(tmp_path / "AppData" / "Roaming"), "CLINE_SESSION_DATA_DIR": str(sdk)}
    found = set(cline.locate(env, home))
    assert {linux, mac, remote, windows, (cli_task / API_FILE).resolve(),
            (sdk / "sess_01" / "sess_01.messages.json").resolve()} == found  # fmt: skip
    assert xdg in set(cline.locate({"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, home))
    assert roo.locate(env, home) == []


def test_locate_follows_cline_dir_and_finds_roo_under_its_own_id(tmp_path: Path) -> None:
    home = tmp_path / "home"
    roo_task = _plant(home / ".config" / "Code" / "User", "rooveterinaryinc.roo-cline")
    custom = tmp_path / "cline-home" / "data" / "tasks" / "1717000000000"
    shutil.copytree(CLINE_TASKS / "1717000000000", custom)
    assert roo.locate({}, home) == [roo_task]
    assert cline.locate({"CLINE_DIR": str(tmp_path / "cline-home")}, home) == [(custom / API_FILE).resolve()]


def test_locate_returns_nothing_when_nothing_is_there(tmp_path: Path) -> None:
    assert cline.locate({}, tmp_path) == []
    assert roo.locate({"APPDATA": str(tmp_path / "nowhere")}, tmp_path) == []


def test_files_under_a_path(tmp_path: Path) -> None:
    assert [p.parent.name for p in cline.files(SYNTHETIC)] == ["1717000000000", "1718000000000", "sess_01"]
    task = CLINE_TASKS / "1718000000000"
    assert cline.files(task) == [task / API_FILE]
    assert cline.files(task / API_FILE) == [task / API_FILE]
    assert cline.files(task / "task_metadata.json") == []
    assert len(roo.files(SAMPLES)) == 3


# -- fuzzing -------------------------------------------------------------------------------------


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", 3]), "content": _JSON | st.text(max_size=80)},
    optional={"ts": _JSON},
)


@settings(max_examples=150, deadline=None)
@given(data=st.lists(_MESSAGE, max_size=6) | _JSON, raw=st.binary(max_size=64))
def test_arbitrary_task_files_never_raise(data: Any, raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "tasks" / "t-1"
        task.mkdir(parents=True)
        api = task / API_FILE
        api.write_text(json.dumps(data), encoding="utf-8")
        (task / "ui_messages.json").write_bytes(raw)
        for imp in (cline, roo):
            batch = imp.read(api, None)
            assert isinstance(batch, Batch)
            batch = imp.read(api, batch.cursor)
