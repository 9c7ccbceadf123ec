"""The session card: no query; importance x decay x recency over the project and the global scope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.memory import cards
from engram_cli.project import Scope

NOW = "2026-11-20T00:00:00Z"
MOMENT = datetime(2026, 11, 20, tzinfo=UTC)
HALF_LIVES = {"working": 2.0, "episodic": 30.0, "procedural": 90.0, "semantic": 180.0}
PERSONAL = [
    "Answer in British English",
    "I prefer tabs over spaces",
    "Keep commit messages under 72 characters",
    "Use pnpm, never npm",
    "我习惯用 vim 写代码",
    "Explain regular expressions step by step",
]
PROJECT = [
    "The gateway listens on port 8443",
    "Invoices are rendered with WeasyPrint",
    "Staging deploys from the release branch",
    "The search index rebuilds every night at 02:00",
    "Payments go through the Adyen sandbox in tests",
    "Feature flags live in config/flags.yaml",
]


def _in(engram: Engram, project: str) -> Engram:
    return engram.scoped(Scope(project))


def test_strength_is_importance_times_decay_times_recency(engram: Engram, backdate: Any) -> None:
    fresh = engram.add("The API gateway runs on port 8443", namespace="shop", importance=0.5, created_at=NOW)
    old_fact = engram.add(
        "Releases are tagged vX.Y.Z", namespace="shop", importance=0.5, created_at="2026-05-24T00:00:00Z"
    )
    old_episode = engram.add(
        "Debugged the flaky checkout test all afternoon", namespace="shop", type="episodic",
        created_at="2026-10-21T00:00:00Z",
    )  # fmt: skip
    backdate(NOW, fresh.id)
    backdate("2026-05-24T00:00:00Z", old_fact.id)
    backdate("2026-10-21T00:00:00Z", old_episode.id)
    entries = {e.memory.id: e for e in _in(engram, "shop").card(8, now=NOW)}

    assert entries[fresh.id].factors == {"importance": 0.5, "decay": 1.0, "recency": 1.0}
    # 180 days: a fact's decay halves once; its recency stops at the fact floor of 0.6.
    assert entries[old_fact.id].factors["decay"] == pytest.approx(0.5, abs=1e-3)
    assert entries[old_fact.id].factors["recency"] == pytest.approx(0.6)
    # 30 days: an episode's decay and recency both halve.
    assert entries[old_episode.id].factors["decay"] == pytest.approx(0.5, abs=1e-3)
    assert entries[old_episode.id].factors["recency"] == pytest.approx(0.5, abs=1e-3)
    for entry in entries.values():
        f = entry.factors
        assert entry.strength == pytest.approx(f["importance"] * f["decay"] * f["recency"])
    assert _in(engram, "shop").card(8, now=NOW)[0].memory.id == fresh.id


def test_the_card_reads_the_project_and_global_but_no_other_project(engram: Engram) -> None:
    mine = engram.add("Deploys go through make release", namespace="shop").memory
    person = engram.add("Answer in British English", namespace="global", importance=0.8).memory
    engram.add("Billing invoices are generated nightly", namespace="billing", importance=1.0)
    entries = _in(engram, "shop").card(8)
    assert {e.memory.id: e.scope for e in entries} == {person.id: "global", mine.id: "project"}
    assert all(e.relevance is None for e in entries)  # no question chose them


def test_global_holds_at_most_half_the_places_while_the_project_can_fill_them(engram: Engram) -> None:
    for text in PERSONAL:
        engram.add(text, namespace="global", importance=0.9, no_merge=True)
    for text in PROJECT:
        engram.add(text, namespace="shop", importance=0.4, no_merge=True)
    entries = _in(engram, "shop").card(4)
    assert [e.scope for e in entries].count("global") == 2 and len(entries) == 4
    # A project with too little to fill its half leaves the places to the global scope.
    lone = _in(engram, "empty-project").card(4)
    assert [e.scope for e in lone] == ["global"] * 4


def test_near_copies_appear_once_and_faded_memories_not_at_all(engram: Engram, backdate: Any) -> None:
    kept = engram.add("The staging database runs Postgres 16 on port 5433", namespace="shop", importance=0.7)
    engram.add("the staging database runs postgres 16 on port 5433 !", namespace="shop", no_merge=True)
    faded = engram.add("Looked at the flaky upload test", namespace="shop", type="episodic")
    backdate("2025-01-01T00:00:00Z", faded.id)
    ids = [e.memory.id for e in _in(engram, "shop").card(8)]
    assert ids == [kept.id]


def test_reading_the_card_is_not_an_access(engram: Engram, rows: Any) -> None:
    engram.add("Deploys go through make release", namespace="shop")
    assert _in(engram, "shop").card(8)
    assert rows("SELECT access_count, last_access_at FROM memories") == [(0, None)]
    assert rows("SELECT count(*) FROM events WHERE kind = 'accessed'") == [(0,)]


def test_a_long_memory_that_does_not_fit_the_budget_makes_way_for_a_short_one(
    cli: Any, git_repo: Any, tmp_path: Path
) -> None:
    shop = git_repo("shop")
    cli("add", "Deploy notes: " + "make release and then wait for the canary " * 40, "-n", "shop", "-i", "0.9")
    cli("add", "CI runs on Node 22", "-n", "shop", "-i", "0.5")
    card = cli("hooks", "context", "claude-code", "--dir", str(shop), "--budget", "120").stdout
    assert "CI runs on Node 22" in card and "canary" not in card


def test_session_card_orders_by_strength_not_by_text(engram: Engram) -> None:
    """A memory that merely names the project loses to a stronger one (the old card queried the name)."""
    named = engram.add("shop shop shop: the shop project", namespace="shop", importance=0.2).memory
    strong = engram.add("Never push to main directly; open a pull request", namespace="shop", importance=0.9).memory
    assert [e.memory.id for e in _in(engram, "shop").card(2)] == [strong.id, named.id]


def test_strength_uses_the_type_half_life(engram: Engram) -> None:
    memory = engram.add("Scratch: trying the new linter config", namespace="shop", type="working").memory
    learned = datetime.fromisoformat(memory.learned_at.replace("Z", "+00:00"))
    two_days = cards.strength(memory, learned.replace(microsecond=0) + timedelta(days=2), HALF_LIVES)[1]
    assert two_days["decay"] == pytest.approx(0.5, abs=1e-3)  # a working memory's half-life is 2 days
    assert cards.strength(memory, MOMENT.replace(year=2027), HALF_LIVES)[1]["decay"] == pytest.approx(0.08)
