"""A day in the life of engram, end to end through the command line, in a real git repository.

A preference told by hand (global), a project fact an assistant adds, a Claude Code session harvested,
the next session's card, a per-prompt recall, `decay` a day later, an edit and a keyed update: after
each step the card and the recalls say what a developer would expect, and nothing else.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

PREFERENCE = "Always answer in British English"
NODE_FACT = "The webshop's CI runs on Node 20"
SESSION_FACT = "the staging database of the webshop listens on port 5433"
SESSION_TASK = "The staging API cannot reach its database."


def _claude_session(home: Path, repo: Path) -> None:
    """One Claude Code session in ``repo``: the person states a project fact, the assistant acknowledges."""
    folder = home / ".claude" / "projects" / str(repo).replace("/", "-")
    folder.mkdir(parents=True)
    base = {"sessionId": "day-1", "cwd": str(repo), "version": "2.1.0", "gitBranch": "main"}
    lines = [
        {
            **base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2024-03-04T09:00:00.000Z",
            "message": {"role": "user", "content": f"{SESSION_TASK} Remember that {SESSION_FACT}."},
        },
        {
            **base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2024-03-04T09:00:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Noted: staging Postgres on 5433."}]},
        },
    ]  # fmt: skip
    (folder / "day-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _card(cli: Any, repo: Path, *more: str) -> str:
    text: str = cli("hooks", "context", "claude-code", "--dir", str(repo), *more).stdout
    return text


def _prompt(cli: Any, repo: Path, prompt: str) -> str:
    payload = json.dumps({"session_id": "day-2", "prompt": prompt, "cwd": str(repo / "src")})
    text: str = cli("hooks", "prompt", "claude-code", input=payload).stdout
    return text


def _block(card: str, text: str) -> str:
    """The card's header line of the memory whose text holds ``text``."""
    blocks = card.split("\n\n")
    (found,) = [b for b in blocks if text in b]
    return found.splitlines()[0]


def test_a_day_in_the_life(cli: Any, git_repo: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = git_repo("webshop")
    home = Path.home()

    # Morning, anywhere: a preference about the person goes to the global scope.
    cli("add", PREFERENCE, "-g", "-i", "0.8")
    # In the project, an assistant records a project fact (no -n: the repository decides).
    monkeypatch.chdir(repo / "src")
    added = cli("add", NODE_FACT, "--agent", "claude-code", "--json")
    fact = json.loads(added.stdout)
    assert (fact["action"], fact["namespace"], fact["agent"]) == ("created", "webshop", "claude-code")
    fact_id = fact["id"]

    # A Claude Code session from two years ago is harvested: learned today, happened then.
    _claude_session(home, repo)
    cli("ingest", "claude-code", "--quiet")
    # The fact said in the session, and an episode of the session itself.
    harvested = [m for m in json.loads(cli("list", "--json").stdout) if "5433" in m["content"]]
    assert sorted(m["type"] for m in harvested) == ["episodic", "semantic"]
    (ingested,) = [m for m in harvested if m["type"] == "semantic"]
    assert ingested["namespace"] == "webshop" and ingested["occurred_at"].startswith("2024-03-04")
    assert ingested["learned_at"][:10] == datetime.now(UTC).date().isoformat()

    # The next session's card: the person's preference and the project's memories, each with its scope.
    card = _card(cli, repo)
    assert "[scope: global]" in _block(card, PREFERENCE)
    assert "[scope: project]" in _block(card, NODE_FACT)
    assert "[scope: project]" in _block(card, "listens on port 5433.")
    assert "[scope: project]" in _block(card, SESSION_TASK)
    assert card.count("[memory #") == 4

    # A prompt about the staging database gets that memory; one about nothing stored gets nothing.
    answer = _prompt(cli, repo, "which port does the staging database use?")
    assert "5433" in answer and NODE_FACT not in answer
    assert _prompt(cli, repo, "what is the capital of France?") == ""
    hits = json.loads(cli("recall", "what Node version does CI use?", "--json").stdout)
    assert hits[0]["id"] == fact_id and hits[0]["scope"] == "project"

    # Decay the next night: nothing just learned is archived, the two-year-old session included.
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cli("decay", "--now", tomorrow)
    assert json.loads(cli("list", "-A", "--json", "--status", "archived").stdout) == []
    assert _card(cli, repo, "--now", tomorrow).count("[memory #") == 4

    # An edit: CI moved to Node 22. The card and recall say so, and the old words are gone.
    cli("edit", fact_id[:8], "--text", "The webshop's CI runs on Node 22")
    card = _card(cli, repo)
    assert "Node 22" in card and "Node 20" not in card
    top = json.loads(cli("recall", "what Node version does CI use?", "--json").stdout)[0]
    assert (top["id"], top["content"]) == (fact_id, "The webshop's CI runs on Node 22")

    # A keyed fact, updated in place: one memory, the newest value, the old one only in its history.
    cli("set", "deploy:staging", "make deploy-staging")
    cli("set", "deploy:staging", "make deploy ENV=staging")
    assert cli("get", "deploy:staging").stdout == "make deploy ENV=staging\n"
    keyed = [h for h in json.loads(cli("recall", "how do we deploy to staging?", "--json").stdout) if h.get("key")]
    assert [h["content"] for h in keyed] == ["make deploy ENV=staging"]
    card = _card(cli, repo)
    assert "make deploy ENV=staging" in card and "make deploy-staging" not in card
    assert "[key: deploy:staging]" in card
    history = cli("history", keyed[0]["id"][:8]).stdout
    assert "make deploy-staging" in history
