"""Shell history (bash, zsh, fish): commands by day, appended, trimmed and rewritten files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.base import MAX_LINE_BYTES, SHELL, Batch, Message

SAMPLES = Path(__file__).parent / "fixtures" / "agent-logs" / "shell-history"

bash = importer("bash")
zsh = importer("zsh")
fish = importer("fish")


def messages(batch: Batch) -> list[Message]:
    return [m for s in batch.sessions for m in s.messages]


def commands(batch: Batch) -> list[str]:
    return [m.command or "" for m in messages(batch)]


def copy(sample: str, tmp_path: Path) -> Path:
    target = tmp_path / sample
    shutil.copyfile(SAMPLES / sample, target)
    target.chmod(0o644)
    return target


def at_day(path: Path, day: str) -> None:
    """Give the file a modification time on ``day`` (where commands without a timestamp go)."""
    from datetime import datetime

    stamp = datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    os.utime(path, (stamp, stamp))


# -- the real samples ---------------------------------------------------------------------------------


def test_bash_with_timestamps() -> None:
    batch = bash.read(SAMPLES / "atuin_test_bash_history_timestamps", None)
    assert batch.skipped == {}
    [session] = batch.sessions
    assert (session.source, session.key.split("@")[0], session.project) == ("bash", "2023-01-05", None)
    assert [(m.id, m.role, m.text, m.command, m.at) for m in session.messages] == [
        ("L1", SHELL, "git reset", "git reset", "2023-01-05T11:43:19.000000Z"),
        ("L2", SHELL, "git clean -dxf", "git clean -dxf", "2023-01-05T11:43:26.000000Z"),
        ("L3", SHELL, "cd ../", "cd ../", "2023-01-05T11:43:40.000000Z"),
    ]
    assert (session.started_at, session.updated_at) == ("2023-01-05T11:43:19.000000Z", "2023-01-05T11:43:40.000000Z")


def test_zsh_extended_history_with_a_continued_command() -> None:
    batch = zsh.read(SAMPLES / "atuin_test_zsh_history", None)
    assert batch.skipped == {}
    assert [s.key.split("@")[0] for s in batch.sessions] == ["2021-02-14"]
    assert commands(batch) == [
        "cargo install atuin",
        "cargo install atuin; \\\ncargo update",  # zsh dropped the backslash it adds before the newline
        "cargo :b̷i̶t̴r̵o̴t̴ ̵i̷s̴ ̷r̶e̵a̸l̷",
    ]
    assert {m.at for m in messages(batch)} == {"2021-02-14T17:07:49.000000Z"}


def test_zsh_metafied_bytes_are_restored(tmp_path: Path) -> None:
    path = copy("atuin_test_zsh_history_metafied", tmp_path)
    at_day(path, "2024-03-01")
    batch = zsh.read(path, None)
    assert commands(batch) == ["echo 你好", "ls ~/音乐"]
    assert [s.key.split("@")[0] for s in batch.sessions] == [
        "2024-03-01"
    ]  # no timestamps: the day the file was written
    assert [(m.id, m.at) for m in messages(batch)] == [("L1", None), ("L2", None)]


def test_fish_history_with_escapes_paths_and_corrupt_entries() -> None:
    batch = fish.read(SAMPLES / "atuin_test_fish_history", None)
    assert batch.skipped == {"corrupt entry": 2}  # the ERROR line and the entry without cmd
    assert commands(batch) == [
        "history --help",
        "cat ~/.bash_history",
        "ls ~/.local/share/fish/fish_history",
        "cat ~/.local/share/fish/fish_history",
        "echo \"foo\" \\\n'bar' baz",
        "cat ~/.local/share/fish/fish_history",
        'echo "\\"" \\\\ "\\\\"',
        "cat ~/.local/share/fish/fish_history",
    ]
    assert messages(batch)[0].at == "2021-12-10T19:00:32.000000Z"
    assert [s.key.split("@")[0] for s in batch.sessions] == ["2021-12-10"]


def test_plain_bash_history_has_line_ids_and_no_times(tmp_path: Path) -> None:
    path = tmp_path / ".bash_history"
    path.write_text("ls -la\n\ncd /srv/app\nmake deploy\n")
    at_day(path, "2024-05-02")
    batch = bash.read(path, None)
    assert [(m.id, m.text, m.at) for m in messages(batch)] == [
        ("L1", "ls -la", None), ("L2", "cd /srv/app", None), ("L3", "make deploy", None)
    ]  # fmt: skip
    assert [s.key.split("@")[0] for s in batch.sessions] == ["2024-05-02"]


def test_commands_are_split_by_utc_day(tmp_path: Path) -> None:
    path = tmp_path / ".bash_history"
    path.write_text("#1704153599\nmake build\n#1704153600\nmake test\n")  # 23:59:59 and 00:00:00 UTC
    batch = bash.read(path, None)
    assert [(s.key.split("@")[0], [m.text for m in s.messages]) for s in batch.sessions] == [
        ("2024-01-01", ["make build"]), ("2024-01-02", ["make test"])
    ]  # fmt: skip


# -- appended, trimmed, rewritten -----------------------------------------------------------------------


def test_appended_lines_only_and_nothing_when_unchanged(tmp_path: Path) -> None:
    path = copy("atuin_test_bash_history_timestamps", tmp_path)
    first = bash.read(path, None)
    same = bash.read(path, first.cursor)
    assert same.sessions == [] and same.cursor == first.cursor
    with path.open("a") as fh:
        fh.write("#1672920000\ncargo test\n")
    second = bash.read(path, first.cursor)
    assert [(m.id, m.text) for m in messages(second)] == [("L4", "cargo test")]
    assert not any(s.restart for s in second.sessions)


def test_a_partial_last_line_or_a_lone_timestamp_waits(tmp_path: Path) -> None:
    path = copy("atuin_test_bash_history_timestamps", tmp_path)
    first = bash.read(path, None)
    with path.open("a") as fh:
        fh.write("#1672920000\n")  # bash wrote the timestamp; its command comes next
    waiting = bash.read(path, first.cursor)
    assert messages(waiting) == [] and waiting.cursor.offset == first.cursor.offset
    with path.open("a") as fh:
        fh.write("cargo bui")
    partial = bash.read(path, waiting.cursor)
    assert messages(partial) == []
    with path.open("a") as fh:
        fh.write("ld --release\n")
    done = bash.read(path, partial.cursor)
    assert [(m.text, m.at) for m in messages(done)] == [("cargo build --release", "2023-01-05T12:00:00.000000Z")]


def test_zsh_command_continued_at_the_end_of_the_file_waits(tmp_path: Path) -> None:
    path = tmp_path / ".zsh_history"
    path.write_text(": 1700000000:0;echo one\n: 1700000001:0;for f in *; do \\\n")
    first = zsh.read(path, None)
    assert commands(first) == ["echo one"]
    with path.open("a") as fh:
        fh.write("echo $f; done\n")
    assert commands(zsh.read(path, first.cursor)) == ["for f in *; do \necho $f; done"]


def test_a_trimmed_history_returns_only_what_follows_the_watermark(tmp_path: Path) -> None:
    path = tmp_path / ".bash_history"
    lines = [f"#{1700000000 + i}\ncommand {i}\n" for i in range(1, 6)]
    path.write_text("".join(lines))
    first = bash.read(path, None)
    # HISTFILESIZE: bash rewrote the file keeping its last three entries, then appended two more.
    path.write_text("".join(lines[2:]) + "#1700000006\ncommand 6\n#1700000007\ncommand 7\n")
    second = bash.read(path, first.cursor)
    assert [(m.id, m.text) for m in messages(second)] == [("L6", "command 6"), ("L7", "command 7")]
    assert not any(s.restart for s in second.sessions)


def test_a_same_size_rewrite_without_timestamps_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / ".bash_history"
    path.write_text("ls a\nls b\nls c\n")
    first = bash.read(path, None)
    path.write_text("ls b\nls c\nls d\n")  # one line trimmed, one added: same size, same inode
    os.utime(path, ns=(first.cursor.mtime_ns + 10**9, first.cursor.mtime_ns + 10**9))  # coarse clocks
    second = bash.read(path, first.cursor)
    assert [(m.id, m.text) for m in messages(second)] == [("L4", "ls d")]


def test_a_replaced_fish_history_returns_only_new_entries(tmp_path: Path) -> None:
    path = copy("atuin_test_fish_history", tmp_path)
    first = fish.read(path, None)
    replacement = tmp_path / "fish_history.new"
    kept = (SAMPLES / "atuin_test_fish_history").read_text().split("ERROR\n")[1]
    replacement.write_text(kept + "- cmd: git push\n  when: 1639163100\n")
    os.replace(replacement, path)  # fish rewrites its history through a new file
    second = fish.read(path, first.cursor)
    assert commands(second) == ["git push"]
    assert [m.id for m in messages(second)] == ["L9"]


def test_when_the_watermark_was_deduplicated_away_later_timestamps_are_new(tmp_path: Path) -> None:
    path = tmp_path / ".zsh_history"
    path.write_text(": 1700000001:0;make\n: 1700000002:0;make test\n")
    first = zsh.read(path, None)
    tmp = tmp_path / "new"
    tmp.write_text(": 1700000001:0;make\n: 1700000003:0;git status\n")  # HIST_SAVE_NO_DUPS rewrote it
    os.replace(tmp, path)
    assert commands(zsh.read(path, first.cursor)) == ["git status"]


# -- malformed input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason", "kept"),
    [
        (b"ls\n\xff\xfe bad\npwd\n", "invalid UTF-8", ["ls", "pwd"]),
        (b"ls\n\x00\x01\x02\x03junk\npwd\n", "binary data", ["ls", "pwd"]),
        (b"ls\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\npwd\n", "huge line", ["ls", "pwd"]),
    ],
    ids=["invalid-utf8", "binary-junk", "huge-line"],
)
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_bad_lines_are_skipped_and_counted(
    tmp_path: Path, shell: str, content: bytes, reason: str, kept: list[str]
) -> None:
    if shell == "fish":
        content = content.replace(b"ls\n", b"- cmd: ls\n").replace(b"pwd\n", b"- cmd: pwd\n")
    path = tmp_path / "history"
    path.write_bytes(content)
    batch = importer(shell).read(path, None)
    assert commands(batch) == kept
    assert batch.skipped[reason] == 1


def test_odd_values_in_known_fields_are_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "fish_history"
    path.write_text("- cmd: ls\n  when: yesterday\n- cmd: pwd\n  when: 99999999999999999999\n- unknown: entry\n")
    batch = fish.read(path, None)
    assert [(m.text, m.at) for m in messages(batch)] == [("ls", None), ("pwd", None)]
    assert batch.skipped == {"corrupt entry": 1}
    zsh_file = tmp_path / ".zsh_history"
    zsh_file.write_text(": notatime:0;ls\n: 1700000000:x;pwd\n")
    assert commands(zsh.read(zsh_file, None)) == [": notatime:0;ls", ": 1700000000:x;pwd"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=600), more=st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(tmp_path: Path, data: bytes, more: bytes) -> None:
    for shell in (bash, zsh, fish):
        path = tmp_path / f"history-{shell.name}"
        path.write_bytes(data)
        first = shell.read(path, None)
        assert 0 <= first.cursor.offset <= len(data)
        assert shell.read(path, first.cursor).sessions == []  # unchanged: nothing twice
        with path.open("ab") as fh:
            fh.write(more)
        second = shell.read(path, first.cursor)
        assert second.cursor.offset <= len(data) + len(more)
        assert all(m.role == SHELL and m.command == m.text for m in messages(second))


# -- where the files are ------------------------------------------------------------------------------


def test_locate_honours_histfile_zdotdir_and_fish_variables(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for name in (".bash_history", ".zsh_history", ".zhistory", ".histfile", "custom_bash_history"):
        (home / name).write_text("ls\n")
    zdot = tmp_path / "zdot"
    zdot.mkdir()
    (zdot / ".zsh_history").write_text(": 1:0;ls\n")
    fish_dir = tmp_path / "data" / "fish"
    fish_dir.mkdir(parents=True)
    (fish_dir / "work_history").write_text("- cmd: ls\n")
    assert bash.locate({"HISTFILE": str(home / "custom_bash_history")}, home) == [
        (home / "custom_bash_history").resolve(), (home / ".bash_history").resolve()
    ]  # fmt: skip
    assert bash.locate({"HISTFILE": str(home / ".zsh_history")}, home) == [(home / ".bash_history").resolve()]
    assert zsh.locate({"ZDOTDIR": str(zdot)}, home) == [
        (zdot / ".zsh_history").resolve(), *((home / n).resolve() for n in (".zsh_history", ".zhistory", ".histfile"))
    ]  # fmt: skip
    assert fish.locate({"XDG_DATA_HOME": str(tmp_path / "data"), "fish_history": "work"}, home) == [
        (fish_dir / "work_history").resolve()
    ]
    assert fish.locate({"XDG_DATA_HOME": str(tmp_path / "data"), "fish_history": ""}, home) == []


def test_locate_returns_nothing_when_nothing_is_there(tmp_path: Path) -> None:
    for shell in (bash, zsh, fish):
        assert shell.locate({}, tmp_path) == []


def test_files_under_a_path(tmp_path: Path) -> None:
    for name in (".bash_history", ".zsh_history", "fish_history", "notes.txt"):
        (tmp_path / name).write_text("ls\n")
    assert [p.name for p in bash.files(tmp_path)] == [".bash_history"]
    assert [p.name for p in zsh.files(tmp_path)] == [".zsh_history"]
    assert [p.name for p in fish.files(tmp_path)] == ["fish_history"]
    assert bash.files(tmp_path / "notes.txt") == [tmp_path / "notes.txt"]
