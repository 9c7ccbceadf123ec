"""Recall beyond plain fusion: near-copies do not crowd the top k."""

from __future__ import annotations

from dataclasses import replace
from typing import Any


def test_near_copies_go_behind_distinct_hits(engram: Any) -> None:
    first = engram.add("The user prefers tabs over spaces for indentation.", no_merge=True).memory
    engram.add("The user prefers tabs over spaces for indentation!", no_merge=True)
    engram.add("The user prefers tabs over spaces for indentation", no_merge=True)
    other = engram.add("Indentation in the Makefile must use tabs, never spaces", no_merge=True).memory
    ids = [h.memory.id for h in engram.recall("tabs or spaces for indentation?", k=2, bump=False)]
    assert first.id in ids and other.id in ids
    s = engram.settings
    engram.config = replace(engram.config, settings=replace(s, recall=replace(s.recall, diversify=False)))
    plain = [h.memory.id for h in engram.recall("tabs or spaces for indentation?", k=2, bump=False)]
    assert other.id not in plain  # without the check, two copies fill the top two


def test_the_shifted_query_moves_from_one_script_region_to_the_other() -> None:
    import numpy as np

    from engram_cli.memory import crosslingual

    means = {"latin": np.array([1.0, 0.0, 0.0], dtype=np.float32), "cjk": np.array([0.0, 1.0, 0.0], dtype=np.float32)}
    query = np.array([0.6, 0.0, 0.8], dtype=np.float32)
    moved = crosslingual.shifted(query, "latin", means)
    assert moved is not None
    other, vector = moved
    assert other == "cjk"
    assert np.allclose(vector, np.array([-0.4, 1.0, 0.8]) / np.linalg.norm([-0.4, 1.0, 0.8]))
    assert crosslingual.shifted(query, "latin", {"latin": means["latin"]}) is None


SERVICES = [
    "billing",
    "search",
    "checkout",
    "auth",
    "orders",
    "inventory",
    "payments",
    "shipping",
    "email",
    "media",
    "reports",
    "export",
    "import",
    "gateway",
    "metrics",
    "alerts",
    "backup",
    "cache",
    "queue",
    "scheduler",
]
ENGLISH = [f"The {s} service keeps its logs in bucket {s}-logs-{i}" for i, s in enumerate(SERVICES)]
CHINESE = [
    f"{s}服务的值班负责人是第{i}组"
    for i, s in enumerate(
        [
            "账单",
            "搜索",
            "结算",
            "认证",
            "订单",
            "库存",
            "支付",
            "物流",
            "邮件",
            "媒体",
            "报表",
            "导出",
            "导入",
            "网关",
            "监控",
            "告警",
            "备份",
            "缓存",
            "队列",
            "调度",
        ]
    )
]


def test_a_query_also_searches_the_other_language_and_says_so(engram: Any) -> None:
    engram.add_many([{"content": t} for t in ENGLISH + CHINESE], no_merge=True)
    hits = engram.recall("搜索服务的日志存在哪个桶里？", k=10, bump=False)
    crossed = [h for h in hits if h.explain["cross_language"]]
    assert crossed and all(h.memory.content in ENGLISH for h in crossed)
    means = engram.store.setting("script_means:multilingual-e5-small-q4-v1")
    assert means is not None and '"count": 40' in means
    s = engram.settings
    engram.config = replace(engram.config, settings=replace(s, recall=replace(s.recall, cross_weight=0.0)))
    assert not any(h.explain["cross_language"] for h in engram.recall("搜索服务的日志存在哪个桶里？", k=10, bump=False))


def test_time_words_prefer_memories_from_that_time(engram: Any) -> None:
    march = engram.add(
        "Redis in the webshop cluster failed over to the replica", created_at="2026-03-10T10:00:00Z"
    ).memory
    november = engram.add("Redis in the webshop cluster ran out of memory", created_at="2026-11-18T10:00:00Z").memory
    now = "2026-11-26T09:00:00Z"
    assert engram.recall("what went wrong with redis last week?", k=1, bump=False, now=now)[0].memory.id == november.id
    assert engram.recall("what went wrong with redis in March?", k=1, bump=False, now=now)[0].memory.id == march.id
    assert engram.recall("三月份 redis 出了什么问题", k=1, bump=False, now=now)[0].memory.id == march.id
    hit = engram.recall("redis last week", k=2, bump=False, now=now)[0]
    assert hit.explain["time_window"]["window"] == ["last week"]


def test_cli_recall_reads_time_words_as_of_now(cli: Any) -> None:
    cli("add", "Redis in the webshop cluster failed over to the replica", "--at", "2026-03-10T10:00:00Z")
    cli("add", "Redis in the webshop cluster ran out of memory", "--at", "2026-11-18T10:00:00Z")
    import json

    hits = json.loads(cli("recall", "what went wrong with redis last week?", "--now", "2026-11-26", "--json").stdout)
    assert "out of memory" in hits[0]["content"]
    bad = cli("recall", "redis", "--now", "soon", ok=False)
    assert bad.exit_code != 0 and "now" in bad.stderr


def test_the_vector_search_applies_the_scope_filters_and_sql_checks_the_rest(engram: Any, monkeypatch: Any) -> None:
    from engram_cli.memory.model import Filters
    from engram_cli.memory.recall import _index_keeps_all

    assert _index_keeps_all(Filters(namespaces=["a", "b"], agent="bot", types=["semantic"]))
    assert _index_keeps_all(Filters(namespaces=None, statuses=["active", "archived"]))
    assert not _index_keeps_all(Filters(namespaces=[f"ns{i}" for i in range(5)]))  # too many for the search
    assert not _index_keeps_all(Filters(tags=["ops"]))
    assert not _index_keeps_all(Filters(since="2024-01-01T00:00:00Z"))
    assert not _index_keeps_all(Filters(session="s1"))

    engram.add("Deploys go out from the release branch on Tuesdays", tags=["ops"])
    engram.add("Deploys are frozen during the last week of the quarter")
    checked: list[list[int]] = []  # the vector neighbours checked against the filters in SQL
    check = engram.store.memories.passing
    monkeypatch.setattr(
        engram.store.memories, "passing", lambda pks, filters: checked.append(list(pks)) or check(pks, filters)
    )
    plain = engram.recall("when do deploys go out?", bump=False, min_relevance=0.0)
    assert len(plain) == 2 and not checked
    tagged = engram.recall("when do deploys go out?", tags=["ops"], bump=False, min_relevance=0.0)
    assert checked
    assert [h.memory.content for h in tagged] == ["Deploys go out from the release branch on Tuesdays"]
