"""The `engram` command end to end (Typer's runner), asserting on the rows it leaves behind."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import typer.main

from engram_cli.cli import app
from engram_cli.render import CARD_FOOTER, CARD_HEADER


def test_add_then_recall(cli: Any, rows: Any) -> None:
    added = cli("add", "The staging database runs on port 5433", "-t", "ops", "--importance", "0.8")
    memory_id = added.stdout.strip()
    assert len(memory_id) == 36
    assert rows("SELECT id, importance FROM memories") == [(memory_id, 0.8)]
    assert rows("SELECT tag FROM tags") == [("ops",)]
    result = cli("recall", "which port does staging use", "--json")
    hits = json.loads(result.stdout)
    assert hits[0]["id"] == memory_id and hits[0]["score"] > 0
    assert rows("SELECT access_count FROM memories") == [(1,)]


def test_add_reports_a_merge(cli: Any, rows: Any) -> None:
    first = cli("add", "The staging database runs on port 5433").stdout.strip()
    second = cli("add", "The staging database runs on port 5433.")
    assert second.stdout.strip() == first
    assert "merged into existing memory" in second.stderr
    assert rows("SELECT count(*) FROM memories") == [(1,)]
    as_json = json.loads(cli("add", "the staging database runs on port 5433", "--json").stdout)
    assert as_json["action"] == "duplicate" and as_json["id"] == first


def test_add_all_options(cli: Any, rows: Any) -> None:
    out = cli(
        "add", "Fixed the flaky login test by waiting for the session cookie", "--type", "episodic",
        "-n", "webapp", "--agent", "claude-code", "-t", "tests", "-t", "auth", "--source", "notes.md:12",
        "--session", "s-42", "--at", "2026-03-01T10:00:00+02:00", "--meta", "ticket=WEB-9", "--meta", "pr=311",
        "--json",
    )  # fmt: skip
    data = json.loads(out.stdout)
    assert data["type"] == "episodic" and data["namespace"] == "webapp" and data["agent"] == "claude-code"
    assert data["tags"] == ["auth", "tests"] and data["metadata"] == {"ticket": "WEB-9", "pr": "311"}
    assert data["created_at"] == "2026-03-01T08:00:00.000000Z"
    assert data["sources"][0]["ref"] == "notes.md:12" and data["session"] == "s-42"
    assert rows("SELECT namespace, agent_id, session_id FROM memories") == [("webapp", "claude-code", "s-42")]


def test_add_from_stdin(cli: Any, rows: Any) -> None:
    cli("add", "-", input="用户习惯用邮件发送周报\n".encode())
    assert rows("SELECT content FROM memories") == [("用户习惯用邮件发送周报",)]


def test_stdin_that_is_not_utf8_is_repaired_not_refused(cli: Any, rows: Any) -> None:
    # Invalid UTF-8 used to be an error; the issue asks for it to be replaced, never fatal.
    result = cli("add", "-", input=b"caf\xe9 au lait\n")
    assert "1 byte sequence(s) that are not UTF-8" in result.stderr
    assert rows("SELECT content FROM memories") == [("caf\ufffd au lait",)]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["add", ""], None, "empty"),
        (["add", "x", "--type", "dream"], None, "unknown memory type"),
        (["add", "x", "--importance", "1.5"], None, "between 0 and 1"),
        (["add", "x", "--at", "yesterday-ish"], None, "cannot read"),
        (["add", "x", "--meta", "novalue"], None, "KEY=VALUE"),
    ],
)
def test_bad_input_gives_a_clear_error_and_changes_nothing(
    cli: Any, db_path: Path, args: list[str], stdin: bytes | None, message: str
) -> None:
    cli("add", "An existing memory that must survive")
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    result = cli(*args, input=stdin, ok=False)
    assert result.exit_code in (1, 2)
    assert "Error:" in result.stderr and message in result.stderr
    assert result.stdout == ""
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before


def test_db_in_missing_directory(cli: Any, tmp_path: Path) -> None:
    result = cli("--db", str(tmp_path / "missing" / "e.db"), "add", "hello", ok=False)
    assert result.exit_code == 1
    assert "does not exist" in result.stderr and "Hint:" in result.stderr
    assert not (tmp_path / "missing").exists()


def test_db_that_is_not_sqlite(cli: Any, tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00\x01 definitely not sqlite " * 50)
    before = junk.read_bytes()
    result = cli("--db", str(junk), "recall", "anything", ok=False)
    assert result.exit_code == 1 and "not an engram database" in result.stderr
    assert junk.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [["recall", "x", "--nonsense"], ["recall", "x", "-k", "0"], ["recall", "x", "--format", "yaml"],
     ["list", "--limit", "0"], ["add"]],
)  # fmt: skip
def test_wrong_flags_are_usage_errors(cli: Any, args: list[str], db_path: Path) -> None:
    result = cli(*args, ok=False)
    assert result.exit_code == 2
    assert not db_path.exists()


def test_recall_formats(cli: Any) -> None:
    cli("add", "Deploys go through make release", "--importance", "0.9")
    cli("add", "用户喜欢用 pnpm 管理依赖")
    table = cli("recall", "how do we deploy")
    assert "make release" in table.stdout  # counts as an access; the card shows the stored count after its own
    card = cli("recall", "how do we deploy", "--format", "card", "-k", "1").stdout
    lines = card.strip().splitlines()
    assert lines[0] == CARD_HEADER and lines[-1] == CARD_FOOTER
    assert any(
        line.startswith("[memory #") and "[type: semantic][importance: 0.9][accessed: 2]" in line for line in lines
    )
    md = cli("recall", "pnpm", "--format", "markdown").stdout
    assert md.startswith("# Memories") and "pnpm" in md


def test_card_budget_stops_before_overflow(cli: Any) -> None:
    for i in range(6):
        cli("add", f"Service number {i} is deployed to the cluster named orbit-{i} every night", "--no-merge")
    full = cli("recall", "service cluster", "--format", "card", "-k", "6").stdout
    small = cli("recall", "service cluster", "--format", "card", "-k", "6", "--budget", "140").stdout
    assert full.count("[memory #") == 6
    assert 0 < small.count("[memory #") < 6
    from engram_cli.lang.text import estimate_tokens

    assert estimate_tokens(small) <= 140 + 2  # newlines between blocks are not counted as tokens
    none = cli("recall", "service cluster", "--format", "card", "--budget", "5").stdout
    assert none == ""


def test_explain_shows_every_factor(cli: Any) -> None:
    cli("add", "Deploys go through make release")
    hit = json.loads(cli("recall", "deploy", "--json", "--explain").stdout)[0]
    explain = hit["explain"]
    for key in ("vector", "keyword", "relevance", "importance", "importance_factor", "decay_score", "score", "formula"):
        assert key in explain
    assert explain["vector"]["cosine"] > 0


def test_inspect_list_forget(cli: Any, rows: Any) -> None:
    memory_id = cli("add", "Deploys go through make release", "-t", "ops").stdout.strip()
    cli("add", "Deploys go through make release!", "--meta", "via=chat")
    shown = json.loads(cli("inspect", memory_id[:8], "--json").stdout)
    assert shown["id"] == memory_id
    assert [e["kind"] for e in shown["history"]] == ["created", "merged"]
    assert shown["score_factors"]["importance_factor"] == pytest.approx(0.6 + shown["importance"])
    text = cli("inspect", memory_id[:8]).stdout
    assert "history" in text and "sources" in text and "merged" in text
    listed = json.loads(cli("list", "--json").stdout)
    assert [m["id"] for m in listed] == [memory_id]
    assert cli("forget", memory_id[:8]).stdout.split() == [memory_id, "archived"]
    assert json.loads(cli("list", "--json").stdout) == []
    assert len(json.loads(cli("list", "--include-archived", "--json").stdout)) == 1
    cli("forget", memory_id, "--hard")
    assert rows("SELECT count(*) FROM memories") == [(0,)]
    assert rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk DESC LIMIT 1", (memory_id,)) == [("deleted",)]


def test_namespaces_from_flag_and_all(cli: Any) -> None:
    cli("add", "alpha uses Helm", "-n", "alpha")
    cli("add", "beta uses Terraform", "-n", "beta")
    assert json.loads(cli("recall", "uses", "-n", "alpha", "--json").stdout)[0]["namespace"] == "alpha"
    both = json.loads(cli("recall", "uses", "--all-namespaces", "--json").stdout)
    assert {h["namespace"] for h in both} == {"alpha", "beta"}
    assert json.loads(cli("recall", "uses", "--json").stdout) == []
    assert cli("recall", "x", "-n", "a", "--all-namespaces", ok=False).exit_code == 2


def test_models_lists_the_active_one(cli: Any) -> None:
    models = json.loads(cli("models", "--json").stdout)
    ids = {m["id"] for m in models}
    assert "multilingual-e5-small-q4-v1" in ids
    assert [m["id"] for m in models if m["active"]] == ["multilingual-e5-small-q4-v1"]


def test_doctor_passes_on_a_healthy_install(cli: Any) -> None:
    cli("add", "something to check")
    checks = json.loads(cli("doctor", "--json").stdout)
    assert all(c["status"] != "fail" for c in checks), checks
    assert {"sqlite-vec", "database", "embedding"} <= {c["check"] for c in checks}


def test_doctor_flags_a_broken_database(cli: Any, tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"garbage" * 100)
    result = cli("--db", str(junk), "doctor", ok=False)
    assert result.exit_code == 1 and "FAIL" in result.stdout and "not an engram database" in result.stdout


def test_config_commands(cli: Any, engram_home: Path) -> None:
    assert cli("config", "path").stdout.strip() == str(engram_home / "config.toml")
    cli("config", "set", "namespace", "work")
    shown = json.loads(cli("config", "show", "--json").stdout)
    assert shown["namespace"] == {"value": "work", "from": str(engram_home / "config.toml")}
    assert shown["recall.k"]["from"] == "default"
    memory = json.loads(cli("add", "configured namespace", "--json").stdout)
    assert memory["namespace"] == "work"
    assert cli("config", "set", "recall.k", "lots", ok=False).exit_code == 1


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in group.commands.items():
        out.append((*prefix, name))
        if hasattr(command, "commands"):
            out.extend(_commands(command, (*prefix, name)))
    return out


@pytest.mark.parametrize("path", _commands(typer.main.get_command(app)))
def test_every_command_has_help(cli: Any, path: tuple[str, ...]) -> None:
    result = cli(*path, "--help")
    assert "Usage:" in result.stdout
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    assert command.help or command.short_help


def test_no_telemetry_is_recorded(tmp_path: Path) -> None:
    """onnxruntime's wheels queue usage events (and a device id) for upload unless engram turns that off."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), ENGRAM_HOME=str(tmp_path / "engram"))
    code = "from engram_cli.cli import main; main()"
    for args in (["add", "nothing leaves the machine"], ["recall", "machine"]):
        done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert not (home / ".cache" / "Microsoft").exists()
    assert sorted(p.name for p in home.rglob("*")) == []


