"""Aider importer: the real chat history, incremental reads, input history, bad input, locations."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.aider import CHAT_FILE, IMPORTER, INPUT_FILE
from engram_cli.ingest.base import MAX_LINE_BYTES, Batch, Message, Session

SAMPLE = Path(__file__).parent / "fixtures" / "agent-logs" / "aider" / "aider_repo_chat-history_excerpt.md"
LINES = SAMPLE.read_bytes().splitlines(keepends=True)


@pytest.fixture(autouse=True)
def paris_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Aider writes local time without a zone: pin the machine's zone (CEST in August, UTC+2)."""
    monkeypatch.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def by_start(batch: Batch) -> dict[str, Session]:
    return {s.key.rsplit("@", 1)[1]: s for s in batch.sessions}


def messages(batch: Batch) -> list[Message]:
    return [m for s in batch.sessions for m in s.messages]


def test_is_registered() -> None:
    assert importer("aider") is IMPORTER
    assert IMPORTER.agent == "aider"


# --- the real sample --------------------------------------------------------------------------


def test_sessions_split_at_each_chat_start_and_empty_ones_are_left_out() -> None:
    batch = IMPORTER.read(SAMPLE, None)
    assert not batch.skipped
    sessions = by_start(batch)
    # 12 starts; those with only the banner (or nothing) carry no message.
    assert list(sessions) == [
        "2024-08-06 09:06:27",
        "2024-08-06 09:11:16",
        "2024-08-06 09:13:00",
        "2024-08-06 09:42:38",
        "2024-08-06 09:44:24",
        "2024-08-06 09:47:11",
    ]
    first = sessions["2024-08-06 09:06:27"]
    assert first.key == f"{SAMPLE}@2024-08-06 09:06:27"
    assert first.started_at == "2024-08-06T07:06:27.000000Z"  # local CEST time, stored in UTC
    assert first.model == "gpt-4"
    assert sessions["2024-08-06 09:44:24"].model == "claude-3-5-sonnet-20240620"
    assert first.project is None  # not under aider's own file name: no repository to speak of
    assert batch.cursor.offset == SAMPLE.stat().st_size


def test_banner_and_bookkeeping_lines_are_dropped() -> None:
    text = "\n".join(m.text for m in messages(IMPORTER.read(SAMPLE, None)))
    for noise in ("Aider v0.47", "Repo-map:", "Tokens:", "Use /help", "You can use /undo", ".venv/bin/aider", "^C"):
        assert noise not in text
    assert "Added aider/coders/base_coder.py to the chat" not in text


def test_test_runs_are_tool_messages_with_their_command_and_failures() -> None:
    first = by_start(IMPORTER.read(SAMPLE, None))["2024-08-06 09:06:27"]
    runs = [m for m in first.messages if m.tool == "test"]
    assert [(m.id, m.command, m.is_error) for m in runs] == [
        ("L21", "pytest tests/basic/test_main.py", True),
        ("L417", "pytest tests/basic/test_main.py", True),
    ]
    assert "FAILED tests/basic/test_main.py::TestMain::test_map_tokens_option" in runs[0].text
    assert "2 failed, 25 passed" in runs[0].text
    assert len(runs[0].text) <= 602
    # Aider writes the output a second time, line by line, when it adds it to the chat: kept once.
    assert sum("test session starts" in m.text for m in first.messages) == 2
    assert [m.text for m in first.messages if m.role == "user"] == ["/test pytest tests/basic/test_main.py"] * 2


def test_commits_and_applied_edits_are_kept_as_tool_messages() -> None:
    tools = [m for m in messages(IMPORTER.read(SAMPLE, None)) if m.role == "tool"]
    joined = "\n".join(m.text for m in tools)
    assert "Commit e206570 fix: Properly mock RepoMap in test_map_tokens_option" in joined
    assert "Applied edit to tests/basic/test_main.py" in joined
    # A commit message spanning lines is one output.
    commit = next(m for m in tools if m.text.startswith("Commit 7d56889"))
    assert "The changes in this commit add a function" in commit.text
    assert not commit.is_error
    edit_failure = next(m for m in tools if "did not conform to the edit format" in m.text)
    assert edit_failure.is_error
    lint = next(m for m in tools if m.text.startswith("Commit 541ab83"))
    assert lint.is_error
    assert "E722 do not use bare 'except'" in lint.text


