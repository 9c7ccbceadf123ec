"""The README's exit-code table: one representative command for every code, and the real-process cases
(a closed pipe, argv that is not UTF-8) run as real processes."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_cli import Engram
from engram_cli.errors import InvalidInput, UsageError
from engram_cli.store.lock import exclusive


def _junk_db(tmp_path: Path) -> str:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00\x01 definitely not sqlite " * 50)
    return str(junk)


def _raise(exc: BaseException) -> Callable[..., Any]:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc

    return boom


def _audit_with_problems(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    cli("add", "The staging database runs on port 5433")
    cli("add", "The staging database runs on port 5433!", "--no-merge")  # a near duplicate add would merge
    return ["audit", "--strict"]


def _interrupted(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(Engram, "list", _raise(KeyboardInterrupt()))
    return ["list"]


def _bug(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(Engram, "list", _raise(RuntimeError("boom")))
    return ["list"]


def _argv(*args: str) -> Callable[..., list[str]]:
    return lambda cli, tmp_path, monkeypatch: list(args)


def _on_junk(*args: str) -> Callable[..., list[str]]:
    return lambda cli, tmp_path, monkeypatch: ["--db", _junk_db(tmp_path), *args]


# (case, setup(cli, tmp_path, monkeypatch) -> argv, exit code, a phrase its stderr must hold)
CASES: list[tuple[str, Callable[..., list[str]], int, str]] = [
    ("ok", _argv("list"), 0, "no memories"),
    ("bad-input", _argv("add", ""), 1, "Error: the memory is empty"),
    ("corrupt-database", _on_junk("recall", "x"), 1, "not an engram database"),
    ("doctor-failure", _on_junk("doctor"), 1, ""),
    ("audit-strict-problems", _audit_with_problems, 1, "audit found problems that remain"),
    ("unknown-flag", _argv("recall", "x", "--nonsense"), 2, "No such option"),
    ("bad-flag-value", _argv("recall", "x", "-k", "0"), 2, "Invalid value"),
    ("engine-usage-error", _argv("config", "set", "recall.nope", "1"), 2, "unknown setting 'recall.nope'"),
    ("conflicting-flags", _argv("recall", "x", "-n", "a", "-A"), 2, "exclude each other"),
    ("interrupted", _interrupted, 130, "Interrupted"),
    ("internal-error", _bug, 70, "Error: internal error (RuntimeError: boom); run with -vv for the traceback"),
]


@pytest.mark.parametrize(("name", "setup", "code", "phrase"), CASES, ids=[c[0] for c in CASES])
def test_every_command_follows_the_exit_code_table(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, setup: Any, code: int, phrase: str
) -> None:
    args = setup(cli, tmp_path, monkeypatch)
    result = cli(*args, ok=False)
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert phrase in result.stderr
    assert "Traceback" not in result.stderr


def test_busy_exits_75_while_another_compact_holds_the_lock(cli: Any, db_path: Path) -> None:
    cli("add", "The staging database runs on port 5433")
    with exclusive(db_path, "compact"):
        result = cli("compact", ok=False)
    assert result.exit_code == 75 and "another `engram compact` is running" in result.stderr


def test_internal_error_shows_the_traceback_only_with_vv(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Engram, "list", _raise(RuntimeError("boom")))
    plain = cli("list", ok=False)
    assert plain.stderr.count("\n") == 1
    detailed = cli("-vv", "list", ok=False)
    assert detailed.exit_code == 70
    assert "Traceback (most recent call last)" in detailed.stderr and "RuntimeError: boom" in detailed.stderr
    assert "run with -vv" not in detailed.stderr


def _engram(*args: str | bytes, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "engram_cli", *args], input=stdin, capture_output=True, env=os.environ.copy()
    )


def _fill(count: int) -> None:
    """Memories that come with vectors, so filling the store embeds nothing."""
    rng = np.random.default_rng(7)
    lines = []
    for i in range(count):
        vector = rng.normal(size=384).astype("<f4")
        vector /= np.linalg.norm(vector)
        lines.append(json.dumps({
            "id": f"00000000-0000-4000-8000-{i:012d}", "content": f"memory {i}: " + "lorem ipsum " * 80,
            "type": "semantic", "namespace": "default", "agent": "user", "status": "active",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "vector": {"model": "multilingual-e5-small-q4-v1", "dim": 384,
                       "float32_b64": base64.b64encode(vector.tobytes()).decode("ascii")},
        }))  # fmt: skip
    with Engram.open() as mem:
        assert mem.import_lines(lines).imported == count


def test_a_closed_pipe_ends_quietly_with_141(tmp_path: Path) -> None:
    _fill(400)  # hundreds of kilobytes of export, far more than a pipe holds: the writer is still busy
    err = tmp_path / "stderr"
    script = f'"{sys.executable}" -m engram_cli export 2>"{err}" | head -1; echo "status=${{PIPESTATUS[0]}}"'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=os.environ.copy())
    first, status = done.stdout.splitlines()
    assert json.loads(first)["content"].startswith("memory 0:")
    assert status == "status=141"
    assert err.read_text() == ""  # no traceback, no "Exception ignored"


def test_argv_that_is_not_utf8_becomes_replacement_characters(engram_home: Path) -> None:
    added = _engram("add", b"caf\xe9 au lait", "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["content"] == "caf\ufffd au lait"
    stored = _engram("add", "x", "-n", b"ns\xff")
    assert stored.returncode == 0, stored.stderr
    searched = _engram("recall", "x", "-n", b"ns\xff", "--json")
    assert searched.returncode == 0, searched.stderr
    assert [h["namespace"] for h in json.loads(searched.stdout)] == ["ns\ufffd"] and b"Traceback" not in searched.stderr


# -- the error envelope ---------------------------------------------------------------------------

ENVELOPE_CASES: list[tuple[str, Callable[..., list[str]], int, str]] = [
    ("bad-input", _argv("add", "", "--json"), 1, "InvalidInput"),
    ("corrupt-database", _on_junk("recall", "x", "--json"), 1, "StoreError"),
    ("recall-format-json", _argv("recall", "x", "--format", "json", "--since", "soonish"), 1, "InvalidInput"),
    ("unknown-flag", _argv("recall", "x", "--json", "--nonsense"), 2, "UsageError"),
    ("bad-flag-value", _argv("recall", "x", "-k", "0", "--json"), 2, "UsageError"),
    ("conflicting-flags", _argv("list", "-n", "a", "-A", "--json"), 2, "UsageError"),
    ("interrupted", lambda *a: [*_interrupted(*a), "--json"], 130, "Interrupted"),
    ("internal-error", lambda *a: [*_bug(*a), "--json"], 70, "InternalError"),
]


@pytest.mark.parametrize(("name", "setup", "code", "kind"), ENVELOPE_CASES, ids=[c[0] for c in ENVELOPE_CASES])
def test_with_json_a_failure_is_one_error_document_on_stdout(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, setup: Any, code: int, kind: str
) -> None:
    result = cli(*setup(cli, tmp_path, monkeypatch), ok=False)
    assert result.exit_code == code
    data = json.loads(result.stdout)
    assert list(data) == ["error"] and list(data["error"]) == ["type", "message", "hint", "exit_code"]
    error = data["error"]
    assert (error["type"], error["exit_code"]) == (kind, code)
    assert isinstance(error["message"], str) and error["message"]
    assert error["hint"] is None or isinstance(error["hint"], str)
    if code in (1, 70):  # engram's own messages: stderr says the same, for the person
        assert f"Error: {error['message']}" in result.stderr or error["message"] in result.stderr


def test_the_envelope_carries_the_message_and_hint_that_stderr_shows(cli: Any) -> None:
    result = cli("add", "", "--json", ok=False)
    error = json.loads(result.stdout)["error"]
    assert error == {
        "type": "InvalidInput",
        "message": "the memory is empty",
        "hint": 'pass some text, e.g. engram add "deploys go through make release"',
        "exit_code": 1,
    }
    assert result.stderr == f"Error: {error['message']}\nHint: {error['hint']}\n"


def test_busy_under_json_is_an_envelope_with_75(cli: Any, db_path: Path) -> None:
    cli("add", "The staging database runs on port 5433")
    with exclusive(db_path, "compact"):
        result = cli("compact", "--json", ok=False)
    assert result.exit_code == 75
    assert json.loads(result.stdout)["error"]["type"] == "BusyError"


def test_a_failure_after_the_report_leaves_the_report_as_the_only_document(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = cli(*_audit_with_problems(cli, tmp_path, monkeypatch), "--json", ok=False)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert "error" not in report and report["problems"] == ["near_duplicates"]
    assert "Error: audit found problems that remain" in result.stderr


def test_without_json_stdout_stays_empty_on_failure(cli: Any) -> None:
    result = cli("add", "", ok=False)
    assert (result.exit_code, result.stdout) == (1, "")


# -- errors name parameters; the CLI names its flags ----------------------------------------------


def test_the_library_names_the_parameter_and_the_cli_the_flag(cli: Any, engram: Engram) -> None:
    with pytest.raises(InvalidInput) as raised:
        engram.decay(now="soonish")
    assert (raised.value.message, raised.value.param) == ("cannot read `now` 'soonish'", "now")
    with pytest.raises(InvalidInput) as raised:
        engram.list(accessed_since="a while ago")
    assert raised.value.message == "cannot read `accessed_since` 'a while ago'"
    with pytest.raises(InvalidInput) as raised:
        engram.reembed("multilingual-e5-small-q4-v1", batch=0)
    assert (raised.value.message, raised.value.param) == ("`batch` must be at least 1", "batch")

    assert "Error: cannot read --now 'soonish'\n" in cli("decay", "--now", "soonish", ok=False).stderr
    listed = cli("list", "--accessed-since=a while ago", "--json", ok=False)
    assert "Error: cannot read --accessed-since 'a while ago'\n" in listed.stderr
    assert json.loads(listed.stdout)["error"]["message"] == "cannot read --accessed-since 'a while ago'"


def test_a_parameter_that_is_no_flag_of_the_command_keeps_its_name(cli: Any, tmp_path: Path) -> None:
    cli("add", "Deploys go through make release")
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "deploy", "now": "soonish", "expected": {"contains": ["make"]}}\n')
    result = cli("eval", str(queries), ok=False)  # `now` is a field of the query here, not --now
    assert "Error: cannot read `now` 'soonish'\n" in result.stderr


def test_naming_renames_every_parameter_in_message_and_hint_and_keeps_the_original() -> None:
    error = UsageError(
        "`project` and `settings` exclude each other", hint="drop `settings`", param=("project", "settings")
    )
    named = error.naming({"project": "--project", "settings": "--settings", "now": "--now"})
    assert (named.message, named.hint, str(named)) == (
        "--project and --settings exclude each other",
        "drop --settings",
        "--project and --settings exclude each other",
    )
    assert type(named) is UsageError and named.exit_code == 2 and named.params == ("project", "settings")
    assert error.message == "`project` and `settings` exclude each other"
    assert error.naming({"now": "--now"}) is error
