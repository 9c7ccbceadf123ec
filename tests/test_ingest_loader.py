"""engram ingest end to end: incremental, idempotent, interrupt-safe, redacted, with provenance."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.ingest import loader

SAMPLES = Path(__file__).resolve().parent / "fixtures" / "agent-logs"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _line(kind: str, uuid: str, at: str, content: Any, cwd: str, session: str = "s-1") -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = f"msg_{uuid}"
    return json.dumps(
        {"type": kind, "uuid": uuid, "sessionId": session, "cwd": cwd, "timestamp": at, "message": message}
    )


def _session(cwd: str) -> list[str]:
    return [
        _line("user", "u1", "2026-11-02T09:00:00.000Z", "Remember that we always deploy with `make release`.", cwd),
        _line("assistant", "a1", "2026-11-02T09:00:05.000Z", [{"type": "text", "text": "Noted."}], cwd),
        _line(
            "user",
            "u2",
            "2026-11-02T09:01:00.000Z",
            f"Remember that the staging key is aws_secret_access_key = {AWS_SECRET} for deploys.",
            cwd,
        ),
        _line("assistant", "a2", "2026-11-02T09:01:05.000Z", [{"type": "text", "text": "I will use it."}], cwd),
    ]


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home with one Claude Code project whose cwd is a git repository called webshop."""
    home = tmp_path / "home"
    repo = tmp_path / "src" / "webshop"
    (repo / ".git").mkdir(parents=True)
    (repo / "api").mkdir()
    project = home / ".claude" / "projects" / "-src-webshop-api"
    project.mkdir(parents=True)
    (project / "s-1.jsonl").write_text("\n".join(_session(str(repo / "api"))) + "\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "HISTFILE", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    return home


def _transcript(home: Path) -> Path:
    return home / ".claude" / "projects" / "-src-webshop-api" / "s-1.jsonl"


def _state(rows: Any) -> list[tuple[Any, ...]]:
    return rows(
        "SELECT namespace, agent_id, memory_type, content, importance, status, version FROM memories ORDER BY content"
    ) + rows("SELECT source, session_key, item_key, content_hash FROM ingest_items ORDER BY item_key")


def test_ingest_stores_memories_with_project_namespace_and_provenance(
    cli: Any, claude_home: Path, rows: Any, engram: Engram
) -> None:
    result = cli("ingest", "claude-code")
    assert "claude-code: 1 file(s), 1 changed" in result.stdout
    stored = rows("SELECT namespace, agent_id, memory_type, content FROM memories")
    assert {r[0] for r in stored} == {"webshop"} and {r[1] for r in stored} == {"claude-code"}
    remember = [r for r in stored if "make release" in r[3] and r[2] == "semantic"]
    assert remember, stored
    sources = rows(
        "SELECT s.kind, s.ref, s.message_id, s.session_id FROM sources s JOIN memories m ON m.pk = s.memory_pk "
        "WHERE m.content = ?",
        (remember[0][3],),
    )
    assert sources == [("claude-code", str(_transcript(claude_home)), "u1", "s-1")]


def test_secrets_never_reach_the_database(cli: Any, claude_home: Path, db_path: Path, engram: Engram) -> None:
    engram.close()
    cli("ingest", "claude-code")
    store = Engram.open()
    store.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    store.close()
    data = b"".join(p.read_bytes() for p in db_path.parent.glob("engram.db*"))
    assert AWS_SECRET.encode() not in data
    assert b"[REDACTED:aws-secret-key]" in data


def test_a_second_run_adds_nothing(cli: Any, claude_home: Path, rows: Any) -> None:
    cli("ingest")
    before = _state(rows) + rows("SELECT count(*) FROM events")
    second = cli("ingest")
    assert second.stdout == ""
    assert _state(rows) + rows("SELECT count(*) FROM events") == before


def test_appended_lines_add_only_what_is_new(cli: Any, claude_home: Path, rows: Any) -> None:
    cli("ingest", "claude-code")
    first = {r[0]: r[1] for r in rows("SELECT item_key, memory_id FROM ingest_items")}
    cwd = str(claude_home.parent / "src" / "webshop" / "api")
    more = [
        _line("user", "u3", "2026-11-02T10:00:00.000Z", "From now on I prefer pnpm over npm in this repo.", cwd),
        _line("assistant", "a3", "2026-11-02T10:00:04.000Z", [{"type": "text", "text": "Switched to pnpm."}], cwd),
    ]
    with _transcript(claude_home).open("a", encoding="utf-8") as fh:
        fh.write("\n".join(more) + "\n")
    cli("ingest", "claude-code")
    after = {r[0]: r[1] for r in rows("SELECT item_key, memory_id FROM ingest_items")}
    assert set(first) < set(after)
    assert all(after[k] == v for k, v in first.items())  # nothing old was stored again under a new id
    assert any("pnpm" in r[0] for r in rows("SELECT content FROM memories WHERE memory_type = 'semantic'"))


def test_a_partial_last_line_waits_for_its_end(cli: Any, claude_home: Path, rows: Any) -> None:
    cwd = str(claude_home.parent / "src" / "webshop" / "api")
    half = _line("user", "u9", "2026-11-02T11:00:00.000Z", "Remember that the cache TTL is 300 seconds.", cwd)
    with _transcript(claude_home).open("a", encoding="utf-8") as fh:
        fh.write(half[:40])
    cli("ingest", "claude-code")
    assert not any("TTL" in r[0] for r in rows("SELECT content FROM memories"))
    with _transcript(claude_home).open("a", encoding="utf-8") as fh:
        fh.write(half[40:] + "\n")
    cli("ingest", "claude-code")
    assert any("TTL" in r[0] for r in rows("SELECT content FROM memories"))


def test_an_interrupted_run_finishes_on_the_next(
    cli: Any, claude_home: Path, rows: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A clean run into another database is the reference.
    reference = tmp_path / "reference.db"
    cli("--db", str(reference), "ingest")
    expected = [r[:6] for r in _state(lambda sql, p=(): _rows_of(reference, sql, p))]

    real_save = loader.save_cursor

    def crash(*args: Any) -> None:
        raise PowerCut("power cut")  # as if the process died just before the commit

    monkeypatch.setattr(loader, "save_cursor", crash)
    with pytest.raises(PowerCut, match="power cut"):
        cli("ingest")
    assert rows("SELECT count(*) FROM memories") == [(0,)]  # the file's transaction rolled back
    monkeypatch.setattr(loader, "save_cursor", real_save)
    cli("ingest")
    assert [r[:6] for r in _state(rows)] == expected


class PowerCut(BaseException):
    """The process dying mid-write. Not an Exception: an error in one file is reported and the run goes on."""


def _rows_of(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    from engram_cli.store import connect

    store = connect(db)
    try:
        return [tuple(r) for r in store.rows(sql, params)]
    finally:
        store.close()


def test_dry_run_stores_nothing(cli: Any, claude_home: Path, rows: Any) -> None:
    result = cli("ingest", "--dry-run")
    assert "would store semantic" in result.stdout and "make release" in result.stdout
    assert AWS_SECRET not in result.stdout
    assert rows("SELECT count(*) FROM memories") == [(0,)]
    assert rows("SELECT count(*) FROM ingest_cursors") == [(0,)]


def test_list_shows_what_is_new(cli: Any, claude_home: Path) -> None:
    listed = json.loads(cli("ingest", "--list", "--json").stdout)
    claude = next(r for r in listed if r["source"] == "claude-code")
    assert claude["files"] == 1 and claude["new"] == 1
    cli("ingest")
    listed = json.loads(cli("ingest", "--list", "--json").stdout)
    claude = next(r for r in listed if r["source"] == "claude-code")
    assert claude["new"] == 0 and claude["changed"] == 0 and claude["memories"] > 0


def test_path_and_source_errors_say_what_to_do(cli: Any, claude_home: Path, tmp_path: Path) -> None:
    unknown = cli("ingest", "vim", ok=False)
    assert unknown.exit_code == 2 and "the sources are:" in unknown.stderr
    missing = cli("ingest", "aider", "--path", str(tmp_path / "nope"), ok=False)
    assert missing.exit_code == 1 and "does not exist" in missing.stderr
    no_source = cli("ingest", "--path", str(tmp_path), ok=False)
    assert no_source.exit_code == 2 and "--path needs a source" in no_source.stderr


def test_real_logs_of_every_sample_ingest_without_errors(cli: Any, tmp_path: Path, rows: Any) -> None:
    """Each public sample goes through the whole path: parse, extract, redact, write."""
    cases = {
        "claude-code": SAMPLES / "claude-code",
        "codex": SAMPLES / "codex",
        "gemini-cli": SAMPLES / "gemini-cli",
        "aider": SAMPLES / "aider",
        "roo-code": SAMPLES / "roo-code",
        "copilot-cli": SAMPLES / "copilot-cli",
    }
    for source, path in cases.items():
        copy = tmp_path / source
        shutil.copytree(path, copy)
        result = cli("ingest", source, "--path", str(copy), "--json")
        report = json.loads(result.stdout)
        assert report["sources"][0]["errors"] == [], (source, report)
    assert rows("SELECT count(*) FROM memories")[0][0] > 0
    again = [json.loads(cli("ingest", s, "--path", str(tmp_path / s), "--json").stdout) for s in cases]
    assert all(r["sources"][0]["created"] == 0 for r in again)


def test_extract_command_replaces_the_built_in_rules(cli: Any, claude_home: Path, rows: Any, tmp_path: Path) -> None:
    script = tmp_path / "extract.py"
    script.write_text(
        "import json, sys\n"
        "session = json.load(sys.stdin)\n"
        "users = [m['text'] for m in session['messages'] if m['role'] == 'user']\n"
        "print(json.dumps({'content': 'first ask: ' + users[0], 'type': 'episodic', 'importance': 0.3}))\n",
        encoding="utf-8",
    )
    cli("config", "set", "extract.command", f"{sys.executable} {script}")
    cli("ingest", "claude-code")
    assert [r[0] for r in rows("SELECT content FROM memories")] == [
        "first ask: Remember that we always deploy with `make release`."
    ]


def test_hooks_can_bound_the_time(cli: Any, claude_home: Path) -> None:
    report = json.loads(cli("ingest", "--max-seconds", "0", "--json").stdout)
    assert report["stopped_early"] is True


def test_engram_ingest_runs_as_a_process(claude_home: Path, engram_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engram_cli", "ingest", "--quiet"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**__import__("os").environ, "HOME": str(claude_home), "ENGRAM_HOME": str(engram_home)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_killed_mid_run_then_rerun_equals_one_clean_run(
    claude_home: Path, engram_home: Path, tmp_path: Path, rows: Any
) -> None:
    import os
    import signal
    import time

    project = _transcript(claude_home).parent
    cwd = str(claude_home.parent / "src" / "webshop" / "api")
    files = 48  # enough that writing the ones after the third outlasts the poll and the kill
    for n in range(files):
        key, at = f"s-{n + 2}", f"2026-11-03T0{n % 10}:00"
        lines = [
            _line("user", f"q{n}", f"{at}:00.000Z", f"Remember that service {n} listens on port {8000 + n}.", cwd, key),
            _line("assistant", f"r{n}", f"{at}:09.000Z", [{"type": "text", "text": f"Noted, {8000 + n}."}], cwd, key),
        ]
        (project / f"s-{n + 2}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "HOME": str(claude_home)}
    reference = tmp_path / "reference.db"
    subprocess.run([sys.executable, "-m", "engram_cli", "--db", str(reference), "ingest", "--quiet"], env=env,
                   check=True, timeout=300)  # fmt: skip
    expected = [r[:6] for r in _state(lambda sql, p=(): _rows_of(reference, sql, p))]

    env["ENGRAM_HOME"] = str(engram_home)
    proc = subprocess.Popen([sys.executable, "-m", "engram_cli", "ingest", "--quiet"], env=env)
    db = engram_home / "engram.db"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists() and _rows_of(db, "SELECT count(*) FROM ingest_cursors")[0][0] >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    partial = _rows_of(db, "SELECT count(*) FROM ingest_cursors")[0][0]
    assert 0 < partial < files + 1, "the kill should land mid-run"
    subprocess.run([sys.executable, "-m", "engram_cli", "ingest", "--quiet"], env=env, check=True, timeout=300)
    assert [r[:6] for r in _state(rows)] == expected


def test_every_secret_kind_planted_in_logs_is_absent_from_the_db_bytes(
    cli: Any, tmp_path: Path, db_path: Path, rows: Any
) -> None:
    from test_redact import POSITIVE

    from engram_cli.lang.redact import KINDS

    log = tmp_path / "planted.jsonl"
    log.write_text(
        "".join(
            json.dumps({"content": f"Remember for the {kind} rotation: {text}", "tags": ["ops"]}) + "\n"
            for kind, text, _ in POSITIVE
        ),
        encoding="utf-8",
    )
    report = json.loads(cli("ingest", "jsonl", "--path", str(log), "--json").stdout)["sources"][0]
    assert set(report["redacted"]) == set(KINDS)
    assert rows("SELECT count(*) FROM memories")[0][0] == len(POSITIVE)
    store = Engram.open()
    store.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    store.close()
    data = b"".join(p.read_bytes() for p in db_path.parent.glob("engram.db*"))
    for kind, _, secret in POSITIVE:
        assert secret.encode() not in data, kind
        assert f"[REDACTED:{kind}]".encode() in data


def test_a_file_nested_too_deep_is_skipped_and_the_rest_ingested(cli: Any, tmp_path: Path, rows: Any) -> None:
    folder = tmp_path / "records"
    folder.mkdir()
    deep = folder / "deep.jsonl"
    deep.write_text('{"content": "x", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    fine = folder / "fine.jsonl"
    fine.write_text(json.dumps({"content": "Deploys go through make release"}) + "\n", encoding="utf-8")
    for path in (deep, fine):
        report = json.loads(cli("ingest", "jsonl", "--path", str(path), "--json").stdout)["sources"][0]
        assert report["errors"] == []
    assert rows("SELECT content FROM memories") == [("Deploys go through make release",)]