def test_user_prompts_replies_and_the_echo_of_ask() -> None:
    session = by_start(IMPORTER.read(SAMPLE, None))["2024-08-06 09:44:24"]
    users = [m.text for m in session.messages if m.role == "user"]
    assert users[0] == "/ask is there a portable way to know the user's preferred language?"
    assert len(users) == 3  # aider's echo of the /ask question is not a second prompt
    assert users[1].startswith("if we can get a language, add it to `platform_text`.")
    reply = session.messages[1]
    assert reply.role == "assistant"
    assert reply.id == "L680"
    assert reply.text.startswith("Based on the code provided, there isn't a built-in method")
    assert "```python" in reply.text  # the reply keeps its Markdown


def test_chat_window_commands_are_not_prompts() -> None:
    sessions = by_start(IMPORTER.read(SAMPLE, None))
    assert [m.role for m in sessions["2024-08-06 09:13:00"].messages] == ["tool"]  # /add-clipboard-image, /ex
    assert [m.text for m in sessions["2024-08-06 09:42:38"].messages if m.role == "user"] == ["hi"]


def test_project_is_the_directory_holding_the_history(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(SAMPLE, repo / CHAT_FILE)
    batch = IMPORTER.read(repo / CHAT_FILE, None)
    assert {s.project for s in batch.sessions} == {str(repo)}
    assert batch.sessions[0].key == f"{repo / CHAT_FILE}@2024-08-06 09:06:27"


# --- incremental reading ----------------------------------------------------------------------


def split_read(tmp_path: Path, cut: int) -> tuple[Batch, Batch]:
    path = tmp_path / CHAT_FILE
    path.write_bytes(b"".join(LINES[:cut]))
    first = IMPORTER.read(path, None)
    with path.open("ab") as fh:
        fh.write(b"".join(LINES[cut:]))
    return first, IMPORTER.read(path, first.cursor)


@pytest.mark.parametrize("cut", [11, 20, 347, 416, 612, 676, 760, 946, 1070])
def test_reading_in_two_steps_gives_the_same_messages(tmp_path: Path, cut: int) -> None:
    whole = [(m.id, m.text) for m in messages(IMPORTER.read(SAMPLE, None))]
    first, second = split_read(tmp_path, cut)
    assert [(m.id, m.text) for m in messages(first) + messages(second)] == whole
    assert not any(s.restart for s in second.sessions)


def test_a_multi_line_output_cut_short_is_read_whole_next_time(tmp_path: Path) -> None:
    first, second = split_read(tmp_path, 60)  # inside the first /test output
    assert "L21" not in [m.id for m in messages(first)]
    assert first.cursor.offset == sum(len(x) for x in LINES[:20])  # stopped before the output
    run = next(m for m in messages(second) if m.id == "L21")
    assert "2 failed, 25 passed" in run.text
    assert run.command == "pytest tests/basic/test_main.py"  # the /test before the cut still counts


def test_unchanged_file_returns_nothing(tmp_path: Path) -> None:
    first = IMPORTER.read(SAMPLE, None)
    again = IMPORTER.read(SAMPLE, first.cursor)
    assert again.sessions == []
    assert again.cursor is first.cursor


def test_a_partial_last_line_waits(tmp_path: Path) -> None:
    path = tmp_path / CHAT_FILE
    path.write_bytes(b"\n# aider chat started at 2024-08-06 10:00:00\n\n#### first question  \n")
    first = IMPORTER.read(path, None)
    with path.open("ab") as fh:
        fh.write(b"\n#### second que")
    second = IMPORTER.read(path, first.cursor)
    assert messages(second) == []
    with path.open("ab") as fh:
        fh.write(b"stion  \n")
    third = IMPORTER.read(path, second.cursor)
    assert [m.text for m in messages(third)] == ["second question"]
    assert third.sessions[0].key.endswith("@2024-08-06 10:00:00")  # the session continues


def test_a_truncated_history_starts_over(tmp_path: Path) -> None:
    path = tmp_path / CHAT_FILE
    path.write_bytes(b"".join(LINES))
    first = IMPORTER.read(path, None)
    path.write_bytes(b"\n# aider chat started at 2024-09-01 08:00:00\n\n#### fresh start  \n")
    second = IMPORTER.read(path, first.cursor)
    assert [m.text for m in messages(second)] == ["fresh start"]
    assert all(s.restart for s in second.sessions)


def test_sessions_started_in_the_same_second_get_distinct_keys(tmp_path: Path) -> None:
    path = tmp_path / CHAT_FILE
    start = b"\n# aider chat started at 2024-08-06 10:00:00\n\n"
    path.write_bytes(start + b"#### one  \n" + start + b"#### two  \n")
    keys = [s.key for s in IMPORTER.read(path, None).sessions]
    assert len(set(keys)) == 2


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"#### caf\xe9  \n", "invalid UTF-8"),
        (b"\x00\x00\x01\x02\n", "binary data"),
        (b"x" * (MAX_LINE_BYTES + 5) + b"\n", "huge line"),
    ],
)
def test_bad_lines_are_skipped_and_counted(tmp_path: Path, raw: bytes, reason: str) -> None:
    path = tmp_path / CHAT_FILE
    path.write_bytes(b"\n# aider chat started at 2024-08-06 10:00:00\n\n#### before  \n\n" + raw + b"\n#### after  \n")
    batch = IMPORTER.read(path, None)
    assert batch.skipped[reason] == 1
    assert [m.text for m in messages(batch)] == ["before", "after"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=80),
            st.sampled_from(
                [
                    b"> ",
                    b"#### ",
                    b"# aider chat started at 2024-01-01 00:00:00",
                    b"  ",
                    b"+x",
                    b"# 2024-01-01 00:00:00",
                ]
            ),
        ),
        max_size=12,
    ),
    st.integers(0, 12),
)
def test_arbitrary_bytes_never_raise(tmp_path: Path, chunks: list[bytes], cut: int) -> None:
    for name in (CHAT_FILE, INPUT_FILE):
        path = tmp_path / name
        path.write_bytes(b"\n".join(chunks[:cut]))
        first = IMPORTER.read(path, None)
        path.write_bytes(b"\n".join(chunks))
        IMPORTER.read(path, first.cursor)


