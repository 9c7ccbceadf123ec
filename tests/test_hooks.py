"""engram hooks (git, assistants) and engram schedule, as specifications.

Git runs for real in temporary repositories. The engram that hooks start is a fake script that
records its arguments, so no test ever leaves a real ingest running in the background.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer.main

from engram_cli.cli import app
from engram_cli.integrations import assistants, engram_command
from engram_cli.integrations import git as githook
from engram_cli.integrations.schedule import JOBS
from engram_cli.render import CARD_HEADER

# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def quiet_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git with an identity and no global or system configuration (no core.hooksPath from the machine)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "myproject"
    path.mkdir()
    git(path, "init", "-q")
    return path


class FakeEngram:
    """An `engram` that appends its arguments (and whether git's index variable leaked) to a file."""

    def __init__(self, directory: Path, *, sleep: float = 0, exit_code: int = 0, until: Path | None = None) -> None:
        self.path = directory / "engram"
        self.calls = directory / "calls.txt"
        # ``until``: block until that file exists (at most a minute), so a test can tell "did not wait" from "slow".
        block = f"n=0; while [ ! -e {shlex.quote(str(until))} ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done\n"
        self.path.write_text(
            "#!/bin/sh\n"
            f"sleep {sleep}\n"
            + (block if until is not None else "")
            + f'echo "$* index=${{GIT_INDEX_FILE-unset}}" >> {shlex.quote(str(self.calls))}\n'
            f"exit {exit_code}\n"
        )
        self.path.chmod(0o755)

    def lines(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def wait(self, count: int = 1, timeout: float = 10) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.lines()) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.lines()


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeEngram:
    """The engram every installed hook calls, in place of the real one."""
    directory = tmp_path / "bin"
    directory.mkdir()
    engram = FakeEngram(directory)
    monkeypatch.setattr("engram_cli.api.hooks.engram_command", lambda db=None: [str(engram.path)])
    return engram


def commit(repo: Path, message: str = "work") -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", message], cwd=repo, capture_output=True, text=True, timeout=30
    )
    return done, time.monotonic() - started


def hooks_of(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / ".git" / "hooks").iterdir() if not p.name.endswith(".sample"))


# -- git ------------------------------------------------------------------------------------


