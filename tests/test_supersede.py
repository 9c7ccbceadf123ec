"""Supersession: a correction replaces what it corrects, explicitly or by its change marker."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.memory.similarity import supersedes


def test_explicit_supersedes(engram: Engram, rows: Any) -> None:
    old = engram.add("The API is deployed with Capistrano", importance=0.6)
    new = engram.add("The API is deployed with Kamal", supersedes=old.id[:8])
    assert new.superseded == [old.id]
    replaced = engram.get(old.id)
    assert replaced.status == "superseded" and replaced.superseded_by == new.id
    assert replaced.importance == pytest.approx(0.3)
    assert engram.get(new.id).importance >= 0.8
    kinds = [r[0] for r in rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk", (old.id,))]
    assert kinds == ["created", "superseded"]


@pytest.mark.parametrize(
    ("before", "after", "query"),
    [
        (
            "Send the weekly report by email",
            "From now on send the weekly report via WeCom instead of email",
            "how do I send the weekly report",
        ),
        ("用户习惯用邮件发送报告", "以后用企业微信发报告，不用邮件了", "怎么发报告"),
    ],
)
def test_change_marker_supersedes_and_recall_follows(engram: Engram, before: str, after: str, query: str) -> None:
    old = engram.add(before)
    new = engram.add(after)
    assert new.action == "created" and new.superseded == [old.id]
    hits = engram.recall(query, k=5)
    assert hits[0].memory.id == new.id
    assert old.id not in [h.memory.id for h in hits]
    with_old = engram.recall(query, k=5, include_superseded=True)
    assert old.id in [h.memory.id for h in with_old]


def test_unrelated_change_does_not_supersede(engram: Engram) -> None:
    engram.add("The staging database runs on port 5433")
    new = engram.add("From now on use tabs instead of spaces in Go files")
    assert new.superseded == []


def test_episodes_are_history_and_are_not_superseded(engram: Engram) -> None:
    before = engram.add("Sent the weekly report by email", type="episodic")
    after = engram.add("From now on sent the weekly report via WeCom instead of email", type="episodic")
    assert after.superseded == [] and engram.get(before.id).status == "active"
    fact = engram.add("From now on send the weekly report via WeCom instead of email")
    assert fact.superseded == []  # a fact does not overrule what happened either
    assert engram.get(before.id).status == "active"


def test_rule_parts() -> None:
    assert supersedes("Use Black", "From now on use Ruff instead of Black", 0.93, 0.85)
    assert supersedes("Use Black", "Use Ruff instead of Black", 0.80, 0.85) is None  # not similar enough
    assert supersedes("Use Black", "Use Black for notebooks", 0.95, 0.85) is None  # no change marker
    assert supersedes("用户喜欢用 pnpm", "以后开会改到周四", 0.90, 0.85) is None  # nothing in common


def test_cli_reports_supersession(cli: Any) -> None:
    old = cli("add", "Send the weekly report by email").stdout.strip()
    result = cli("add", "From now on send the weekly report via WeCom instead of email", "--json")
    data = json.loads(result.stdout)
    assert data["superseded"] == [old]
    text = cli("add", "Deploys use Capistrano").stdout.strip()
    replaced = cli("add", "Deploys use Kamal", "--supersedes", text[:8])
    assert "supersedes memory" in replaced.stderr
    shown = json.loads(cli("inspect", text, "--json").stdout)
    assert shown["status"] == "superseded" and shown["history"][-1]["kind"] == "superseded"
