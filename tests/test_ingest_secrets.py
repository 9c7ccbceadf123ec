"""Secrets never reach the database through ingest: text is redacted before it is cut, every message before
extraction (so digests and the extract.command payload start from redacted text), cursors and digests again
before they are saved, and a shell command's summary names programs, never argument values."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.ingest.base import clip, excerpt
from engram_cli.ingest.common import clip_command, render_input

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5"
    "MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
GITHUB = "ghp_Q3x9Lm2Vb7Nc4Kd8Rf1Tg6Yh0Uj5Wk3Ps2Ae"
ANTHROPIC = "sk-ant-api03-Zx8kQ2mW9vB4nR7tY1uP3sL6dF0gH5jK8cV2bN4mA9"
AWS_ID = "AKIAQ3EGX7L2M4N5P6R7"
PASSWORD = "Tr0ub4dor-quantum"
SESSION = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def _db_bytes(db_path: Path) -> bytes:
    """Every byte of the database as it sits on disk: the file, its -wal and -shm, before and after a checkpoint."""
    before = b"".join(p.read_bytes() for p in sorted(db_path.parent.glob(db_path.name + "*")))
    with Engram.open() as engram:
        engram.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    return before + b"".join(p.read_bytes() for p in sorted(db_path.parent.glob(db_path.name + "*")))


def _fragments(secret: str, size: int = 10) -> list[bytes]:
    return [secret[i : i + size].encode() for i in range(len(secret) - size + 1)]


def _straddling(secret: str, at: int, length: int) -> str:
    """A text of ``length`` characters with ``secret`` starting a little before position ``at``."""
    start = at - len(secret) // 3
    return ("word " * length)[: start - 1] + " " + secret + " " + ("more " * length)[: length - start - len(secret) - 1]


# -- the helpers that cut text ----------------------------------------------------------------------


def test_every_cutting_helper_redacts_before_it_cuts() -> None:
    command = _straddling(JWT, 4000, 5000)
    assert command.index(JWT) < 4000 < command.index(JWT) + len(JWT)
    output = _straddling(GITHUB, 600, 700)
    for cut in (clip_command(command), clip(command, 4000), excerpt(output), clip(output, 600)):
        assert not any(f.decode() in cut for f in _fragments(JWT) + _fragments(GITHUB)), cut
    assert "[REDACTED:jwt]" in clip_command(command) and "[REDACTED:github-token]" in excerpt(output)
    rendered = render_input({"body": output, "password": "hunter2-plain", "n": 5}, limit=600)
    assert GITHUB[:10] not in rendered and "hunter2" not in rendered and "n=5" in rendered


def test_a_cut_still_reads_as_before_when_nothing_is_secret() -> None:
    assert excerpt("  ok  ") == "ok"
    assert excerpt("x" * 700) == "x" * 600 + " …"
    assert clip_command("y" * 4001) == "y" * 4000 + " …"
    assert render_input({"a": "z" * 130}, limit=120, tidy_cut=False) == "a=" + "z" * 120 + " …"


# -- through a whole ingest -----------------------------------------------------------------------


def _record(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": f"m-{uuid}", "role": kind, "model": "claude-sonnet-4-5", "content": content}
    record = {
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SESSION, "cwd": "/home/dev/webshop",
        "timestamp": "2026-11-02T09:00:00.000Z", "message": message, **extra,
    }  # fmt: skip
    return json.dumps(record) + "\n"


def _bash(uuid: str, parent: str, call: str, command: str) -> str:
    block = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}
    return _record("assistant", uuid, parent, [block])


def _result(uuid: str, parent: str, call: str, output: str, *, error: bool) -> str:
    block = {"type": "tool_result", "tool_use_id": call, "content": output, "is_error": error}
    return _record("user", uuid, parent, [block])


def _claude(home: Path, *lines: str) -> None:
    folder = home / ".claude" / "projects" / "-home-dev-webshop"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{SESSION}.jsonl").write_text("".join(lines), encoding="utf-8")


def test_secrets_straddling_a_cut_leave_no_fragment_in_the_database(
    tmp_path: Path, cli: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = _straddling(JWT, 4000, 5000)
    output = _straddling(GITHUB, 600, 700)
    _claude(
        tmp_path,
        _record("user", "u1", None, "Run the export script."),
        _bash("a1", "u1", "t1", command),
        _result("u2", "a1", "t1", output, error=False),
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    # An extractor that keeps what it is given: whatever the importer cut reaches memories.content.
    script = tmp_path / "keep.py"
    script.write_text(
        "import json, sys\n"
        "for m in json.load(sys.stdin)['messages']:\n"
        "    for text in (m['command'], m['text']):\n"
        "        if text:\n"
        "            print(json.dumps({'content': text}))\n"
    )
    cli("config", "set", "extract.command", f"{sys.executable} {script}")
    cli("ingest", "claude-code")
    with Engram.open() as engram:
        stored = [r[0] for r in engram.store.rows("SELECT content FROM memories")]
    assert any("[REDACTED:jwt]" in c for c in stored) and any("[REDACTED:github-token]" in c for c in stored)
    data = _db_bytes(db_path)
    for fragment in _fragments(JWT) + _fragments(GITHUB):
        assert fragment not in data, fragment


def _codex(home: Path) -> None:
    folder = home / ".codex" / "sessions" / "2026" / "11" / "02"
    folder.mkdir(parents=True)

    def line(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "2026-11-02T09:00:00.000Z", "type": kind, "payload": payload}) + "\n"

    def shell(call: str, command: str) -> str:
        arguments = json.dumps({"command": ["bash", "-lc", command]})
        item = {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call}
        return line("response_item", item)

    def failed(call: str, text: str) -> str:
        return line("response_item", {"type": "function_call_output", "call_id": call, "output": text})

    ask = {"type": "input_text", "text": f"Deploy the shop with {GITHUB} and {AWS_ID} please."}
    (folder / f"rollout-2026-11-02T09-00-00-{SESSION}.jsonl").write_text(
        line("session_meta", {"id": SESSION, "cwd": "/home/dev/webshop", "timestamp": "2026-11-02T09:00:00Z"})
        + line("response_item", {"type": "message", "role": "user", "content": [ask]})
        + shell("c1", f'curl -f -H "Authorization: Bearer {ANTHROPIC}" https://api.example.com/v1/messages')
        + failed("c1", "Exit code: 22\nOutput:\ncurl: (22) The requested URL returned error: 401")
        + shell("c2", f"mysql -h db --password={PASSWORD} -e 'select 1'")
        + failed("c2", "Exit code: 1\nOutput:\nERROR 1045 (28000): Access denied"),
        encoding="utf-8",
    )


def test_secrets_in_prompts_and_failing_commands_never_reach_the_database(
    tmp_path: Path, cli: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    curl = f'curl -f -H "Authorization: Bearer {ANTHROPIC}" https://api.example.com/v1/messages'
    mysql = f"mysql -h db --password={PASSWORD} -e 'select 1'"
    _claude(
        tmp_path,
        _record("user", "u1", None, f"Deploy the shop with {GITHUB} and {AWS_ID} please. Then check the API."),
        _bash("a1", "u1", "t1", curl),
        _result("u2", "a1", "t1", "curl: (22) The requested URL returned error: 401", error=True),
        _bash("a2", "u2", "t2", mysql),
        _result("u3", "a2", "t2", "ERROR 1045 (28000): Access denied", error=True),
        json.dumps({"type": "custom-title", "customTitle": f"rotate password={PASSWORD}", "sessionId": SESSION}) + "\n",
        json.dumps({"type": "summary", "summary": f"Tried {GITHUB} against the API", "leafUuid": "u3"}) + "\n",
    )
    _codex(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    report = json.loads(cli("ingest", "--json").stdout)
    by_source = {s["source"]: s for s in report["sources"]}
    for source in ("claude-code", "codex"):
        assert by_source[source]["errors"] == []
        assert {"github-token", "aws-access-key-id", "anthropic-key", "password-assignment"} <= set(
            by_source[source]["redacted"]
        ), by_source[source]
    with Engram.open() as engram:
        digests = [r[0] for r in engram.store.rows("SELECT digest FROM ingest_sessions")]
        states = [r[0] for r in engram.store.rows("SELECT state FROM ingest_cursors")]
    # The digests still carry what they are for, redacted: the task asked and the failures waiting for a fix.
    assert all("[REDACTED:github-token]" in d and "[REDACTED:anthropic-key]" in d for d in digests), digests
    assert any("[REDACTED:password-assignment]" in s for s in states), states
    data = _db_bytes(db_path)
    for secret in (GITHUB, ANTHROPIC, AWS_ID, PASSWORD):
        assert secret.encode() not in data, secret


def test_a_shell_summary_names_programs_never_credentials(
    tmp_path: Path, cli: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = ["cd /home/dev/src/webshop"]
    commands += [f"pytest tests/test_{n}.py" for n in range(13)]
    commands += ["curl -u admin:PASSw0rdXYZ https://ci.example.com/api/json"] * 8
    commands += ["git status", "git push origin main"]
    commands += ["mysql -u root -pPASSw0rdXYZ shop"] * 7
    history = tmp_path / ".bash_history"
    history.write_text("".join(f"#{1793000000 + n * 60}\n{c}\n" for n, c in enumerate(commands)), encoding="utf-8")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("HISTFILE", raising=False)
    cli("ingest", "bash")
    with Engram.open() as engram:
        episodes = [r[0] for r in engram.store.rows("SELECT content FROM memories")]
        texts = episodes + [r[0] for r in engram.store.rows("SELECT digest FROM ingest_sessions")]
        texts += [r[0] for r in engram.store.rows("SELECT state FROM ingest_cursors")]
    assert len(episodes) == 1 and "31 commands, mostly pytest, curl, mysql" in episodes[0], episodes
    assert not any("PASS" in t or "admin:" in t or "root" in t for t in texts), texts
    data = _db_bytes(db_path)
    assert b"PASSw0rd" not in data and b"admin:" not in data


def test_contact_details_are_redacted_in_ingest_when_configured(cli: Any, tmp_path: Path, db_path: Path) -> None:
    log = tmp_path / "records.jsonl"
    log.write_text(json.dumps({"content": "Escalations go to oncall@corp-mail.io, night line +49 30 1234 5678"}) + "\n")
    cli("config", "set", "redact.contact_details", "true")
    report = json.loads(cli("ingest", "jsonl", "--path", str(log), "--json").stdout)["sources"][0]
    assert report["redacted"] == {"email": 1, "phone": 1}
    data = _db_bytes(db_path)
    assert b"oncall@corp-mail.io" not in data and b"1234 5678" not in data
