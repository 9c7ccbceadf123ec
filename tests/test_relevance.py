"""Recall confidence: each hit's calibrated relevance, the floor, and "nothing relevant"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram_cli.memory import relevance

DEV_MEMORIES = [
    "The webshop uses pnpm, never npm or yarn, for installing packages",
    "Local Postgres for the webshop listens on port 5433, not 5432",
    "Deploy the billing API with `make deploy-billing` from the repository root",
    "CI runs on GitHub Actions with Node 22",
    "The user prefers tabs over spaces in Python files",
    "Staging database credentials live in 1Password under 'staging-db'",
    "周报每周五下午五点前发到企业微信群里",
    "后端服务用 uv 管理 Python 依赖，不要用 pip",
]


def _store(cli: Any) -> dict[str, str]:
    """Content -> id of a small store of developer memories."""
    ids: dict[str, str] = {}
    for text in DEV_MEMORIES:
        ids[text] = json.loads(cli("add", text, "--no-merge", "--json").stdout)["id"]
    return ids


def _access_counts(rows: Any) -> dict[str, int]:
    return {content: count for content, count in rows("SELECT content, access_count FROM memories")}


@pytest.mark.parametrize("model", sorted(relevance.calibrations()))
def test_relevance_is_a_probability_that_grows_with_the_cosine(model: str) -> None:
    calibration = relevance.calibration_for(model)
    for keyword in (0.0, 0.5, 1.0):
        for time in (None, True):
            chances = [
                calibration.probability(
                    relevance.Evidence(cosine=c / 100, cross_cosine=None, keyword=keyword, time=time)
                )
                for c in range(-100, 101, 5)
            ]
            assert all(0.0 <= p <= 1.0 for p in chances)
            assert chances == sorted(chances)
            assert chances[-1] > chances[0]  # a perfect match is more likely relevant than an opposite one
    without = relevance.Evidence(cosine=0.9, cross_cosine=None, keyword=0.0, time=None)
    with_words = relevance.Evidence(cosine=0.9, cross_cosine=None, keyword=1.0, time=None)
    assert calibration.probability(with_words) >= calibration.probability(without)


def test_the_semantic_evidence_starts_at_the_models_unrelated_cosine() -> None:
    calibration = relevance.Calibration("m", 0.0, (1.0, 0.0, 0.0, 0.0), {"latin-latin": 0.8, "cjk-cjk": 0.6})
    assert calibration.semantic(relevance.Evidence(0.8, None, 0.0, None)) == 0.0
    assert calibration.semantic(relevance.Evidence(0.7, None, 0.0, None)) == 0.0  # below unrelated is unrelated
    assert calibration.semantic(relevance.Evidence(0.9, None, 0.0, None)) == pytest.approx(0.5)
    zh = relevance.Evidence(0.8, None, 0.0, None, query_script="cjk", memory_script="cjk")
    assert calibration.semantic(zh) == pytest.approx(0.5)
    # The moved query is compared in the memory's own region.
    moved = relevance.Evidence(0.0, 0.8, 0.0, None, query_script="latin", memory_script="cjk")
    assert calibration.semantic(moved) == pytest.approx(0.5)


def test_every_bundled_model_is_calibrated() -> None:
    from engram_cli.embed import DEFAULT_MODEL_ID

    shipped = relevance.calibrations()
    assert DEFAULT_MODEL_ID in shipped
    for calibration in shipped.values():
        assert all(w >= 0 for w in calibration.weights)  # more evidence never lowers the chance
        assert "latin-latin" in calibration.unrelated


def test_an_unrelated_question_gets_nothing_relevant_and_bumps_nothing(cli: Any, rows: Any) -> None:
    _store(cli)
    table = cli("recall", "what is the capital of France")
    assert table.exit_code == 0 and table.stdout == ""
    assert "nothing relevant" in table.stderr
    assert json.loads(cli("recall", "what is the capital of France", "--json").stdout) == []
    assert cli("recall", "what is the capital of France", "-f", "card").stdout == ""
    assert set(_access_counts(rows).values()) == {0}


def test_a_chinese_unrelated_question_abstains_too(cli: Any, rows: Any) -> None:
    _store(cli)
    result = cli("recall", "法国的首都是哪里？", "--json")
    assert json.loads(result.stdout) == []
    assert "nothing relevant" in cli("recall", "法国的首都是哪里？").stderr
    assert set(_access_counts(rows).values()) == {0}


def test_only_hits_that_clear_the_floor_are_shown_and_bumped(cli: Any, rows: Any) -> None:
    _store(cli)
    hits = json.loads(cli("recall", "which port does the local postgres listen on?", "--json").stdout)
    assert hits and hits[0]["content"].startswith("Local Postgres")
    from engram_cli.config.settings import Recall

    floor = Recall().min_relevance
    assert all(floor <= h["relevance"] <= 1.0 for h in hits)
    counts = _access_counts(rows)
    shown = {h["content"] for h in hits}
    assert {c for c, n in counts.items() if n == 1} == shown
    assert len(shown) < len(DEV_MEMORIES)  # the rest were candidates too, under the floor: untouched


def test_min_relevance_zero_shows_every_candidate(cli: Any) -> None:
    _store(cli)
    everything = json.loads(
        cli(
            "recall", "what is the capital of France", "--min-relevance", "0", "-k", "20", "--json", "--no-touch"
        ).stdout
    )
    assert len(everything) == len(DEV_MEMORIES)
    assert all(0.0 <= h["relevance"] <= 1.0 for h in everything)
    table = cli("recall", "what is the capital of France", "--min-relevance", "0", "--no-touch").stdout
    assert "rel" in table


def test_relevance_is_shown_in_the_table_cards_and_explain(cli: Any) -> None:
    _store(cli)
    query = "how do I deploy the billing API?"
    hits = json.loads(cli("recall", query, "--json", "--explain", "--no-touch").stdout)
    top = hits[0]
    assert top["content"].startswith("Deploy the billing API")
    assert top["explain"]["relevance"] == pytest.approx(top["relevance"], abs=1e-4)
    assert top["explain"]["evidence"]["cosine"] > 0 and top["explain"]["evidence"]["keyword_share"] > 0
    card = cli("recall", query, "-f", "card", "--no-touch").stdout
    assert f"[relevance: {top['relevance']:.2f}]" in card
    table = cli("recall", query, "--no-touch").stdout
    assert f"{top['relevance']:.2f}" in table


def test_min_relevance_out_of_range_is_a_usage_error(cli: Any) -> None:
    _store(cli)
    result = cli("recall", "deploy", "--min-relevance", "1.5", ok=False)
    assert result.exit_code != 0
    assert "--min-relevance" in result.stderr and "between 0 and 1" in result.stderr


def test_the_library_drops_and_bumps_alike(engram: Any) -> None:
    for text in DEV_MEMORIES:
        engram.add(text, no_merge=True)
    hits = engram.recall("what is the capital of France")
    assert list(hits) == [] and hits.nothing_relevant
    assert all(m.access_count == 0 for m in engram.list())
    assert len(engram.recall("what is the capital of France", min_relevance=0.0, k=3, bump=False)) == 3


def test_eval_reports_abstention_over_no_answer_queries(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "set"
    root.mkdir()
    memories = [{"id": f"m{i}", "content": text} for i, text in enumerate(DEV_MEMORIES)]
    queries = [
        {"query": "which package manager does the webshop use?", "expected": {"ids": ["m0"]}},
        {"query": "how do I deploy the billing API?", "expected": {"ids": ["m2"]}},
        {"query": "what is the capital of France", "expected": {"none": True}},
        {"query": "法国的首都是哪里？", "expected": {"none": True}},
    ]
    (root / "memories.jsonl").write_text("".join(json.dumps(m) + "\n" for m in memories), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    data = json.loads(cli("eval", "--dataset", str(root), "--json").stdout)
    assert data["queries"] == 2 and data["no_answer_queries"] == 2
    assert data["recall@5"] == 1.0  # over the answerable queries only
    assert data["abstention"] == 1.0
    table = cli("eval", "--dataset", str(root)).stdout
    assert "abstain" in table and "1.000 of 2" in table
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query": "x", "expected": {"none": False}}) + "\n", encoding="utf-8")
    result = cli("eval", str(bad), ok=False)
    assert "expected.none must be true" in result.stderr
