"""The keyword index: BM25 search under the recall filters, and the term counts relevance reads."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest

from engram_cli.lang import text as textmod
from engram_cli.store import keywords as keywordsmod
from engram_cli.store.sql import where

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


def _ranked_in_sql(store: Any, terms: list[str], filters: Any, limit: int) -> list[tuple[int, float]]:
    """The answer by definition: every match ranked by BM25 (ties by pk), joined to the filters in SQL."""
    clause, params = where(filters)
    rows = store.rows(
        "WITH hits AS MATERIALIZED (SELECT rowid AS pk, bm25(memory_fts) AS rank FROM memory_fts "
        "WHERE memory_fts MATCH ?) "
        f"SELECT h.pk, h.rank FROM hits h JOIN memories m ON m.pk = h.pk WHERE {clause} ORDER BY h.rank, h.pk LIMIT ?",
        [keywordsmod.match_expression(terms), *params, limit],
    )
    return [(int(pk), -float(rank)) for pk, rank in rows]


@pytest.mark.parametrize("ranker", ["fts5", "scorer"])
def test_searching_answers_as_ranking_every_match_under_the_filters(
    filled: Any, monkeypatch: pytest.MonkeyPatch, ranker: str
) -> None:
    store = filled.store
    keywords = store.keywords
    if ranker == "fts5":
        monkeypatch.setattr(keywords, "_scored", lambda terms: None)
    else:
        keywords.keep_scorer()  # the in-memory scorer ranks every search (store.keyword_scorer)
    every = filled.filters(all_namespaces=True)
    alpha = filled.filters(namespace="alpha")
    scopes = [every, replace(every, types=["semantic"]), alpha, replace(alpha, types=["semantic"])]
    heads: list[int] = []
    stretches: list[int] = []
    head, check = keywords._head, keywordsmod.passing

    def head_spy(*args: Any) -> Any:
        found = head(*args)
        heads.append(len(found[0][0]))
        return found

    def passing_spy(*args: Any) -> Any:
        stretches.append(len(args[1]))
        return check(*args)

    # A short head and first stretch, so that both fall short often and the walk goes on.
    monkeypatch.setattr(keywordsmod, "HEAD_PER_LIMIT", 2)
    monkeypatch.setattr(keywords, "_head", head_spy)
    monkeypatch.setattr(keywordsmod, "passing", passing_spy)
    for limit in (3, 7, 20):
        for query in QUERIES:
            terms = textmod.query_terms(query)
            expected = [_ranked_in_sql(store, terms, filters, limit) for filters in scopes]
            # Without a namespace filter from the head, else (or when the head falls short) from every match.
            assert keywords.search_many(terms, scopes[:2], limit) == expected[:2], (query, limit)
            assert keywords.search_many(terms, scopes, limit) == expected, (query, limit)
            for filters, answer in zip(scopes, expected, strict=True):
                assert keywords.search(terms, filters, limit) == answer, (query, limit, filters)
    assert bool(heads) == (ranker == "fts5"), "the head is FTS5's own shortcut"
    # A head that holds every match is the whole ranking: however few pass, FTS5 is not asked again.
    ranked: list[str] = []
    rank_all = keywords._ranked
    monkeypatch.setattr(keywords, "_ranked", lambda match: ranked.append(match) or rank_all(match))
    assert keywords.search(["deploy"], scopes[1], 200) == _ranked_in_sql(store, ["deploy"], scopes[1], 200)
    assert ranked == []
    # Some walks went past their first stretch (each stretch four times the last).
    assert any(later == 4 * first for first, later in itertools.pairwise(stretches))
    tied = [score for _, score in keywords.search(["deploy"], every, 20)]
    assert len(set(tied)) < len(tied)


def test_a_walk_whose_filters_keep_few_reads_what_they_keep(filled: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    store = filled.store
    keywords = store.keywords
    every = filled.filters(all_namespaces=True)
    times = [str(r[0]) for r in store.rows("SELECT created_at FROM memories ORDER BY created_at")]
    narrow = replace(every, since=times[15], until=times[21])  # a time window: a few of 40 memories
    assert 0 < len(store.memories.pks(narrow)) < 10
    read: list[int] = []
    read_all = keywords._passing_all
    monkeypatch.setattr(keywords, "_passing_all", lambda f, most: read.append(most) or read_all(f, most))
    monkeypatch.setattr(keywordsmod, "HEAD_PER_LIMIT", 1)
    monkeypatch.setattr(keywordsmod, "NARROW_WALK", 4)
    for query in QUERIES:
        terms = textmod.query_terms(query)
        for filters in (narrow, every):
            assert keywords.search(terms, filters, 8) == _ranked_in_sql(store, terms, filters, 8), (query, filters)
    assert read, "no walk read the memories its filters keep"
    # Filters that keep more memories than are left to check: the walk goes on checking them.
    monkeypatch.setattr(keywordsmod, "NARROW_WALK", 1)
    wide = replace(every, types=["semantic"])
    for query in QUERIES:
        terms = textmod.query_terms(query)
        assert keywords.search(terms, wide, 40) == _ranked_in_sql(store, terms, wide, 40), query


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
