"""compact: episodes become facts, duplicates fold, the store stays bounded, and a rerun is a no-op."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.memory import compact as compactmod
from engram_cli.memory.compact import extractive_summary
from engram_cli.serialize import to_json
from engram_cli.store.lock import exclusive

OLD = "2026-11-01T10:00:00Z"
NOW = "2026-11-20T00:00:00Z"

UPLOAD = [
    "Fixed the flaky upload test by pinning the S3 mock clock",
    "The upload test was flaky again; the S3 mock clock drifted, pinned it in conftest",
    "Upload test flakiness came back after the boto upgrade; re-pinned the S3 mock clock",
]
CORS = [
    "修复了登录页面的跨域问题，后端加了 CORS 头",
    "登录页面又出现跨域错误，检查了 CORS 配置",
    "登录接口跨域问题：nginx 也要加 CORS 头",
]
OTHERS = [
    "Set up the postgres container for the integration tests",
    "Upgraded Django to 5.1 and silenced the deprecation warnings",
    "把周报模板改成了 Markdown 格式",
]


def _episodes(engram: Engram, texts: list[str], at: str = OLD, **fields: Any) -> list[str]:
    return [engram.add(t, type="episodic", created_at=at, no_merge=True, **fields).id for t in texts]


def _snapshot(rows: Any) -> list[tuple[Any, ...]]:
    return (
        rows(
            "SELECT id, memory_type, status, importance, decay_score, access_count, version, consolidated_into, "
            "content FROM memories ORDER BY pk"
        )
        + rows("SELECT count(*) FROM events")
        + rows("SELECT count(*) FROM sources")
    )


# -- the extractive summary ----------------------------------------------------------


def test_summary_keeps_the_shared_subject_and_drops_one_off_details() -> None:
    assert extractive_summary(UPLOAD) == UPLOAD[0]
    assert extractive_summary(CORS) == CORS[0]


def test_summary_adds_a_sentence_only_for_more_shared_words() -> None:
    texts = [
        "Deploy failed: docker build ran out of disk on the CI runner. Cleaned the cache with docker system prune.",
        "CI deploy broke again, runner disk full during docker build; added a prune step before the build.",
        "Docker build on CI: no space left on device. Enabled the prune step on the release branch too.",
    ]
    summary = extractive_summary(texts)
    assert summary.startswith("Deploy failed: docker build ran out of disk on the CI runner.")
    assert "prune" in summary
    assert extractive_summary(texts) == summary  # deterministic
    assert len(summary) <= compactmod.SUMMARY_CHARS


def test_summary_of_texts_without_words_is_their_text() -> None:
    assert extractive_summary(["!!", "??"]) == "!! ??"


# -- consolidation ----------------------------------------------------------------------


def test_a_cluster_of_episodes_becomes_one_semantic_memory(engram: Engram, rows: Any, pair_search: str) -> None:
    upload = _episodes(engram, UPLOAD, tags=["tests"])
    cors = _episodes(engram, CORS)
    others = _episodes(engram, OTHERS)
    report = engram.compact(now=NOW)

    assert len(report.clusters) == 2 and report.consolidated == 6
    by_members = {frozenset(m.id for m in c.members): c.memory_id for c in report.clusters}
    assert set(by_members) == {frozenset(upload), frozenset(cors)}
    # Both summaries are one episode's own words: that episode becomes the fact.
    assert by_members[frozenset(upload)] == upload[0] and by_members[frozenset(cors)] == cors[0]
    assert all(c.promoted for c in report.clusters)
    for ids in (upload, cors):
        fact = engram.get(ids[0])
        assert fact.type == "semantic" and fact.status == "active"
        assert fact.metadata["consolidated"]["episodes"] == 3
        assert fact.importance == pytest.approx(0.55)
        assert {s.ref for s in fact.sources if s.kind == "compact"} == set(ids[1:])
        # Summarise, then archive: nothing is deleted, every episode points at its fact.
        for episode in ids[1:]:
            memory = engram.get(episode)
            assert memory.status == "archived" and memory.consolidated_into == fact.id
    upload_fact = engram.get(upload[0])
    assert upload_fact.content == UPLOAD[0] and upload_fact.tags == ["tests"]
    assert {engram.get(i).status for i in others} == {"active"}
    assert rows("SELECT kind, actor FROM events WHERE memory_id = ? ORDER BY pk", (upload[1],))[-1] == (
        "archived",
        "compact",
    )
    assert rows("SELECT kind, note FROM events WHERE memory_id = ? ORDER BY pk", (upload[0],))[-1] == (
        "updated",
        "became the fact consolidating 3 episodes",
    )
    # A detail only one episode had is still found, through the fact that carries it.
    hits = engram.recall("conftest boto upgrade", k=3)
    assert hits[0].memory.id == upload_fact.id


def test_a_second_run_changes_nothing(engram: Engram, rows: Any) -> None:
    _episodes(engram, UPLOAD + CORS + OTHERS)
    assert engram.compact(now=NOW).changed
    before = _snapshot(rows)
    again = engram.compact(now=NOW)
    assert not again.changed and to_json(again)["created"] == 0
    assert _snapshot(rows) == before


def test_dry_run_prints_the_plan_and_writes_nothing(cli: Any, engram: Engram, rows: Any) -> None:
    _episodes(engram, UPLOAD + OTHERS)
    before = _snapshot(rows)
    result = cli("compact", "--dry-run", "--now", NOW)
    assert "would consolidate 3 episodes in global into a new semantic memory" in result.stdout
    assert f"-> {UPLOAD[0]}" in result.stdout
    assert _snapshot(rows) == before
    data = json.loads(cli("compact", "--dry-run", "--now", NOW, "--json").stdout)
    assert data["dry_run"] and data["created"] == 1 and data["consolidated"] == 3
    assert _snapshot(rows) == before


def test_cron_run_is_quiet_when_nothing_changes(cli: Any, engram: Engram, backdate: Any) -> None:
    _episodes(engram, OTHERS)
    backdate(OLD)  # learned when they happened, so that decay has moved by NOW
    first = cli("compact", "--now", NOW)
    assert first.stdout.strip().endswith(f"as of {NOW[:19]}.000000Z)")  # decay moved; reported once
    second = cli("compact", "--now", NOW)
    assert second.stdout == "" and second.exit_code == 0


def test_young_episodes_wait(engram: Engram) -> None:
    _episodes(engram, UPLOAD, at="2026-11-19T20:00:00Z")  # four hours before NOW
    assert engram.compact(now=NOW).clusters == []
    assert len(engram.compact(now="2026-11-21T00:00:00Z").clusters) == 1


def test_time_window_keeps_distant_episodes_apart(engram: Engram) -> None:
    s = engram.settings
    engram.config = replace(engram.config, settings=replace(s, compact=replace(s.compact, window_days=7.0)))
    for text, day in zip(UPLOAD, ("2026-09-01", "2026-10-01", "2026-11-01"), strict=True):
        engram.add(text, type="episodic", created_at=f"{day}T00:00:00Z", no_merge=True)
    assert engram.compact(now=NOW).clusters == []


def test_later_episodes_join_the_fact_instead_of_making_another(engram: Engram) -> None:
    _episodes(engram, UPLOAD)
    fact = engram.compact(now=NOW).clusters[0].memory_id
    assert fact is not None
    late = engram.add(
        "Flaky upload test: pinned the S3 mock clock again",
        type="episodic", created_at="2026-11-25T00:00:00Z", no_merge=True,
    ).id  # fmt: skip
    report = engram.compact(now="2026-11-28T00:00:00Z")
    assert report.clusters == []
    assert [(f.kind, f.loser.id, f.winner_id) for f in report.folds] == [("joined", late, fact)]
    memory = engram.get(fact)
    assert memory.metadata["consolidated"]["episodes"] == 4
    assert engram.get(late).consolidated_into == fact


def test_near_duplicates_fold_into_the_more_important(engram: Engram) -> None:
    keep = engram.add("The user prefers tabs over spaces for indentation.", importance=0.7).id
    extra = engram.add("The user prefers tabs over spaces for indentation!", importance=0.4, no_merge=True).id
    apart = engram.add("The staging database listens on port 5433", no_merge=True).id
    report = engram.compact(now=NOW)
    assert [(f.kind, f.loser.id, f.winner_id) for f in report.folds] == [("duplicate", extra, keep)]
    kept = engram.get(keep)
    assert kept.importance == pytest.approx(0.75)
    assert any(s.content == "The user prefers tabs over spaces for indentation!" for s in kept.sources)
    assert engram.get(extra).status == "archived" and engram.get(extra).consolidated_into == keep
    assert engram.get(apart).status == "active"


def test_a_group_of_near_duplicates_folds_into_one_survivor(engram: Engram, pair_search: str) -> None:
    low = engram.add("The user prefers tabs over spaces for indentation", importance=0.3, no_merge=True).id
    keep = engram.add("The user prefers tabs over spaces for indentation.", importance=0.7, no_merge=True).id
    mid = engram.add("The user prefers tabs over spaces for indentation!", importance=0.5, no_merge=True).id
    report = engram.compact(now=NOW)
    assert sorted((f.loser.id, f.winner_id) for f in report.folds) == sorted([(low, keep), (mid, keep)])
    assert engram.get(keep).importance == pytest.approx(0.8)  # two folds, +0.05 each
    assert not engram.compact(now=NOW).changed


def test_numbers_keep_near_duplicates_apart(engram: Engram) -> None:
    engram.add("The staging database listens on port 5433", no_merge=True)
    engram.add("The staging database listens on port 5434", no_merge=True)
    assert engram.compact(now=NOW).folds == []


def test_hard_cap_archives_the_least_important_and_faded_first(engram: Engram) -> None:
    s = engram.settings
    engram.config = replace(engram.config, settings=replace(s, compact=replace(s.compact, max_active=2)))
    keep_high = engram.add("Never force-push to main", importance=0.9, created_at=OLD).id
    keep_fresh = engram.add("Releases are tagged from the release branch", importance=0.5, created_at=NOW).id
    gone = engram.add("The office printer is on floor two", importance=0.3, created_at=OLD).id
    report = engram.compact(now=NOW)
    assert [r.id for r in report.capped] == [gone]
    assert engram.get(gone).status == "archived"
    assert {engram.get(i).status for i in (keep_high, keep_fresh)} == {"active"}
    assert not engram.compact(now=NOW).changed


def test_the_cap_counts_each_namespace_apart(engram: Engram) -> None:
    s = engram.settings
    engram.config = replace(engram.config, settings=replace(s, compact=replace(s.compact, max_active=2)))
    engram.add("Never force-push to main", importance=0.9, namespace="a", created_at=OLD)
    engram.add("Releases are tagged from the release branch", importance=0.5, namespace="a", created_at=NOW)
    low = engram.add("The office printer is on floor two", importance=0.3, namespace="a", created_at=OLD).id
    engram.add("The staging database listens on port 5433", importance=0.1, namespace="b", created_at=OLD)
    engram.add("Grafana dashboards live in the ops repository", importance=0.1, namespace="b", created_at=OLD)
    report = engram.compact(now=NOW, dry_run=True)
    assert [r.id for r in report.capped] == [low]  # b holds no more than the cap: nothing of it goes
    assert [r.id for r in engram.compact(now=NOW, namespace="b").capped] == []


def test_faded_memories_are_archived_by_the_decay_step(engram: Engram, backdate: Any) -> None:
    old = engram.add("The office printer is on floor two", type="episodic", created_at="2025-01-01T00:00:00Z").id
    backdate("2025-01-01T00:00:00Z")
    report = engram.compact(now=NOW)
    assert report.decay is not None and report.decay.archived == 1
    assert engram.get(old).status == "archived" and engram.get(old).consolidated_into is None


# -- summarizer.command -----------------------------------------------------------------


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "summarize.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return f"{sys.executable} {path}"


def test_summarizer_command_writes_the_fact(engram: Engram, tmp_path: Path) -> None:
    command = _script(
        tmp_path,
        """
        import json, sys
        cluster = json.load(sys.stdin)
        print(f"Recurring: {cluster['extractive']} ({len(cluster['episodes'])} times)")
        """,
    )
    s = engram.settings
    engram.config = replace(engram.config, settings=replace(s, summarizer=replace(s.summarizer, command=command)))
    _episodes(engram, UPLOAD)
    report = engram.compact(now=NOW)
    fact = engram.get(report.clusters[0].memory_id or "")
    assert fact.content == f"Recurring: {UPLOAD[0]} (3 times)"
    assert fact.metadata["consolidated"]["method"] == "command"


def test_summarizer_output_is_redacted_before_it_is_clipped(engram: Engram, tmp_path: Path) -> None:
    from engram_cli.memory.remember import MAX_CONTENT_CHARS

    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZXBsb3kifQ.c2lnbmF0dXJlc2lnbmF0dXJl"
    # The token straddles the clip point: clipped first, the cut token would no longer match.
    padding = MAX_CONTENT_CHARS - len("Recurring ") - 20
    command = _script(
        tmp_path,
        f"""
        print("Recurring " + "x" * {padding} + " {jwt}")
        """,
    )
    s = engram.settings
    engram.config = replace(engram.config, settings=replace(s, summarizer=replace(s.summarizer, command=command)))
    _episodes(engram, UPLOAD)
    report = engram.compact(now=NOW)
    fact = engram.get(report.clusters[0].memory_id or "")
    assert "eyJhbGci" not in fact.content and "[REDACTED:jwt]" in fact.content


def test_a_failing_summarizer_leaves_the_episodes(cli: Any, engram: Engram, rows: Any, tmp_path: Path) -> None:
    command = _script(tmp_path, "import sys\nsys.exit('model not loaded')\n")
    cli("config", "set", "summarizer.command", command)
    ids = _episodes(engram, UPLOAD)
    result = cli("compact", "--now", NOW, ok=False)
    assert result.exit_code == 1
    assert "summarizer.command failed" in result.stderr and "model not loaded" in result.stderr
    assert rows("SELECT count(*) FROM memories WHERE memory_type = 'semantic'") == [(0,)]
    assert {r[0] for r in rows("SELECT status FROM memories")} == {"active"}
    assert len(ids) == 3


# -- running alongside others -------------------------------------------------------------


def test_a_second_compact_exits_at_once_while_one_runs(cli: Any, engram: Engram, db_path: Path) -> None:
    _episodes(engram, UPLOAD)
    with exclusive(db_path, "compact"):
        started = time.monotonic()
        result = cli("compact", "--now", NOW, ok=False)
        assert time.monotonic() - started < 5
    assert result.exit_code == 75
    assert "another `engram compact` is running" in result.stderr and f"pid {os.getpid()}" in result.stderr
    assert cli("compact", "--now", NOW).exit_code == 0


def test_a_member_changed_after_planning_is_left_alone(engram: Engram, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _episodes(engram, UPLOAD)
    original = compactmod.run

    def run_with_a_writer(store: Any, settings: Any, embed_for: Any, **kw: Any) -> Any:
        def embed_and_interfere(model_id: str) -> Any:
            engram.touch(ids[1:])  # a writer bumps two members between planning and writing
            return embed_for(model_id)

        return original(store, settings, embed_and_interfere, **kw)

    monkeypatch.setattr(compactmod, "run", run_with_a_writer)
    report = engram.compact(now=NOW)
    assert report.clusters == []
    assert any("changed while compacting" in s for s in report.skipped)
    assert {engram.get(i).status for i in ids} == {"active"}
    monkeypatch.setattr(compactmod, "run", original)
    assert len(engram.compact(now=NOW).clusters) == 1  # the next run does it


WRITER = """
import sys
from engram_cli import Engram
with Engram.open() as mem:
    for i in range(int(sys.argv[1])):
        mem.add(f"Concurrent note {i}: the cache warmer job {i} ran on worker {i % 3}", type="episodic",
                created_at="2026-11-02T00:00:00Z")
