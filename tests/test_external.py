"""The runner for the programs a person configures (extract.command, summarizer.command): JSON in, stdout out."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engram_cli.errors import InvalidInput
from engram_cli.external import STDERR_QUOTE, run_json

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return f"{sys.executable} {path}"


def test_the_payload_arrives_as_json_and_stdout_comes_back_whole(tmp_path: Path) -> None:
    command = _program(
        tmp_path,
        """
        import json, sys
        data = json.load(sys.stdin)
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\\n" + "x" * 100000)
        """,
    )
    payload = {"text": "部署用 make release", "n": [1, 2]}
    out = run_json(command, payload, setting="extract.command", timeout=60)
    first, rest = out.split("\n", 1)
    assert json.loads(first) == payload and "部署" in first  # not escaped: UTF-8 both ways
    assert rest == "x" * 100000  # never cut: the caller redacts before it shortens


def test_a_program_past_its_time_is_stopped_and_named(tmp_path: Path) -> None:
    command = _program(tmp_path, "import time\ntime.sleep(120)\n")
    with pytest.raises(InvalidInput) as caught:
        run_json(command, {}, setting="extract.command", timeout=1)
    assert caught.value.message == "extract.command timed out after 1 s"


def test_a_non_zero_exit_quotes_the_last_stderr_line_redacted_then_cut(tmp_path: Path) -> None:
    # The token straddles the cut: cut first, its head would no longer look like a token and be quoted.
    line = "e" * (STDERR_QUOTE - 10) + " " + GITHUB + " and more"
    command = _program(tmp_path, f"import sys\nprint('first line', file=sys.stderr)\nsys.exit({line!r})\n")
    with pytest.raises(InvalidInput) as caught:
        run_json(command, {}, setting="summarizer.command", timeout=60)
    message = caught.value.message
    assert message.startswith("summarizer.command exited with 1: eeee")
    assert "ghp_" not in message and "first line" not in message
    assert len(message) == len("summarizer.command exited with 1: ") + STDERR_QUOTE


def test_a_silent_failure_says_there_was_no_message(tmp_path: Path) -> None:
    command = _program(tmp_path, "import sys\nsys.exit(3)\n")
    with pytest.raises(InvalidInput, match=r"^extract.command exited with 3: no message$"):
        run_json(command, {}, setting="extract.command", timeout=60)


@pytest.mark.parametrize("command", ["/no/such/program --flag", "python -c 'unclosed"])
def test_a_command_that_cannot_start_says_so(command: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        run_json(command, {}, setting="extract.command", timeout=60)
    assert caught.value.message.startswith(f"extract.command {command!r} cannot run: ")


def test_the_summarizer_redacts_what_it_is_told_and_refuses_nothing(engram: Any, tmp_path: Path) -> None:
    from engram_cli.memory.compact import Cluster, run_summarizer

    cluster = Cluster(namespace="default", agent="user", model="m", members=[])
    cluster.content = "extractive"
    quiet = _program(tmp_path, "print('   ')\n")
    with pytest.raises(InvalidInput, match=r"^summarizer.command printed nothing$"):
        run_summarizer(quiet, cluster, 60)
    talker = _program(tmp_path, f"print('Use {GITHUB} to deploy')\n")
    assert run_summarizer(talker, cluster, 60) == "Use [REDACTED:github-token] to deploy"


def _claude_session(home: Path) -> None:
    project = home / ".claude" / "projects" / "-src-webshop"
    project.mkdir(parents=True)
    line = {
        "type": "user", "uuid": "u1", "sessionId": "s-1", "cwd": "/src/webshop", "timestamp": "2026-11-02T09:00:00Z",
        "message": {"role": "user", "content": "Remember that we deploy with make release."},
    }  # fmt: skip
    (project / "s-1.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("import time\ntime.sleep(120)\n", "extract.command timed out after 1 s"),
        ("print('{\"content\": \"ok\"}')\nprint()\nprint('not json')\n", "output line 3 is not JSON: Expecting value"),
        ("print('[1, 2]')\n", "extract.command output line 1 is not an object"),
        ("import sys\nsys.exit('model not loaded')\n", "extract.command exited with 1: model not loaded"),
    ],
)
def test_ingest_reports_a_failing_extract_command_within_extract_timeout_s(
    body: str, error: str, cli: Any, rows: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _claude_session(home)
    monkeypatch.setenv("HOME", str(home))
    cli("config", "set", "extract.command", _program(tmp_path, body))
    cli("config", "set", "extract.timeout_s", "1")
    failed = cli("ingest", "claude-code", ok=False)
    assert failed.exit_code == 1 and error in failed.stderr
    assert rows("SELECT count(*) FROM memories") == [(0,)]
    assert rows("SELECT count(*) FROM ingest_cursors") == [(0,)]  # the file is read again next time
