"""The keyword index: BM25 search under the recall filters, and the term counts relevance reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from engram_cli.lang import text as textmod
from engram_cli.store import keywords as keywordsmod

WORDS = ["deploy", "rollback", "cache", "queue", "schema", "token", "invoice", "search"]


@pytest.fixture
def filled(engram: Any) -> Any:
    # Many texts of the same length sharing words: BM25 ties everywhere, the case where order is easiest to lose.
    items = [
        {
            "content": f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} step {i % 5} of the {WORDS[(i * 5 + 1) % 8]} plan",
            "namespace": ["alpha", "beta"][i % 2],
            "type": ["semantic", "episodic"][i % 3 % 2],
        }
        for i in range(90)
    ]
    engram.add_many(items, no_merge=True)
    return engram


QUERIES = ["deploy the cache", "rollback schema token", "invoice search queue step", "deploy", "plan"]


def test_search_from_the_head_of_the_matches_answers_as_ranking_them_all(
    filled: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled.store
    every = [filled.filters(all_namespaces=True), filled.filters(all_namespaces=True, type="semantic")]
    used: list[bool] = []
    head = store.keywords._search_head

    def spy(*args: Any) -> Any:
        found = head(*args)
        used.append(found is not None)
        return found

    for limit in (3, 7, 20):
        for filters in every:
            for query in QUERIES:
                terms = textmod.query_terms(query)
                monkeypatch.setattr(keywordsmod, "HEAD_PER_LIMIT", 2)
                monkeypatch.setattr(store.keywords, "_search_head", spy)
                fast = store.keywords.search(terms, filters, limit)
                monkeypatch.setattr(store.keywords, "_search_head", lambda *a: None)
                full = store.keywords.search(terms, filters, limit)
                assert fast == full, (query, limit, filters)
    # The head answered most searches itself, and there were ties for it to keep in order.
    assert sum(used) > len(used) // 2
    tied = [score for _, score in store.keywords.search(["deploy"], every[0], 20)]
    assert len(set(tied)) < len(tied)


def test_search_with_a_namespace_filter_keeps_only_that_namespace(filled: Any) -> None:
    store = filled.store
    alpha = {m.pk for m in filled.list(namespace="alpha", limit=1000)}
    found = store.keywords.search(textmod.query_terms("deploy cache"), filled.filters(namespace="alpha"), 50)
    assert found and {pk for pk, _ in found} <= alpha
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    statuses = replace(filled.filters(all_namespaces=True), statuses=["archived"])
    assert store.keywords.search(textmod.query_terms("deploy"), statuses, 50) == []


def test_term_counts_are_the_holders_restricted_to_the_candidates(filled: Any) -> None:
    store = filled.store
    terms = textmod.query_terms("deploy schema nothingsuch step")
    candidates = [pk for pk, _ in store.keywords.search(terms, filled.filters(all_namespaces=True), 30)][::2]
    counts = store.keywords.term_counts(terms, candidates)
    holders = store.keywords.holders(terms)
    assert set(counts) == set(holders)
    for term, held in holders.items():
        assert counts[term] == (len(held), held & set(candidates))
    assert counts[textmod.query_terms("nothingsuch")[0]] == (0, set())
    assert store.keywords.term_counts(terms, []) == {t: (len(h), set()) for t, h in holders.items()}