def test_a_broken_config_never_stops_a_command(cli: Any, engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    config_file = engram_home / "config.toml"
    config_file.write_text("colour = 'blue'\n[recall]\nk = 'many'\n", encoding="utf-8")
    shown = cli("config", "show")
    assert "recall.k = 5\t# default" in shown.stdout
    assert "unknown setting 'colour'" in shown.stderr and str(config_file) in shown.stderr
    assert "recall.k takes a whole number" in shown.stderr
    added = cli("add", "Deploys go through make release")
    assert added.stderr.count("unknown setting 'colour'") == 1  # once per command
    assert cli("config", "unset", "colour").stdout.strip() == "colour = default"
    cli("config", "unset", "recall.k")
    assert cli("config", "show").stderr == ""
    config_file.write_text("recall = [", encoding="utf-8")
    assert "not valid TOML" in cli("recall", "deploy").stderr
    refused = cli("config", "set", "recall.k", "8", ok=False)
    assert refused.exit_code == 1 and "not valid TOML" in refused.stderr
    assert config_file.read_text(encoding="utf-8") == "recall = ["


def test_recall_reads_the_query_from_stdin_for_a_dash(cli: Any) -> None:
    memory_id = cli("add", "The staging database runs on port 5433").stdout.strip()
    hits = json.loads(cli("recall", "-", "--json", input="which port does staging use?\n").stdout)
    assert [h["id"] for h in hits] == [memory_id]
    repaired = cli("recall", "-", "--json", input=b"which port does staging use\xff?\n")
    assert "not UTF-8" in repaired.stderr and [h["id"] for h in json.loads(repaired.stdout)] == [memory_id]


def test_list_says_when_more_match_than_it_shows(cli: Any) -> None:
    for text in ("alpha uses Helm", "beta uses Terraform", "gamma uses Pulumi"):
        cli("add", text)
    page = cli("list", "-l", "2", "--json")
    assert len(json.loads(page.stdout)) == 2  # stdout stays the plain JSON list
    assert page.stderr.startswith("2 of 3 shown;") and "--offset 2" in page.stderr
    assert "2 of 3 shown" in cli("list", "-l", "2").stderr
    assert cli("list", "-l", "1", "--offset", "1").stderr.startswith("2 of 3 shown;")
    assert cli("list", "-l", "3").stderr == ""
    assert cli("list", "-l", "2", "--offset", "2").stderr == ""  # a short page is the end


def test_export_dash_is_standard_output(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli("add", "Deploys go through make release")
    result = cli("export", "-")
    assert json.loads(result.stdout)["content"] == "Deploys go through make release"
    assert not (tmp_path / "-").exists()


def test_export_file_is_private_whatever_the_umask(cli: Any, tmp_path: Path) -> None:
    cli("add", "Deploys go through make release")
    old = os.umask(0)
    try:
        cli("export", str(tmp_path / "dump.jsonl"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "dump.jsonl").stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.jsonl", "engram-home"]


def test_a_failed_export_leaves_the_old_file_and_no_temporary(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram_cli.errors import StoreError
    from engram_cli.memory import transfer

    cli("add", "Deploys go through make release")
    cli("add", "alpha uses Helm")
    target = tmp_path / "out" / "dump.jsonl"
    target.parent.mkdir()
    target.write_text("the previous export\n", encoding="utf-8")
    real = transfer.export

    def fails_half_way(*args: Any, **kwargs: Any) -> Any:
        rows = real(*args, **kwargs)
        try:
            yield next(rows)
            raise StoreError("disk I/O error")
        finally:
            rows.close()

    monkeypatch.setattr(transfer, "export", fails_half_way)
    result = cli("export", str(target), ok=False)
    assert result.exit_code == 1 and "disk I/O error" in result.stderr
    assert [p.name for p in target.parent.iterdir()] == ["dump.jsonl"]
    assert target.read_text(encoding="utf-8") == "the previous export\n"
    missing = cli("export", str(tmp_path / "nowhere" / "dump.jsonl"), ok=False)
    assert missing.exit_code == 1 and "cannot write" in missing.stderr and "Hint:" in missing.stderr


def test_export_into_a_fifo_keeps_the_fifo(cli: Any, tmp_path: Path) -> None:
    cli("add", "Deploys go through make release")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader first, so opening to write does not block
    try:
        cli("export", str(fifo))
        data = os.read(reader, 65536)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(data)["content"] == "Deploys go through make release"


def test_no_network_connection_is_ever_attempted(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def refuse(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError("network use is not allowed in engram")
        real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: attempts.append(a) or [])
    log = tmp_path / "records.jsonl"
    log.write_text(json.dumps({"content": "Deploys go through make release"}) + "\n")
    cli("add", "The staging database runs on port 5433")
    cli("recall", "which port does staging use")
    cli("ingest", "jsonl", "--path", str(log))
    cli("compact")
    cli("audit", "--fix")
    cli("export", str(tmp_path / "out.jsonl"))
    cli("doctor", ok=False)
    assert attempts == []
