"""A hook's failures are never invisible: engram notes them in hooks.log, and `engram doctor` reports them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engram_cli.integrations import git as githook
from engram_cli.integrations import hooklog
from engram_cli.store.lock import exclusive

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


@pytest.fixture
def log(engram_home: Path) -> Path:
    return engram_home / hooklog.LOG_FILE


@pytest.fixture
def broken_db(db_path: Path) -> Path:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.write_bytes(b"this is not a database " * 200)
    return db_path


def test_a_failing_command_run_by_a_hook_is_logged(cli: Any, broken_db: Path, log: Path) -> None:
    result = cli("--hook", "post-commit", "ingest", "--quiet", ok=False)
    assert result.exit_code == 1
    [failure] = hooklog.read(log)
    assert failure.hook == "post-commit" and failure.code == 1
    assert str(broken_db) in failure.message
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def test_without_hook_nothing_is_logged(cli: Any, broken_db: Path, log: Path) -> None:
    assert cli("ingest", "--quiet", ok=False).exit_code == 1
    assert not log.exists()


def test_busy_is_not_a_failure(cli: Any, db_path: Path, log: Path) -> None:
    cli("add", "something to make the database exist")
    with exclusive(db_path, "ingest"):
        result = cli("--hook", "post-commit", "ingest", "--quiet", ok=False)
    assert result.exit_code == 75
    assert not log.exists()


def test_the_session_start_hook_logs_its_failure_and_still_exits_0(
    cli: Any, broken_db: Path, log: Path, tmp_path: Path
) -> None:
    result = cli("--hook", "claude-code:SessionStart", "hooks", "context", "claude-code", "--dir", str(tmp_path))
    assert result.exit_code == 0 and result.stdout == ""
    [failure] = hooklog.read(log)
    assert failure.hook == "claude-code:SessionStart"


def test_doctor_reports_recent_hook_failures(cli: Any, log: Path) -> None:
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json", ok=False).stdout)}
    assert checks["hooks"]["status"] == "ok"
    hooklog.record(log, "post-commit", 1, "cannot open /gone/engram.db")
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json", ok=False).stdout)}
    assert checks["hooks"]["status"] == "warn"
    assert "1 hook failure" in checks["hooks"]["detail"] and "/gone/engram.db" in checks["hooks"]["detail"]
    assert str(log) in checks["hooks"]["hint"]


def test_the_log_holds_no_secret_and_stays_small(log: Path) -> None:
    hooklog.record(log, "post-commit", 1, f"line one\nwith a token {TOKEN}")
    text = log.read_text()
    assert TOKEN not in text and "[REDACTED:github-token]" in text and text.count("\n") == 1
    for _ in range(2000):
        hooklog.record(log, "post-commit", 1, "x" * 400)
    assert log.stat().st_size <= hooklog.MAX_BYTES + 600
    assert all(f.message.startswith("x") for f in hooklog.read(log)[1:])


def test_the_git_hook_notes_when_engram_is_gone(tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    gone = tmp_path / "bin" / "engram"
    githook.install([str(gone)], repo, log_file=log)
    done = subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, capture_output=True, timeout=30
    )
    assert done.returncode == 0
    [failure] = hooklog.read(log)
    assert failure.hook == "post-commit" and failure.code == 127 and str(gone) in failure.message


@pytest.mark.parametrize(
    "args",
    [
        ("hooks", "install", "git", "--repo", "{repo}"),
        ("hooks", "install", "claude-code", "--settings", "{repo}/settings.json"),
        ("schedule",),
    ],
)
def test_an_unusable_database_path_is_refused_at_install(cli: Any, tmp_path: Path, args: tuple[str, ...]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    argv = [a.replace("{repo}", str(repo)) for a in args]
    result = cli("--db", str(tmp_path / "not-a-dir" / "x.db"), *argv, ok=False)
    assert result.exit_code == 1
    assert "does not exist" in result.stderr and "not-a-dir" in result.stderr
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    assert not (repo / "settings.json").exists()
    # A usable path is accepted: an existing directory, the file created later.
    assert cli("--db", str(tmp_path / "x.db"), *argv).exit_code == 0