def test_a_commit_does_not_wait_for_ingest_and_succeeds_even_when_engram_fails(
    cli: Any, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = tmp_path / "release-ingest"
    slow_failing = FakeEngram(tmp_path, exit_code=1, until=release)
    monkeypatch.setattr("engram_cli.api.hooks.engram_command", lambda db=None: [str(slow_failing.path)])
    result = cli("hooks", "install", "git", "--repo", str(repo))
    assert "installed post-commit hook" in result.stdout

    # The ingest cannot finish before the commit has returned: a commit that waited for it would hang
    # (and time out) here, however fast or loaded the machine is.
    done, _ = commit(repo)
    assert done.returncode == 0, done.stderr
    assert slow_failing.lines() == []  # still waiting in the background
    release.touch()
    # Detached, time-bounded, quiet; and git's per-commit variables did not leak into it.
    assert slow_failing.wait() == ["--hook post-commit ingest --quiet --max-seconds 60 index=unset"]
    assert not (repo / ".git" / "engram-ingest.lock").exists()


def test_a_commit_succeeds_when_engram_is_gone(cli: Any, repo: Path, fake: FakeEngram) -> None:
    cli("hooks", "install", "git", "--repo", str(repo))
    fake.path.unlink()
    done, _ = commit(repo)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_an_existing_hook_is_chained_still_runs_and_keeps_its_exit_status(
    cli: Any, repo: Path, fake: FakeEngram, tmp_path: Path
) -> None:
    ran = tmp_path / "previous-hook-ran"
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(f'#!/bin/sh\necho "previous $*" >> {shlex.quote(str(ran))}\nexit 7\n')
    hook.chmod(0o755)

    result = cli("hooks", "install", "git", "--repo", str(repo))
    assert "post-commit.engram-chained" in result.stderr
    assert hooks_of(repo) == ["post-commit", "post-commit.engram-chained"]

    done, _ = commit(repo)
    assert done.returncode == 0  # a post-commit hook's status never fails a commit, ours included
    assert fake.wait() == ["--hook post-commit ingest --quiet --max-seconds 60 index=unset"]
    assert ran.read_text() == "previous \n"

    # Called directly, the hook passes its arguments on and returns the earlier hook's status.
    direct = subprocess.run([str(hook), "a", "b c"], cwd=repo, capture_output=True, timeout=30)
    assert direct.returncode == 7
    assert ran.read_text().splitlines()[-1] == "previous a b c"


def test_installing_twice_leaves_one_hook(cli: Any, repo: Path, fake: FakeEngram, tmp_path: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    cli("hooks", "install", "git", "--repo", str(repo))
    first = hook.read_bytes()
    again = json.loads(cli("hooks", "install", "git", "--repo", str(repo), "--json").stdout)
    assert again["action"] == "unchanged"
    assert hook.read_bytes() == first
    assert hooks_of(repo) == ["post-commit", "post-commit.engram-chained"]
    commit(repo)
    assert fake.wait() == ["--hook post-commit ingest --quiet --max-seconds 60 index=unset"]
    time.sleep(0.3)
    assert len(fake.lines()) == 1


def test_a_moved_engram_updates_the_hook_in_place(repo: Path, tmp_path: Path) -> None:
    assert githook.install(["/old/engram"], repo).action == "installed"
    change = githook.install(["/new place/engram"], repo)
    assert change.action == "updated"
    text = change.hook.read_text()
    assert "'/new place/engram' --hook post-commit ingest" in text and "/old/engram" not in text


def test_uninstall_restores_the_earlier_hook_byte_for_byte(cli: Any, repo: Path, fake: FakeEngram) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    original = b"#!/bin/sh\r\n# caf\xe9 \xff no newline at the end\r\nexit 0"
    hook.write_bytes(original)
    hook.chmod(0o750)
    cli("hooks", "install", "git", "--repo", str(repo))
    result = json.loads(cli("hooks", "uninstall", "git", "--repo", str(repo), "--json").stdout)
    assert result["action"] == "restored"
    assert hook.read_bytes() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750
    assert hooks_of(repo) == ["post-commit"]


def test_uninstall_removes_the_hook_when_there_was_none(cli: Any, repo: Path, fake: FakeEngram) -> None:
    cli("hooks", "install", "git", "--repo", str(repo))
    assert "removed" in cli("hooks", "uninstall", "git", "--repo", str(repo)).stdout
    assert hooks_of(repo) == []
    assert "nothing to do" in cli("hooks", "uninstall", "git", "--repo", str(repo)).stdout


def test_an_earlier_hook_that_is_a_symlink_comes_back_as_one(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared-hook"
    target.write_text("#!/bin/sh\nexit 0\n")
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.symlink_to(target)
    githook.install(["/x/engram"], repo)
    githook.uninstall(repo)
    assert hook.is_symlink() and os.readlink(hook) == str(target)


def test_an_edited_engram_hook_is_left_alone(cli: Any, repo: Path, fake: FakeEngram) -> None:
    cli("hooks", "install", "git", "--repo", str(repo))
    hook = repo / ".git" / "hooks" / "post-commit"
    edited = hook.read_bytes() + b"echo my own addition\n"
    hook.write_bytes(edited)
    for action in ("install", "uninstall"):
        result = cli("hooks", action, "git", "--repo", str(repo), ok=False)
        assert result.exit_code == 1
        assert "has been edited" in result.stderr and "Hint:" in result.stderr
        assert hook.read_bytes() == edited


def test_a_foreign_hook_is_never_removed(cli: Any, repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    result = cli("hooks", "uninstall", "git", "--repo", str(repo), ok=False)
    assert result.exit_code == 1 and "not engram's hook" in result.stderr
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"


@pytest.mark.parametrize("busy", ["rebase-merge", "engram-ingest.lock"])
def test_no_ingest_during_a_rebase_or_while_one_runs(repo: Path, fake: FakeEngram, busy: str) -> None:
    githook.install([str(fake.path)], repo)
    (repo / ".git" / busy).mkdir()
    done, _ = commit(repo)
    assert done.returncode == 0
    time.sleep(0.5)
    assert fake.lines() == []


def test_a_lock_left_by_a_killed_run_expires(repo: Path, fake: FakeEngram) -> None:
    githook.install([str(fake.path)], repo)
    lock = repo / ".git" / "engram-ingest.lock"
    lock.mkdir()
    eleven_minutes_ago = time.time() - 11 * 60
    os.utime(lock, (eleven_minutes_ago, eleven_minutes_ago))
    commit(repo)
    assert fake.wait() == ["--hook post-commit ingest --quiet --max-seconds 60 index=unset"]


def test_a_foreign_hook_beside_a_kept_one_is_a_conflict(cli: Any, repo: Path, fake: FakeEngram) -> None:
    hooks = repo / ".git" / "hooks"
    (hooks / "post-commit").write_text("#!/bin/sh\necho new\n")
    (hooks / "post-commit.engram-chained").write_text("#!/bin/sh\necho old\n")
    result = cli("hooks", "install", "git", "--repo", str(repo), ok=False)
    assert result.exit_code == 1 and "decide which one to keep" in result.stderr
    assert (hooks / "post-commit").read_text() == "#!/bin/sh\necho new\n"


def test_a_husky_hook_is_not_chained_but_gets_the_line_to_add(cli: Any, repo: Path, fake: FakeEngram) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text('#!/bin/sh\n. "$(dirname "$0")/husky.sh"\n')
    result = cli("hooks", "install", "git", "--repo", str(repo), ok=False)
    assert result.exit_code == 1 and "husky" in result.stderr
    assert f"nohup {fake.path} --hook post-commit ingest --quiet --max-seconds 60" in result.stderr
    assert hooks_of(repo) == ["post-commit"]

    husky9 = repo / ".husky" / "_"
    husky9.mkdir(parents=True)
    (husky9 / "post-commit").write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n')
    git(repo, "config", "core.hooksPath", ".husky/_")
    result = cli("hooks", "install", "git", "--repo", str(repo), ok=False)
    assert result.exit_code == 1 and "husky" in result.stderr
    assert sorted(p.name for p in husky9.iterdir()) == ["post-commit"]


def test_core_hooks_path_is_honoured(repo: Path, fake: FakeEngram, tmp_path: Path) -> None:
    shared = tmp_path / "team-hooks"
    git(repo, "config", "core.hooksPath", str(shared))
    change = githook.install([str(fake.path)], repo)
    assert change.hook == shared.resolve() / "post-commit"
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    done, _ = commit(repo)
    assert done.returncode == 0
    assert fake.wait() == ["--hook post-commit ingest --quiet --max-seconds 60 index=unset"]


def test_a_linked_worktree_uses_the_repositorys_hooks(repo: Path, fake: FakeEngram) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    worktree = repo.parent / "feature"
    git(repo, "worktree", "add", "-q", str(worktree))
    change = githook.install([str(fake.path)], worktree)
    assert change.hook == (repo / ".git" / "hooks" / "post-commit").resolve()
    done, _ = commit(worktree)
    assert done.returncode == 0
    assert fake.wait() == ["--hook post-commit ingest --quiet --max-seconds 60 index=unset"]


def test_a_subdirectory_finds_the_repository(repo: Path) -> None:
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert githook.hooks_dir(sub) == (repo / ".git" / "hooks").resolve()


def test_not_a_repository_or_no_git_is_a_clear_error(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = cli("hooks", "install", "git", "--repo", str(plain), ok=False)
    assert result.exit_code == 1 and "not inside a git working tree" in result.stderr and "--repo" in result.stderr
    result = cli("hooks", "install", "git", "--repo", str(tmp_path / "missing"), ok=False)
    assert result.exit_code == 1 and "does not exist" in result.stderr
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    result = cli("hooks", "install", "git", "--repo", str(plain), ok=False)
    assert result.exit_code == 1 and "git is not installed" in result.stderr


# -- assistants ------------------------------------------------------------------------------

FOREIGN = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
    },
}


def ours(data: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event, groups in data.get("hooks", {}).items():
        for group in groups:
            for hook in group["hooks"]:
                if hook["command"].endswith("# engram-managed"):
                    found.setdefault(event, []).append(hook["command"])
    return found


@pytest.fixture
def claude_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "claude-config"
    config.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    path = config / "settings.json"
    path.write_text(json.dumps(FOREIGN, indent=4) + "\n")
    return path


def test_claude_code_merge_keeps_every_foreign_key_and_hook(cli: Any, claude_settings: Path, fake: FakeEngram) -> None:
    original = claude_settings.read_bytes()
    result = cli("hooks", "install", "claude-code")
    assert "installed engram's SessionStart, SessionEnd hooks" in result.stdout
    data = json.loads(claude_settings.read_text())
    assert data["model"] == "opus" and data["permissions"] == FOREIGN["permissions"]
    assert data["hooks"]["PreToolUse"] == FOREIGN["hooks"]["PreToolUse"]
    assert data["hooks"]["SessionStart"][0] == FOREIGN["hooks"]["SessionStart"][0]
    engram = shlex.quote(str(fake.path))
    assert ours(data) == {
        "SessionStart": [f"{engram} --hook claude-code:SessionStart hooks context claude-code # engram-managed"],
        "SessionEnd": [
            f"nohup {engram} --hook claude-code:SessionEnd ingest claude-code --quiet --max-seconds 60 "
            "</dev/null >/dev/null 2>&1 & # engram-managed"
        ],
    }
    assert claude_settings.with_name("settings.json.engram-backup").read_bytes() == original
    assert claude_settings.read_text().startswith('{\n    "model"')  # the file's own indentation

    installed = claude_settings.read_bytes()
    again = json.loads(cli("hooks", "install", "claude-code", "--json").stdout)
    assert again["action"] == "unchanged"
    assert claude_settings.read_bytes() == installed


def test_claude_code_uninstall_removes_only_engrams_entries(cli: Any, claude_settings: Path, fake: FakeEngram) -> None:
    original = claude_settings.read_bytes()
    cli("hooks", "install", "claude-code")
    assert "removed" in cli("hooks", "uninstall", "claude-code").stdout
    assert claude_settings.read_bytes() == original  # nothing else changed meanwhile: back byte for byte

    cli("hooks", "install", "claude-code")
    data = json.loads(claude_settings.read_text())
    mine = {"type": "command", "command": "notify-send done"}
    data["hooks"]["SessionEnd"][0]["hooks"].append(mine)  # the person adds a hook to engram's group
    data["theme"] = "dark"
    claude_settings.write_text(json.dumps(data, indent=2))
    cli("hooks", "uninstall", "claude-code")
    after = json.loads(claude_settings.read_text())
    assert ours(after) == {}
    assert after["theme"] == "dark"
    assert after["hooks"]["SessionEnd"] == [{"hooks": [mine]}]
    assert after["hooks"]["SessionStart"] == FOREIGN["hooks"]["SessionStart"]
    assert after["hooks"]["PreToolUse"] == FOREIGN["hooks"]["PreToolUse"]
    assert "nothing to do" in cli("hooks", "uninstall", "claude-code").stdout


def test_invalid_json_is_refused_and_left_untouched(cli: Any, claude_settings: Path, fake: FakeEngram) -> None:
    broken = b'{"model": "opus",, }\n'
    claude_settings.write_bytes(broken)
    for action in ("install", "uninstall"):
        result = cli("hooks", action, "claude-code", ok=False)
        assert result.exit_code == 1
        assert "is not valid JSON (line 1, column 18" in result.stderr
        assert claude_settings.read_bytes() == broken
    assert not claude_settings.with_name("settings.json.engram-backup").exists()


@pytest.mark.parametrize("content", ['["a list"]', '{"hooks": []}', '{"hooks": {"SessionEnd": {}}}'])
def test_settings_of_an_unexpected_shape_are_refused(
    cli: Any, claude_settings: Path, fake: FakeEngram, content: str
) -> None:
    claude_settings.write_text(content)
    result = cli("hooks", "install", "claude-code", ok=False)
    assert result.exit_code == 1 and "engram left" in result.stderr
    assert claude_settings.read_text() == content


def test_a_missing_settings_file_is_created_and_a_moved_engram_replaces_its_entries(tmp_path: Path) -> None:
    claude = assistants.ASSISTANTS["claude-code"]
    path = tmp_path / "new" / "settings.json"
    assert assistants.install(claude, path, ["/old/engram"]).action == "installed"
    change = assistants.install(claude, path, ["/new/engram"])
    assert change.action == "updated" and change.backup is not None
    commands = ours(json.loads(path.read_text()))
    assert len(commands["SessionStart"]) == 1 and commands["SessionStart"][0].startswith("/new/engram ")
    assert assistants.uninstall(claude, path).action == "removed"
    assert json.loads(path.read_text()) == {}


def test_project_settings_go_to_the_local_file(cli: Any, repo: Path, fake: FakeEngram) -> None:
    cli("hooks", "install", "claude-code", "--project", str(repo))
    assert ours(json.loads((repo / ".claude" / "settings.local.json").read_text()))
    assert not (repo / ".claude" / "settings.json").exists()
    result = cli("hooks", "install", "claude-code", "--project", str(repo), "--settings", "x.json", ok=False)
    assert result.exit_code == 2


def test_the_installed_commands_run_in_a_shell(tmp_path: Path, fake: FakeEngram) -> None:
    """The strings written into the settings are valid sh: the ingest one returns at once, detached."""
    wanted = assistants.wanted_hooks(assistants.ASSISTANTS["claude-code"], [str(fake.path)])
    for event in ("SessionEnd", "SessionStart"):
        done = subprocess.run(["sh", "-c", wanted[event][0]["command"]], capture_output=True, timeout=30)
        assert done.returncode == 0 and done.stdout == b""
    assert sorted(fake.wait(2)) == [
        "--hook claude-code:SessionEnd ingest claude-code --quiet --max-seconds 60 index=unset",
        "--hook claude-code:SessionStart hooks context claude-code index=unset",
    ]


def test_gemini_and_codex_use_their_own_files_and_spelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    gemini, codex = assistants.ASSISTANTS["gemini-cli"], assistants.ASSISTANTS["codex"]
    assert assistants.settings_path(codex) == tmp_path / "codex" / "hooks.json"
    assert assistants.settings_path(gemini) == tmp_path / "home" / ".gemini" / "settings.json"

    g = assistants.wanted_hooks(gemini, ["/e"])
    assert g["SessionStart"][0] == {
        "name": "engram-context", "type": "command",
        "command": "/e --hook gemini-cli:SessionStart hooks context gemini-cli # engram-managed", "timeout": 30000,
    }  # fmt: skip
    assert g["SessionEnd"][0]["name"] == "engram-ingest"

    c = assistants.wanted_hooks(codex, ["/e"])
    assert list(c) == ["SessionStart"]  # no session-end event: the next start ingests what came before
    assert [h["command"].split(" # ")[0].split()[:6] for h in c["SessionStart"]] == [
        ["/e", "--hook", "codex:SessionStart", "hooks", "context", "codex"],
        ["nohup", "/e", "--hook", "codex:SessionStart", "ingest", "codex"],
    ]
    assert all("timeout" not in h for h in c["SessionStart"])


def test_unknown_assistant_names_the_supported_ones(cli: Any) -> None:
    result = cli("hooks", "context", "cursor", ok=False)
    assert result.exit_code == 2 and "claude-code" in result.stderr and "engram schedule" in result.stderr
    assert "cursor" in cli("hooks", "install", "--help").stdout


# -- hooks context ---------------------------------------------------------------------------


def test_context_prints_the_projects_memories_without_counting_an_access(
    cli: Any, tmp_path: Path, rows: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "myproject"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    cli("add", "myproject deploys with `make release`, never by hand", "-n", "myproject")
    cli("add", "an unrelated fact about another project", "-n", "elsewhere")

    card = cli("hooks", "context", "claude-code", "--dir", str(project / "src")).stdout
    assert card.startswith(CARD_HEADER)
    assert "make release" in card and "unrelated" not in card
    assert rows("SELECT sum(access_count) FROM memories") == [(0,)]

    monkeypatch.setenv("GEMINI_PROJECT_DIR", str(project))
    payload = json.loads(cli("hooks", "context", "gemini-cli").stdout)
    assert payload["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "make release" in payload["hookSpecificOutput"]["additionalContext"]

    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path / "no-memories-here"))
    assert cli("hooks", "context", "claude-code").stdout == ""


def test_context_without_a_database_prints_nothing_and_creates_nothing(cli: Any, db_path: Path, tmp_path: Path) -> None:
    result = cli("hooks", "context", "claude-code", "--dir", str(tmp_path))
    assert result.stdout == "" and result.stderr == ""
    assert not db_path.exists()


def test_context_on_a_broken_database_says_so_on_stderr_and_exits_0(cli: Any, db_path: Path, tmp_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.write_bytes(b"not a database at all" * 100)
    result = cli("hooks", "context", "claude-code", "--dir", str(tmp_path))
    assert result.exit_code == 0 and result.stdout == ""
    assert "no memories for this session" in result.stderr


# -- schedule --------------------------------------------------------------------------------


def test_schedule_prints_crontab_lines_with_absolute_paths(cli: Any, engram_home: Path, fake: FakeEngram) -> None:
    result = cli("schedule")
    lines = [line for line in result.stdout.splitlines() if line and not line.startswith("#")]
    assert len(lines) == 3
    log = engram_home / "cron.log"
    for line, job in zip(lines, JOBS, strict=True):
        fields = line.split(" ", 5)
        assert " ".join(fields[:5]) == job.when
        words = shlex.split(fields[5])
        assert words[0] == f"ENGRAM_HOME={engram_home}"  # cron would not know where the database is
        assert words[1] == str(fake.path) and Path(words[1]).is_absolute()
        assert words[2] == job.name
        assert words[-3:] == [">>", str(log), "2>&1"]
    assert "--max-seconds" in lines[0] and "--quiet" in lines[0]
    assert "crontab -e" in result.stderr and "Nothing was installed" in result.stderr

    plan = json.loads(cli("schedule", "--json").stdout)
    assert [j["name"] for j in plan["jobs"]] == ["ingest", "decay", "compact"]
    assert plan["log"] == str(log) and plan["jobs"][0]["command"][0] == str(fake.path)


def test_schedule_escapes_percent_signs_for_cron(cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "100%"))
    line = json.loads(cli("schedule", "--json").stdout)["jobs"][1]["line"]
    assert "100\\%" in line and "100%" not in line.replace("100\\%", "")


# -- the engram command ------------------------------------------------------------------------


def test_engram_command_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "venv" / "bin" / "engram"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["venv/bin/engram", "hooks"])
    assert engram_command() == [str(script)]
    assert engram_command("rel.db") == [str(script), "--db", str(tmp_path / "rel.db")]
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "engram_cli" / "__main__.py")])
    assert engram_command() == [os.path.abspath(sys.executable), "-m", "engram_cli"]


def _paths(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        found.append((*prefix, name))
        if hasattr(command, "commands"):
            found.extend(_paths(command, (*prefix, name)))
    return found


def test_every_new_command_has_help(cli: Any) -> None:
    paths = [p for p in _paths(typer.main.get_command(app)) if p[0] in ("hooks", "schedule")]
    expected = {("hooks", "install", "git"), ("hooks", "uninstall", "codex"), ("hooks", "context"), ("schedule",)}
    assert expected <= set(paths)
    for path in paths:
        result = cli(*path, "--help")
        assert "Usage:" in result.stdout