"""


def test_compact_and_writers_at_the_same_time(engram: Engram, engram_home: Path, rows: Any) -> None:
    _episodes(engram, UPLOAD + CORS + OTHERS)
    engram.close()
    env = {**os.environ, "ENGRAM_HOME": str(engram_home)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, "30"], env=env)
    command = [sys.executable, "-m", "engram_cli", "compact", "--now", NOW, "--json"]
    compacts = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    codes = [c.wait(timeout=120) for c in compacts]
    assert sorted(codes) in ([0, 0], [0, 75]), [c.stderr.read() for c in compacts if c.stderr]
    assert writer.wait(timeout=120) == 0
    assert rows("PRAGMA integrity_check") == [("ok",)]
    kept = {r[0] for r in rows("SELECT content FROM memories UNION SELECT content FROM sources")}
    for i in range(30):  # every write is somewhere: a row of its own, or a merged-in source
        assert f"Concurrent note {i}: the cache warmer job {i} ran on worker {i % 3}" in kept
    dangling = rows(
        "SELECT m.id FROM memories m LEFT JOIN memories t ON t.id = m.consolidated_into "
        "WHERE m.consolidated_into IS NOT NULL AND t.pk IS NULL"
    )
    assert dangling == []
    archived_into_archived = rows(
        "SELECT m.id FROM memories m JOIN memories t ON t.id = m.consolidated_into WHERE t.status != 'active'"
    )
    assert archived_into_archived == []
    for _ in range(2):
        final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(final.stdout)["created"] == 0 and json.loads(final.stdout)["folds"] == []


def test_dry_run_never_embeds_and_plans_the_clusters_a_real_run_makes(engram: Engram, monkeypatch: Any) -> None:
    _episodes(engram, UPLOAD + CORS + OTHERS)
    embedded: list[list[str]] = []
    passage = engram._passage_embedder

    def counting(model_id: str) -> Any:
        embed, dim = passage(model_id)

        def counted(texts: Any) -> Any:
            embedded.append(list(texts))
            return embed(texts)

        return counted, dim

    monkeypatch.setattr(engram, "_passage_embedder", counting)
    plan = engram.compact(now=NOW, dry_run=True)
    assert embedded == []
    done = engram.compact(now=NOW)
    assert embedded == [[c.content for c in done.clusters]]  # a real run embeds each new text once
    members = [sorted(m.id for m in c.members) for c in plan.clusters]
    assert members == [sorted(m.id for m in c.members) for c in done.clusters] and len(members) == 2
    assert [c.content for c in plan.clusters] == [c.content for c in done.clusters]


def test_planning_reads_unkeyed_rows_with_vectors_oldest_first_and_sees_the_mark(engram: Engram) -> None:
    from engram_cli.memory.model import Filters

    later = engram.add(UPLOAD[0], namespace="proj", created_at="2026-11-02T00:00:00Z").id
    earlier = engram.add(CORS[0], namespace="proj", created_at=OLD).id
    marked = engram.add(OTHERS[0], namespace="proj", created_at=NOW, metadata={compactmod.META_KEY: {"episodes": 2}})
    engram.add(OTHERS[1], namespace="elsewhere", created_at=OLD)
    engram.set("db:port", "The staging database listens on 5433", namespace="proj")  # keyed: never compacted
    with engram.store.read():
        rows = engram.store.memories.planning_rows(Filters(namespaces=["proj"]), marked_by=compactmod.META_KEY)
    assert [r[4] for r in rows] == [earlier, later, marked.id]  # id
    assert [r[11] for r in rows] == [0, 0, 1]  # marked
    assert {(r[0], r[2]) for r in rows} == {("proj", engram.active_model)}  # namespace, model
    with engram.store.read():
        counts = engram.store.memories.planning_counts(Filters())
    assert counts == {"proj": 3, "elsewhere": 1}
    groups = compactmod._load_rows(engram.store, ["proj"])
    [(key, planned)] = groups.items()
    assert key[0] == "proj" and [r.id for r in planned] == [earlier, later, marked.id]
    assert [r.consolidated for r in planned] == [False, False, True]
