"""decay and touch: the seed's half-life model with floors, archiving, remembering again."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.config.settings import Decay, HalfLives
from engram_cli.memory.decay import archives, decay_score

DAY0 = "2026-01-01T00:00:00Z"


def test_the_checks_from_the_design() -> None:
    assert decay_score(0.5, 90, 30) == pytest.approx(0.125)
    assert decay_score(0.9, 90, 30) == pytest.approx(0.6)
    assert decay_score(0.5, 0, 30) == 1.0
    low = decay_score(0.5, 200, 30)
    assert low == pytest.approx(0.08) and archives(0.5, low)
    assert not archives(0.9, decay_score(0.9, 2000, 30))


def _half_life_30(engram: Engram) -> None:
    every_30 = HalfLives(working=30.0, episodic=30.0, semantic=30.0, procedural=30.0)
    engram.config = replace(engram.config, settings=replace(engram.settings, decay=Decay(half_life_days=every_30)))


def test_decay_run_scores_and_archives(engram: Engram, rows: Any, backdate: Any) -> None:
    _half_life_30(engram)
    mid = engram.add("The staging database runs on port 5433", created_at=DAY0).id
    high = engram.add("Never force-push to main", importance=0.9, created_at=DAY0).id
    old = engram.add("The office printer is on floor two", created_at="2025-06-15T00:00:00Z").id
    backdate(DAY0, mid, high)
    backdate("2025-06-15T00:00:00Z", old)
    report = engram.decay(now="2026-04-01T00:00:00Z")  # 90 days after DAY0, 200 after the printer
    assert report.scanned == 3 and report.archived == 1
    assert engram.get(mid).decay_score == pytest.approx(0.125)
    assert engram.get(high).decay_score == pytest.approx(0.6)
    printer = engram.get(old)
    assert printer.status == "archived" and printer.decay_score == pytest.approx(0.08)
    assert all(h.memory.id != old for h in engram.recall("printer floor"))
    kinds = [r[0] for r in rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk", (old,))]
    assert kinds == ["created", "archived"]


def test_decay_is_idempotent_for_the_same_moment(engram: Engram, backdate: Any) -> None:
    _half_life_30(engram)
    engram.add("The staging database runs on port 5433", created_at=DAY0)
    backdate(DAY0)
    assert len(engram.decay(now="2026-02-01T00:00:00Z").changes) == 1
    assert engram.decay(now="2026-02-01T00:00:00Z").changes == []


def test_dry_run_changes_nothing(engram: Engram, rows: Any, backdate: Any) -> None:
    _half_life_30(engram)
    engram.add("The staging database runs on port 5433", created_at=DAY0)
    backdate(DAY0)
    report = engram.decay(now="2026-04-01T00:00:00Z", dry_run=True)
    assert len(report.changes) == 1 and report.changes[0].after == pytest.approx(0.125)
    assert rows("SELECT decay_score, version FROM memories") == [(1.0, 1)]


def test_touch_restores_an_archived_memory(engram: Engram, rows: Any, backdate: Any) -> None:
    _half_life_30(engram)
    memory = engram.add("The office printer is on floor two", created_at="2025-01-01T00:00:00Z")
    backdate("2025-01-01T00:00:00Z")
    engram.decay(now="2026-01-01T00:00:00Z")
    assert engram.get(memory.id).status == "archived"
    (touched,) = engram.touch(memory.id[:8])
    assert touched.status == "active" and touched.decay_score == 1.0 and touched.access_count == 1
    assert [h.memory.id for h in engram.recall("printer")] == [memory.id]
    table = rows("SELECT vec_table FROM embedding_models")[0][0]
    assert rows(f"SELECT status FROM {table}") == [("active",)]


def test_half_lives_differ_by_type(engram: Engram, backdate: Any) -> None:
    working = engram.add("scratch: try the other branch", type="working", created_at=DAY0).id
    semantic = engram.add("The staging database runs on port 5433", created_at=DAY0).id
    backdate(DAY0)
    engram.decay(now="2026-01-11T00:00:00Z")
    assert engram.get(working).status == "archived"
    assert engram.get(semantic).decay_score > 0.95


def test_cli_decay_is_quiet_unless_something_changed(cli: Any, backdate: Any) -> None:
    cli("add", "The staging database runs on port 5433", "--at", DAY0)
    backdate(DAY0)
    first = cli("decay", "--now", "2026-03-02T00:00:00Z")
    assert "1 of 1 active memories decayed" in first.stdout
    again = cli("decay", "--now", "2026-03-02T00:00:00Z")
    assert again.stdout == "" and again.exit_code == 0
    summary = json.loads(cli("decay", "--now", "2026-09-01T00:00:00Z", "--dry-run", "--json").stdout)
    assert summary["dry_run"] and summary["changed"] == 1
    assert cli("decay", "--now", "sometime", ok=False).exit_code == 1


def test_history_lists_recent_events_and_one_timeline(cli: Any) -> None:
    first = cli("add", "Send the weekly report by email").stdout.strip()
    cli("add", "From now on send the weekly report via WeCom instead of email")
    recent = json.loads(cli("history", "--json").stdout)
    assert [e["kind"] for e in recent][:3] == ["superseded", "created", "created"]
    assert all(e["memory_id"] for e in recent)
    timeline = json.loads(cli("history", first[:8], "--json").stdout)
    assert [e["kind"] for e in timeline] == ["created", "superseded"]
    only = json.loads(cli("history", "--kind", "superseded", "--json").stdout)
    assert [e["memory_id"] for e in only] == [first]
    assert "superseded" in cli("history").stdout


def test_cli_decay_reports_only_steps_and_archives(cli: Any, backdate: Any) -> None:
    """A daily cron job mails what it prints: drifts below the reporting step are applied silently."""
    cli("add", "Fixed the flaky login test by waiting for the session cookie", "--type", "episodic", "--at", DAY0)
    backdate(DAY0)
    first = cli("decay", "--now", "2026-01-11T00:00:00Z")  # 10 days of a 30-day half-life: 1.0 -> 0.79
    assert "1 of 1 active memories decayed by 0.1 or more" in first.stdout
    a_minute_later = cli("decay", "--now", "2026-01-11T00:01:00Z")
    assert a_minute_later.stdout == "" and a_minute_later.stderr == ""
    detail = json.loads(cli("decay", "--now", "2026-01-11T00:02:00Z", "--json").stdout)
    assert detail["changed"] == 1 and detail["silent_drifts"] == 1 and detail["archived"] == 0
    assert len(detail["changes"]) == 1  # the full detail stays in JSON
    a_month_later = cli("decay", "--now", "2026-02-10T00:00:00Z")  # 0.79 -> 0.40
    assert "1 of 1 active memories decayed by 0.1 or more" in a_month_later.stdout
    gone = cli("decay", "--now", "2026-06-01T00:00:00Z")
    assert "1 archived" in gone.stdout


def test_small_drifts_are_applied_without_an_event(engram: Engram, rows: Any, backdate: Any) -> None:
    memory = engram.add("Fixed the flaky login test", type="episodic", created_at=DAY0)
    backdate(DAY0)
    engram.decay(now="2026-01-11T00:00:00Z")
    report = engram.decay(now="2026-01-11T06:00:00Z")
    assert report.notable == [] and report.silent_drifts == 1
    assert engram.get(memory.id).decay_score == pytest.approx(report.changes[0].after)
    kinds = [r[0] for r in rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk", (memory.id,))]
    assert kinds == ["created", "decayed"]


def _rows_for_decay(store: Any, n: int, seed: int) -> None:
    """Memories of every type, importance and age, some never accessed, some with timestamps in other ISO forms."""
    import random
    from datetime import timedelta

    from engram_cli.memory import records
    from engram_cli.memory.model import MEMORY_TYPES, Memory
    from engram_cli.timeutil import from_iso, to_iso

    rng = random.Random(seed)
    day0 = from_iso("2026-01-01T00:00:00Z")
    with store.write():
        for i in range(n):
            learned = to_iso(day0 + timedelta(days=rng.uniform(0, 300), microseconds=rng.randrange(10**6)))
            if i % 17 == 0:
                learned = learned[:19] + "+00:00"  # another ISO form than engram writes
            elif i % 23 == 0:
                learned = learned[:10]  # a bare date
            elif i % 29 == 0:
                learned = ""  # unknown: decay counts from created_at
            last = None if i % 3 else to_iso(day0 + timedelta(days=rng.uniform(0, 320)))
            store.memories.insert(
                Memory(
                    pk=0, id=records.new_id(), namespace=("a", "b")[i % 2], agent="user", session=None,
                    type=MEMORY_TYPES[i % len(MEMORY_TYPES)], content=f"memory {i}", summary=None,
                    content_hash=f"h{i}", embedding_model=None,
                    importance=rng.choice([0.1, 0.5, 0.79, 0.8, 0.95]), confidence=1.0,
                    decay_score=rng.choice([1.0, 0.6, 0.08, round(rng.random(), 6)]), access_count=0,
                    last_access_at=last, created_at="2025-12-01T00:00:00.000000Z", updated_at=learned or "",
                    status=("active", "active", "active", "archived")[i % 4], version=1, superseded_by=None,
                    consolidated_into=None, metadata={}, learned_at=learned,
                )
            )  # fmt: skip


def _decided_row_by_row(store: Any, half_lives: dict[str, float], at: Any, min_change: float) -> tuple[int, list[Any]]:
    """What decay.run decided before it was vectorised: every active row read whole and judged alone."""
    from engram_cli.memory import decay as decaymod
    from engram_cli.memory.model import Filters
    from engram_cli.timeutil import to_iso

    changes = []
    scanned = 0
    with store.read():
        pks = store.memories.pks(Filters(statuses=["active"]), order="pk")
        for memory in store.memories.load_many(pks).values():
            scanned += 1
            change = decaymod._decay_one(store, memory, half_lives, at, to_iso(at), True, min_change)
            if change is not None:
                changes.append(change)
    return scanned, changes


@pytest.mark.parametrize("min_change", [0.0, 0.001, 0.1])
def test_vectorised_decay_decides_exactly_as_row_by_row(engram: Engram, min_change: float) -> None:
    from engram_cli.memory import decay as decaymod
    from engram_cli.timeutil import from_iso

    _rows_for_decay(engram.store, 1200, seed=int(min_change * 1000))
    half_lives = engram.settings.decay.half_life_days.by_type()
    at = from_iso("2026-11-20T12:34:56.789012Z")
    scanned, expected = _decided_row_by_row(engram.store, half_lives, at, min_change)
    assert expected and scanned == 900
    dry = decaymod.run(engram.store, half_lives, at=at, dry_run=True, min_change=min_change)
    assert dry.scanned == scanned and dry.changes == expected
    applied = decaymod.run(engram.store, half_lives, at=at, min_change=min_change)
    assert applied.changes == expected
    with engram.store.read():
        changed = engram.store.memories.pks_of([c.id for c in expected])
        stored = {m.id: m for m in engram.store.memories.load_many(changed).values()}
    assert all(stored[c.id].decay_score == c.after for c in expected)
    assert all(stored[c.id].status == ("archived" if c.archived else "active") for c in expected)
    # Right after, nothing moves (archived rows left the scan).
    again = decaymod.run(engram.store, half_lives, at=at, dry_run=True, min_change=min_change)
    assert again.changes == [] and again.scanned == scanned - applied.archived


def test_rows_whose_score_stays_are_not_read_whole(engram: Engram, monkeypatch: pytest.MonkeyPatch) -> None:
    from engram_cli.memory import decay as decaymod
    from engram_cli.timeutil import from_iso

    _rows_for_decay(engram.store, 300, seed=5)
    half_lives = engram.settings.decay.half_life_days.by_type()
    at = from_iso("2026-11-20T00:00:00Z")
    decaymod.run(engram.store, half_lives, at=at)
    read: list[int] = []
    load_many = engram.store.memories.load_many
    monkeypatch.setattr(engram.store.memories, "load_many", lambda pks, **kw: read.extend(pks) or load_many(pks, **kw))
    report = decaymod.run(engram.store, half_lives, at=at)
    assert report.changes == [] and report.scanned > 0
    monkeypatch.undo()
    # Only rows numpy cannot judge (timestamps in other forms) are read whole.
    with engram.store.read():
        whole = engram.store.memories.load_many(read).values()
    assert read and all(len(m.decay_start) != 27 for m in whole)
