"""When it happened (occurred_at) and when engram learned it (learned_at): decay counts from the second."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.timeutil import from_iso, now

TWO_YEARS_AGO = "2024-03-04T10:00:00.000Z"
PREFERENCE = "From now on, always answer in British English."
PROJECT_FACT = "Remember that we deploy the shop with `make release` after a green CI run."
ZH_PREFERENCE = "以后回答都用中文，我习惯看中文解释。"


def _line(kind: str, uuid: str, at: str, text: str, cwd: str) -> str:
    message: dict[str, Any] = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
    if kind == "assistant":
        message["id"] = f"msg_{uuid}"
    return json.dumps(
        {"type": kind, "uuid": uuid, "sessionId": "old-1", "cwd": cwd, "timestamp": at, "message": message}
    )


@pytest.fixture
def old_log(git_repo: Any, tmp_path: Path) -> Path:
    """A Claude Code session from two years ago, held in the git repository `shop`."""
    cwd = str(git_repo("shop") / "src")
    lines = [
        _line("user", "u1", TWO_YEARS_AGO, PREFERENCE, cwd),
        _line("assistant", "a1", "2024-03-04T10:00:05.000Z", "Understood.", cwd),
        _line("user", "u2", "2024-03-04T10:01:00.000Z", PROJECT_FACT, cwd),
        _line("assistant", "a2", "2024-03-04T10:01:05.000Z", "Noted.", cwd),
        _line("user", "u3", "2024-03-04T10:02:00.000Z", ZH_PREFERENCE, cwd),
        _line("assistant", "a3", "2024-03-04T10:02:05.000Z", "好的。", cwd),
    ]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "old-1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return logs


def _age_days(iso: str) -> float:
    return (now() - from_iso(iso)).total_seconds() / 86400


def test_an_old_history_ingested_today_is_fresh_and_the_persons_part_is_global(
    cli: Any, old_log: Path, rows: Any
) -> None:
    report = json.loads(cli("ingest", "claude-code", "--path", str(old_log), "--json").stdout)
    assert report["sources"][0]["errors"] == []
    listed = json.loads(cli("list", "-A", "--json").stdout)
    said = {m["content"]: m for m in listed if m["type"] == "semantic"}
    preference, fact, chinese = said[PREFERENCE], said[PROJECT_FACT], said[ZH_PREFERENCE]
    # Only statements, each a memory of its own, and acknowledgements: no episode restates them.
    assert [m for m in listed if m["type"] == "episodic"] == []
    # The person's statements follow them into every project; the project's stays in it.
    assert (preference["namespace"], chinese["namespace"], fact["namespace"]) == ("global", "global", "shop")
    # Said two years ago, learned just now.
    assert preference["occurred_at"] == preference["created_at"] == "2024-03-04T10:00:00.000000Z"
    assert _age_days(preference["occurred_at"]) > 365 and _age_days(preference["learned_at"]) < 1

    dry = json.loads(cli("decay", "--dry-run", "--json").stdout)
    assert dry["archived"] == 0
    done = json.loads(cli("decay", "--json").stdout)
    assert done["archived"] == 0
    assert rows("SELECT count(*) FROM memories WHERE status != 'active'") == [(0,)]
    # A month from now nothing has faded either: the clock started when engram learned them.
    in_a_month = (now() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert json.loads(cli("decay", "--now", in_a_month, "--json").stdout)["archived"] == 0


def test_json_carries_when_it_happened_and_when_it_was_learned(cli: Any, engram: Engram) -> None:
    memory = json.loads(cli("add", "The office moved to Leith Walk", "--at", "2023-05-01T12:00:00Z", "--json").stdout)
    assert memory["occurred_at"] == memory["created_at"] == "2023-05-01T12:00:00.000000Z"
    assert _age_days(memory["learned_at"]) < 1
    (got,) = json.loads(cli("list", "--json").stdout)
    assert got["occurred_at"] == "2023-05-01T12:00:00.000000Z" and got["learned_at"] == memory["learned_at"]
    (hit,) = json.loads(cli("recall", "where is the office", "--json").stdout)
    assert hit["occurred_at"] == "2023-05-01T12:00:00.000000Z" and hit["learned_at"] == memory["learned_at"]
    api = engram.get(memory["id"])
    assert (api.occurred_at, api.learned_at) == (memory["occurred_at"], memory["learned_at"])
    shown = cli("inspect", memory["id"][:8]).stdout
    assert "occurred" in shown and "learned" in shown


def test_audit_counts_never_accessed_from_when_it_was_learned(engram: Engram, backdate: Any) -> None:
    old = engram.add("The staging database runs on port 5433", created_at="2023-01-01T00:00:00Z")

    def never_accessed() -> list[str]:
        (check,) = [c for c in engram.audit(quick=True).checks if c.name == "never_accessed"]
        return [e["id"] for e in check.examples]

    assert never_accessed() == []  # happened long ago, learned today
    backdate("2023-01-01T00:00:00Z", old.id)
    assert never_accessed() == [old.memory.short_id]


def test_import_keeps_the_exported_learned_at(cli: Any, tmp_path: Path, rows: Any) -> None:
    cli("add", "Deploys go through make release", "--at", "2024-01-01T00:00:00Z")
    (line,) = cli("export").stdout.splitlines()
    record = json.loads(line)
    record["learned_at"] = "2025-06-01T08:00:00.000000Z"
    other = tmp_path / "other.db"
    cli("--db", str(other), "import", "-", input=json.dumps(record) + "\n")
    (got,) = json.loads(cli("--db", str(other), "list", "-A", "--json").stdout)
    assert (got["occurred_at"], got["learned_at"]) == ("2024-01-01T00:00:00.000000Z", "2025-06-01T08:00:00.000000Z")


def test_a_line_exported_before_scopes_lands_in_global_and_is_learned_now(cli: Any, rows: Any) -> None:
    cli("add", "Deploys go through make release", "--at", "2024-01-01T00:00:00Z")
    (line,) = cli("export").stdout.splitlines()
    record = json.loads(line)
    cli("forget", record["id"], "--hard")
    # A purged id is tombstoned (an import never brings it back): the old line comes under a new id.
    record["id"] = "1" * 8 + record["id"][8:]
    for key in ("learned_at", "occurred_at"):
        del record[key]
    old = dict(record, namespace="default")
    cli("import", "-", input=json.dumps(old) + "\n")
    ((namespace, learned),) = rows("SELECT namespace, learned_at FROM memories")
    assert namespace == "global" and _age_days(learned) < 1
