"""engram eval: labelled queries in, recall@k / MRR / nDCG / interference / latency out."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from engram_cli.errors import InvalidInput
from engram_cli.memory import evaluation
from engram_cli.memory.model import Memory


def _memory(mid: str, content: str = "text", **metadata: Any) -> Memory:
    return Memory(
        pk=0, id=mid, namespace="default", agent="user", session=None, type="semantic", content=content,
        summary=None, content_hash="", embedding_model=None, importance=0.5, confidence=1.0, decay_score=1.0,
        access_count=0, last_access_at=None, created_at="2026-01-01T00:00:00.000000Z",
        updated_at="2026-01-01T00:00:00.000000Z", status="active", version=1, superseded_by=None,
        consolidated_into=None, metadata=metadata,
    )  # fmt: skip


def test_metrics_on_known_rankings() -> None:
    queries = evaluation.parse_queries(
        [
            json.dumps({"query": "two answers", "expected": {"ids": ["aaaa", "bbbb"]}, "category": "multi"}),
            json.dumps({"query": "by text", "expected": {"contains": ["PNPM"]}, "category": "single"}),
            json.dumps({"query": "by metadata", "expected": {"metadata": {"turn": 7}}, "category": "single"}),
        ]
    )
    hits = {
        "two answers": [_memory("xxxx"), _memory("aaaa-1"), _memory("yyyy"), _memory("bbbb-2")],
        "by text": [_memory("m1", "uses pnpm")],
        "by metadata": [_memory("m2", turn=3), _memory("m3", turn=7)],
    }
    report = evaluation.run(queries, lambda q, depth: hits[q.text], ks=(1, 2, 4))
    first, second, third = report.results
    assert first.found == {1: 0.0, 2: 0.5, 4: 1.0} and first.flags == [False, True, False, True]
    assert second.found == {1: 1.0, 2: 1.0, 4: 1.0}
    assert third.found == {1: 0.0, 2: 1.0, 4: 1.0}
    overall = report.overall
    assert overall.recall[1] == pytest.approx(1 / 3)
    assert overall.mrr == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)
    ideal_two = 1 + 1 / math.log2(3)
    ndcg_first = (1 / math.log2(3) + 1 / math.log2(5)) / ideal_two
    assert overall.ndcg == pytest.approx((ndcg_first + 1 + 1 / math.log2(3)) / 3)
    # Interference counts the irrelevant hits among the k slots.
    assert overall.interference[2] == pytest.approx((1 / 2 + 0 + 1 / 2) / 3)
    assert report.groups["category=single"].queries == 2 and report.groups["category=multi"].recall[4] == 1.0
    assert set(report.latency_ms) == {"p50", "p95"}


def test_dataset_ids_match_through_metadata() -> None:
    (query,) = evaluation.parse_queries([json.dumps({"query": "q", "expected": {"ids": ["c01-s02-t003"]}})])
    assert evaluation.relevant(query, _memory("9f9f", eval_id="c01-s02-t003"))
    assert not evaluation.relevant(query, _memory("9f9f", eval_id="c01-s02-t004"))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 1: not JSON"),
        ("[1, 2]", "line 1: expected an object"),
        ('{"expected": {"ids": ["a"]}}', "'query' must be non-empty text"),
        ('{"query": "q"}', "exactly one of ids, contains, metadata"),
        ('{"query": "q", "expected": {"ids": []}}', "non-empty list of strings"),
        ('{"query": "q", "expected": {"regex": "x"}}', "unknown expectation 'regex'"),
        ('{"query": "q", "expected": {"ids": ["a"]}, "filters": 3}', "'filters' must be an object"),
    ],
)
def test_bad_query_lines_name_their_line(line: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        evaluation.parse_queries([line])


def _dataset(root: Path) -> Path:
    root.mkdir()
    memories = [
        {"id": "m1", "content": "Deploys of billing-api go through make release", "namespace": "billing-api"},
        {"id": "m2", "content": "The staging database listens on port 5433", "namespace": "infra"},
        {"id": "m3", "content": "用户习惯用 pnpm 而不是 npm", "namespace": "webshop"},
        {"id": "m4", "content": "The office printer is on floor two", "namespace": "infra"},
    ]
    queries = [
        {"query": "how do we ship billing-api", "expected": {"ids": ["m1"]}, "lang": "en"},
        {"query": "staging database port", "expected": {"ids": ["m2"]}, "lang": "en"},
        {"query": "用户喜欢哪个包管理器", "expected": {"ids": ["m3"]}, "lang": "zh"},
        {"query": "printer", "namespace": "infra", "expected": {"contains": ["printer"]}, "lang": "en"},
    ]
    (root / "memories.jsonl").write_text("".join(json.dumps(m) + "\n" for m in memories), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return root


def test_eval_on_a_dataset_compares_the_retrievers(cli: Any, tmp_path: Path, rows: Any) -> None:
    dataset = _dataset(tmp_path / "tiny")
    cli("config", "set", "recall.min_relevance", "0")  # ranking is measured here, not the floor
    data = json.loads(cli("eval", "--dataset", str(dataset), "--mode", "all", "--json").stdout)
    assert [d["mode"] for d in data] == ["hybrid", "bm25", "dense"]
    hybrid = data[0]
    assert hybrid["queries"] == 4 and hybrid["recall@5"] == 1.0 and hybrid["mrr"] > 0.8
    assert set(hybrid["groups"]) == {"lang=en", "lang=zh"}
    # The dataset lives in its own cached database; the user's database is untouched.
    assert not (tmp_path / "engram-home" / "engram.db").exists()
    cached = list((tmp_path / "engram-home" / "cache" / "eval").glob("*.db"))
    assert len(cached) == 1
    again = json.loads(cli("eval", "--dataset", str(dataset), "--json").stdout)
    assert again["recall@5"] == 1.0 and len(list(cached[0].parent.glob("*.db"))) == 1


def test_eval_of_the_current_database_and_no_bump(cli: Any, tmp_path: Path, rows: Any) -> None:
    memory_id = json.loads(cli("add", "Releases are tagged from the release branch", "--json").stdout)["id"]
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "where do release tags come from", "expected": {"ids": [memory_id[:8]]}}))
    result = cli("eval", str(queries), "--k", "1,3")
    assert "R@1" in result.stdout and "1.000" in result.stdout
    assert rows("SELECT access_count FROM memories") == [(0,)]  # measuring is not remembering


def test_eval_usage_errors(cli: Any, tmp_path: Path) -> None:
    assert cli("eval", ok=False).exit_code == 2
    assert cli("eval", "--dataset", str(tmp_path), "--k", "0", ok=False).exit_code == 2
    missing = cli("eval", "--dataset", str(tmp_path), ok=False)
    assert missing.exit_code == 1 and "no *memories.jsonl" in missing.stderr
    assert cli("eval", "--dataset", str(tmp_path), "--mode", "magic", ok=False).exit_code == 2


def test_chat_turns_get_their_neighbours_as_context() -> None:
    records = [
        {"content": "Did you pick the blue or the red sofa in the end?", "metadata": {"session": 1, "turn": 1}},
        {"content": "the blue one", "metadata": {"session": 1, "turn": 2}},
        {"content": "Nice, it will suit the living room really well I think.", "metadata": {"session": 1, "turn": 3}},
        {"content": "ok", "metadata": {"session": 2, "turn": 1}},
        {"content": "not a chat turn", "metadata": {}},
    ]
    evaluation.add_turn_context(records)
    assert records[1]["metadata"]["context"].startswith("Did you pick the blue or the red sofa")
    assert "living room" in records[1]["metadata"]["context"]
    assert records[0]["metadata"]["context"] == "the blue one"
    assert "context" not in records[3]["metadata"]  # nothing around it in its session
    assert "context" not in records[4]["metadata"]


def test_context_shapes_the_vector_but_is_not_content_or_keywords(engram: Any, rows: Any) -> None:
    question = "Ana: so which sofa did you end up buying, the blue or the grey one?"
    ranks = {}
    for namespace, metadata in (("with", {"context": question}), ("without", {})):
        answer = engram.add("Lee: the blue one, it arrives on Friday", namespace=namespace, metadata=metadata).memory
        for other in ("Lee: the grey sofa at the shop was too small for the living room",
                      "Lee: the blue car needs new tyres", "Lee: we bought a new lamp yesterday"):  # fmt: skip
            engram.add(other, namespace=namespace, no_merge=True)
        hits = engram.recall("which sofa did Lee buy?", k=4, namespace=namespace, bump=False, min_relevance=0.0)
        ranks[namespace] = [h.memory.id for h in hits].index(answer.id)
        assert hits[ranks[namespace]].memory.content == "Lee: the blue one, it arrives on Friday"
    assert ranks["with"] < ranks["without"]
    assert rows("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'ana'") == [(0,)]  # context is not indexed