# --- input history ----------------------------------------------------------------------------

INPUT = (
    b"\n# 2025-05-04 17:06:57.158813\n+add a --dry-run flag\n"
    b"\n# 2025-05-04 17:10:01.000001\n+/ex\n"
    b"\n# 2025-05-05 09:00:00.5\n+why does\n+this fail?\n"
)


def test_input_history_gives_prompts_per_day(tmp_path: Path) -> None:
    path = tmp_path / INPUT_FILE
    path.write_bytes(INPUT)
    batch = IMPORTER.read(path, None)
    days = {s.key.rsplit("@", 1)[1]: s for s in batch.sessions}
    assert list(days) == ["2025-05-04", "2025-05-05"]
    assert [(m.id, m.text, m.at) for m in days["2025-05-04"].messages] == [
        ("L2", "add a --dry-run flag", "2025-05-04T15:06:57.158813Z"),
    ]
    assert days["2025-05-05"].messages[0].text == "why does\nthis fail?"
    assert days["2025-05-04"].project == str(tmp_path)
    with path.open("ab") as fh:
        fh.write(b"\n# 2025-05-05 09:05:00\n+thanks\n")
    more = IMPORTER.read(path, batch.cursor)
    assert [m.text for m in messages(more)] == ["thanks"]


def test_input_history_is_read_only_without_a_chat_history(tmp_path: Path) -> None:
    alone, both = tmp_path / "alone", tmp_path / "both"
    for directory in (alone, both):
        directory.mkdir()
        (directory / INPUT_FILE).write_bytes(INPUT)
    (both / CHAT_FILE).write_bytes(b"".join(LINES[:20]))
    assert IMPORTER.files(tmp_path) == [alone / INPUT_FILE, both / CHAT_FILE]


# --- where the files are ----------------------------------------------------------------------


def test_locate_looks_at_the_current_repository_and_home(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "src" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "sub").mkdir(parents=True)
    home.mkdir()
    assert IMPORTER.locate({"PWD": str(repo / "pkg" / "sub")}, home) == []
    (repo / CHAT_FILE).write_bytes(b"".join(LINES[:20]))
    (home / INPUT_FILE).write_bytes(INPUT)
    assert IMPORTER.locate({"PWD": str(repo / "pkg" / "sub")}, home) == [repo / CHAT_FILE, home / INPUT_FILE]
    assert IMPORTER.locate({}, home) == [home / INPUT_FILE]


def test_locate_honours_the_history_file_variables(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    custom = tmp_path / "notes" / "aider-chat.md"
    custom.parent.mkdir()
    custom.write_bytes(b"".join(LINES[:20]))
    env = {"AIDER_CHAT_HISTORY_FILE": str(custom), "PWD": str(tmp_path)}
    assert IMPORTER.locate(env, home) == [custom]
    assert IMPORTER.files(custom) == [custom]  # recognised by its content
    assert IMPORTER.read(custom, None).sessions[0].project is None


def test_files_walks_a_tree_and_skips_other_files(tmp_path: Path) -> None:
    for name in ("a", "b/c", "node_modules/d"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / CHAT_FILE).write_bytes(b"".join(LINES[:20]))
    (tmp_path / "README.md").write_text("# not aider\n")
    assert IMPORTER.files(tmp_path) == [tmp_path / "a" / CHAT_FILE, tmp_path / "b" / "c" / CHAT_FILE]
    assert IMPORTER.files(tmp_path / "README.md") == []
