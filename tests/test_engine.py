"""The engine through the Python API, on the real store and the real default model."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli import Engram
from engram_cli.errors import AmbiguousId, InvalidInput, NotFound, UsageError

STAGING = "The staging database runs on port 5433"


def test_add_returns_the_stored_memory(engram: Engram, rows: Any) -> None:
    result = engram.add(STAGING, tags=["ops", "DB"], importance=0.7, metadata={"ticket": "OPS-12"})
    assert result.action == "created"
    data = result.memory.to_dict()
    for key in ("id", "content", "summary", "type", "namespace", "agent", "tags", "importance", "decay_score",
                "access_count", "created_at", "updated_at", "last_access_at", "status", "embedding_model",
                "metadata", "sources"):  # fmt: skip
        assert key in data
    assert data["tags"] == ["db", "ops"]
    assert data["namespace"] == "global" and data["type"] == "semantic" and data["status"] == "active"
    assert data["embedding_model"] == engram.active_model
    assert data["created_at"].endswith("Z")
    (count,) = rows("SELECT count(*) FROM memories")[0]
    assert count == 1
    table = rows("SELECT vec_table FROM embedding_models")[0][0]
    assert rows(f"SELECT count(*) FROM {table}")[0][0] == 1
    assert rows("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'staging'")[0][0] == 1
    assert [r[0] for r in rows("SELECT kind FROM events")] == ["created"]


def test_exact_duplicate_never_makes_a_second_row(engram: Engram, rows: Any) -> None:
    first = engram.add(STAGING)
    again = engram.add("  the staging database   runs on port 5433 ")
    assert again.action == "duplicate" and again.id == first.id
    assert rows("SELECT count(*) FROM memories")[0][0] == 1
    assert again.memory.access_count == 1
    assert again.memory.importance > first.memory.importance


def test_near_duplicate_merges_and_keeps_the_new_text_as_a_source(engram: Engram, rows: Any) -> None:
    first = engram.add(STAGING, importance=0.9)
    merged = engram.add("The staging database runs on port 5433.", metadata={"from": "chat"})
    assert merged.action == "merged" and merged.id == first.id
    assert merged.similarity is not None and merged.similarity >= engram.merge_policy().threshold
    memory = engram.get(first.id)
    # High importance keeps its own wording; the newcomer is a supplement with its metadata.
    assert memory.content == STAGING
    supplements = [s for s in memory.sources if s.content]
    assert [s.content for s in supplements] == ["The staging database runs on port 5433."]
    assert supplements[0].metadata == {"from": "chat"}
    assert memory.access_count == 1 and memory.importance == pytest.approx(0.95)
    assert rows("SELECT count(*) FROM memories")[0][0] == 1
    kinds = [r[0] for r in rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk", (first.id,))]
    assert kinds == ["created", "merged"]


def test_merge_takes_the_new_wording_when_it_matters_as_much(engram: Engram, rows: Any) -> None:
    first = engram.add("Run the unit tests with pytest -q before pushing", importance=0.4)
    merged = engram.add("Run the unit tests with pytest -q before you push", importance=0.5)
    assert merged.action == "merged"
    memory = engram.get(first.id)
    assert memory.content == "Run the unit tests with pytest -q before you push"
    # Nothing is lost: the old wording is pinned on its source, and text and vector agree.
    assert "Run the unit tests with pytest -q before pushing" in [s.content for s in memory.sources]
    assert rows("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'push'")[0][0] == 1
    hit = engram.recall("pytest before you push", k=1, bump=False)[0]
    assert hit.memory.id == first.id and hit.explain["vector"]["cosine"] > 0.9


def test_no_merge_keeps_both(engram: Engram, rows: Any) -> None:
    engram.add(STAGING)
    second = engram.add("The staging database runs on port 5433.", no_merge=True)
    assert second.action == "created"
    assert rows("SELECT count(*) FROM memories")[0][0] == 2


def test_different_facts_do_not_merge(engram: Engram) -> None:
    engram.add("I prefer tabs for indentation in Go code")
    other = engram.add("Deploys go through make release on the build server")
    assert other.action == "created"


def test_merging_is_scoped_to_namespace_and_agent(engram: Engram) -> None:
    a = engram.add(STAGING, namespace="alpha")
    b = engram.add(STAGING, namespace="beta")
    c = engram.add(STAGING, namespace="alpha", agent="codex")
    assert len({a.id, b.id, c.id}) == 3


def test_chinese_query_finds_chinese_memory(engram: Engram) -> None:
    engram.add("用户喜欢用 pnpm 管理前端依赖")
    engram.add("数据库迁移脚本放在 scripts/migrate 目录下")
    engram.add("The CI pipeline runs on GitHub Actions")
    top = engram.recall("数据库迁移在哪里", k=1)[0]
    assert top.memory.content.startswith("数据库迁移")
    # Across languages in a store this small the evidence is weak: rank only, no relevance floor.
    top = engram.recall("which package manager for the frontend", k=1, min_relevance=0.0)[0]
    assert "pnpm" in top.memory.content


def test_english_query_finds_english_memory(engram: Engram) -> None:
    engram.add("Always run database migrations with alembic upgrade head")
    engram.add("The office coffee machine is on the third floor")
    engram.add("周五下午不要发布新版本")
    top = engram.recall("how do I apply schema migrations", k=1)[0]
    assert "alembic" in top.memory.content


def test_two_character_chinese_keyword_match(engram: Engram) -> None:
    target = engram.add("明天下午三点做数据库迁移，记得先备份")
    engram.add("今天的午饭吃了面条")
    hits = engram.recall("迁移", k=2, bump=False)
    assert hits[0].memory.id == target.id
    assert hits[0].explain["keyword"] is not None and hits[0].explain["keyword"]["rank"] == 1


def test_recall_bumps_access_unless_told_not_to(engram: Engram, rows: Any) -> None:
    memory = engram.add(STAGING)
    engram.recall("staging port", k=1, bump=False)
    assert rows("SELECT access_count, last_access_at FROM memories")[0] == (0, None)
    engram.recall("staging port", k=1)
    count, last = rows("SELECT access_count, last_access_at FROM memories")[0]
    assert count == 1 and last is not None
    assert engram.get(memory.id).access_count == 1


def test_recall_score_is_fusion_times_importance_times_decay(engram: Engram) -> None:
    engram.add(STAGING, importance=0.3)
    hit = engram.recall("staging database port", k=1, bump=False)[0]
    e = hit.explain
    assert e["importance_factor"] == pytest.approx(0.9)
    assert hit.score == pytest.approx(e["fusion"] * e["importance_factor"] * e["decay_score"], rel=1e-5)


def test_importance_breaks_ties_between_equally_relevant(engram: Engram) -> None:
    low = engram.add("Deploy the web app with make deploy-web", importance=0.1, no_merge=True)
    high = engram.add("Deploy the API with make deploy-api", importance=1.0, no_merge=True)
    ids = [h.memory.id for h in engram.recall("how to deploy", k=2, bump=False)]
    assert ids == [high.id, low.id]


def test_filters_apply_before_ranking(engram: Engram) -> None:
    engram.add("Use ruff for linting Python", tags=["python"], type="procedural")
    engram.add("Use ruff format instead of black", tags=["python", "style"])
    engram.add("Use eslint for linting TypeScript", tags=["ts"], type="procedural", created_at="2020-01-01")
    # The only memory tagged "style" is no answer to "linting": the floor is off, the filters are what is tested.
    styled = engram.recall("linting", tags=["style"], min_relevance=0.0)
    assert {h.memory.content for h in styled} == {"Use ruff format instead of black"}
    assert {h.memory.type for h in engram.recall("linting", type="procedural")} == {"procedural"}
    old = engram.recall("linting", until="2021-01-01")
    assert [h.memory.content for h in old] == ["Use eslint for linting TypeScript"]
    assert all(h.memory.created_at >= "2025" for h in engram.recall("linting", since="2025-01-01"))


def test_all_namespaces_search_in_one_call(engram: Engram) -> None:
    engram.add("Project alpha deploys with Helm", namespace="alpha")
    engram.add("Project beta deploys with Terraform", namespace="beta")
    assert len(engram.recall("deploys", namespace="alpha")) == 1
    assert {h.memory.namespace for h in engram.recall("deploys", all_namespaces=True)} == {"alpha", "beta"}


NAMESPACES = ["alpha", "beta", "gamma"]
CORPUS = [
    "Deploys go through make release", "The staging database runs on port 5433", "用户喜欢用 pnpm",
    "数据库迁移脚本放在 scripts 目录", "Use ruff for linting", "周五不要发布", "Tabs, not spaces",
]  # fmt: skip


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("ns") / "ns.db"
    with Engram.open(path) as mem:
        for ns in NAMESPACES:
            mem.add_many([{"content": f"{text} ({ns})", "namespace": ns} for text in CORPUS])
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(min_size=1, max_size=30).filter(lambda s: s.strip()), ns=st.sampled_from(NAMESPACES))
def test_no_query_in_one_namespace_returns_another(populated: Path, query: str, ns: str) -> None:
    with Engram.open(populated) as mem:
        hits = mem.recall(query, k=10, namespace=ns, bump=False, min_relevance=0.0)
    assert hits, "every namespace holds memories, so with no relevance floor some must come back"
    assert {h.memory.namespace for h in hits} == {ns}


def test_add_many_batches_and_reports_each_item(engram: Engram, rows: Any) -> None:
    items = [{"content": f"Service {i} listens on port {8000 + i}", "tags": ["svc"]} for i in range(30)]
    items.append({"content": "Service 3 listens on port 8003"})
    results = engram.add_many(items, batch_size=8)
    assert len(results) == 31
    assert results[-1].action == "duplicate" and results[-1].id == results[3].id
    assert rows("SELECT count(*) FROM memories")[0][0] == len({r.id for r in results})


def test_add_many_rejects_a_bad_item_before_writing_its_batch(engram: Engram, rows: Any) -> None:
    with pytest.raises(InvalidInput, match="item 2"):
        engram.add_many([{"content": "fine"}, {"content": "also fine"}, {"content": "bad", "importance": 3}])
    assert rows("SELECT count(*) FROM memories")[0][0] == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": "   "}, "empty"),
        ({"content": "x", "type": "dream"}, "unknown memory type"),
        ({"content": "x", "importance": 1.5}, "between 0 and 1"),
        ({"content": "x", "importance": -0.1}, "between 0 and 1"),
        ({"content": "x", "created_at": "last tuesday-ish"}, "cannot read"),
        ({"content": "x", "colour": "red"}, "unknown field"),
        ({"content": "x", "metadata": ["a"]}, "metadata"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    engram: Engram, rows: Any, fields: dict[str, Any], message: str
) -> None:
    content = fields.pop("content")
    with pytest.raises(InvalidInput, match=message):
        engram.add(content, **fields)
    assert rows("SELECT count(*) FROM memories")[0][0] == 0


def test_metadata_and_unicode_round_trip(engram: Engram) -> None:
    text = "Emoji 🧠, accents déjà vu, 中文，日本語のテキスト and a tab\there"
    meta = {"nested": {"list": [1, 2.5, None, True]}, "名字": "值"}
    result = engram.add(text, metadata=meta, session="s-1", source={"kind": "file", "ref": "notes.md:3"})
    memory = engram.get(result.id)
    assert memory.content == text and memory.metadata == meta and memory.session == "s-1"
    assert memory.sources[0].kind == "file" and memory.sources[0].ref == "notes.md:3"
    assert json.loads(json.dumps(memory.to_dict(), ensure_ascii=False))["content"] == text


def test_ids_resolve_by_unique_prefix(engram: Engram) -> None:
    result = engram.add(STAGING)
    assert engram.get(result.id[:6]).id == result.id
    with pytest.raises(InvalidInput, match="too short"):
        engram.get(result.id[:3])
    with pytest.raises(NotFound):
        engram.get("ffffffff-ffff")


def test_ambiguous_prefix(engram: Engram) -> None:
    first = engram.add("Deploys go through make release").id
    second = engram.add("Tabs, not spaces, in the Makefile").id
    # Give the two rows ids that share a prefix, as uuid4 ids eventually will.
    with engram.store.write():
        engram.store.execute("UPDATE memories SET id = ? WHERE id = ?", ("abcd1111" + first[8:], first))
        engram.store.execute("UPDATE memories SET id = ? WHERE id = ?", ("abcd2222" + second[8:], second))
    with pytest.raises(AmbiguousId):
        engram.get("abcd")
    assert engram.get("abcd1").id == "abcd1111" + first[8:]


def test_forget_archives_and_recall_skips_it(engram: Engram, rows: Any) -> None:
    memory = engram.add(STAGING)
    assert engram.forget(memory.id)[0].action == "archived"
    assert engram.recall("staging port") == []
    assert [h.memory.id for h in engram.recall("staging port", include_archived=True)] == [memory.id]
    assert engram.get(memory.id).status == "archived"
    table = rows("SELECT vec_table FROM embedding_models")[0][0]
    assert rows(f"SELECT status FROM {table}")[0][0] == "archived"


def test_hard_forget_purges_every_copy_of_the_text(engram: Engram, rows: Any, db_path: Path) -> None:
    secret_ish = "The door code for the lab is 4417-QUOKKA"
    memory = engram.add(secret_ish)
    engram.add("The door code for the lab is 4417-QUOKKA.")  # merged: a second copy in sources
    assert engram.forget(memory.id, hard=True)[0].action == "purged"
    assert rows("SELECT count(*) FROM memories")[0][0] == 0
    assert rows("SELECT count(*) FROM sources")[0][0] == 0
    assert rows("SELECT count(*) FROM tags")[0][0] == 0
    table = rows("SELECT vec_table FROM embedding_models")[0][0]
    assert rows(f"SELECT count(*) FROM {table}")[0][0] == 0
    assert rows("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'quokka'")[0][0] == 0
    events = rows("SELECT kind, before, after, note FROM events WHERE memory_id = ? ORDER BY pk", (memory.id,))
    assert events[-1][0] == "deleted"
    assert all("QUOKKA" not in json.dumps(e) for e in events)
    with pytest.raises(NotFound):
        engram.get(memory.id)


def test_forget_is_all_or_nothing(engram: Engram) -> None:
    memory = engram.add(STAGING)
    with pytest.raises(NotFound):
        engram.forget([memory.id, "deadbeef-0000"])
    assert engram.get(memory.id).status == "active"


def _add_same(path: str, text: str, n: int) -> None:
    with Engram.open(path) as mem:
        for _ in range(n):
            mem.add(text)


def test_concurrent_writers_lose_no_update(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    with Engram.open(path) as mem:
        mem.add(STAGING)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_add_same, args=(path, STAGING, 10)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Engram.open(path) as mem:
        (memory,) = mem.list()
        assert memory.access_count == 20
        assert memory.version == 21


def test_environment_namespace(engram_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_NAMESPACE", "from-env")
    with Engram.open() as mem:
        assert mem.add(STAGING).memory.namespace == "from-env"
    assert os.environ["ENGRAM_NAMESPACE"] == "from-env"


def test_recall_list_count_and_export_take_filter_keywords_or_ready_filters(engram: Engram) -> None:
    engram.add("Deploys go through make release", tags=["ops"])
    engram.add("Deploys of the web app go through Vercel", namespace="web")
    engram.add("The office coffee machine is on the third floor")
    # The README's call: keywords beside the query.
    hits = engram.recall("how do we deploy?", k=5, namespace="global", tags=["ops"])
    assert [h.memory.content for h in hits] == ["Deploys go through make release"]
    everywhere = engram.filters(all_namespaces=True)
    assert len(engram.recall("deploy", k=5, filters=everywhere, bump=False, min_relevance=0.0)) == 3
    assert engram.count(filters=everywhere) == 3 and engram.count(namespace="web") == 1
    assert [m.namespace for m in engram.list(filters=engram.filters(namespace="web"))] == ["web"]
    assert len(list(engram.export(all_namespaces=True))) == 3
    assert [r["namespace"] for r in engram.export(filters=engram.filters(namespace="web"))] == ["web"]
    with pytest.raises(UsageError, match="either filters or filter keywords"):
        engram.list(filters=everywhere, tags=["ops"])
    with pytest.raises(UsageError):
        engram.recall("deploy", namespace="web", filters=everywhere)
