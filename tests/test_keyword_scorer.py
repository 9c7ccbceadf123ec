"""The keyword scorer: FTS5's BM25 computed in numpy must be FTS5's, bit for bit, whoever wrote last."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.store import connect, keyword_log
from engram_cli.store import keyword_scorer as scorermod
from engram_cli.store.db import connect_read_only
from engram_cli.store.keywords import match_expression

# Stemmed alike in pairs (deploy/deploying, cache/caching), CJK bigrams, an identifier, a word no row has.
WORDS = ["deploy", "deploying", "cache", "caching", "queue", "schema", "token", "数据", "据库", "user_id", "zebra"]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "kw.db"


@pytest.fixture
def store(path: Path) -> Iterator[Any]:
    s = connect(path, create_dirs=True)
    try:
        yield s
    finally:
        s.close()


def put(store: Any, rows: dict[int, str]) -> None:
    with store.write():
        for pk, terms in rows.items():
            store.keywords.put(pk, terms)


def fts5(store: Any, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The answer by definition: FTS5 ranks every match itself."""
    return store.keywords._ranked(match_expression(terms))


def scored(store: Any, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    scorer = store.keywords._shared()
    with scorer.lock, store.read():
        scorer.refresh(store)
        stems = scorer.stems(store, terms)
        assert stems is not None
        found = scorer.rank(store, stems)
    assert found is not None
    return found


def assert_same(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> None:
    # Exactly: the same pks in the same order with the same float64 scores, ties included.
    assert a[0].tolist() == b[0].tolist()
    assert a[1].tolist() == b[1].tolist()


texts = st.lists(st.sampled_from(WORDS[:-1]), min_size=1, max_size=12).map(" ".join)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    corpus=st.dictionaries(st.integers(1, 400), texts, min_size=1, max_size=60),
    rewrites=st.dictionaries(st.integers(1, 400), texts, max_size=10),
    deletes=st.lists(st.integers(1, 400), max_size=10),
    query=queries,
)
def test_scores_are_fts5s_bit_for_bit_through_writes(
    tmp_path_factory: pytest.TempPathFactory,
    corpus: dict[int, str],
    rewrites: dict[int, str],
    deletes: list[int],
    query: list[str],
) -> None:
    s = connect(tmp_path_factory.mktemp("kw") / "kw.db")
    try:
        put(s, corpus)
        assert_same(scored(s, query), fts5(s, query))
        put(s, rewrites)  # rows replaced and rows added, after the scorer read every length
        with s.write():
            for pk in deletes:
                s.keywords.delete(pk)
        assert_same(scored(s, query), fts5(s, query))
        # Repeated and differently spelled terms of one stem each count, as FTS5 counts every phrase.
        twice = [*query, query[0]]
        assert_same(scored(s, twice), fts5(s, twice))
    finally:
        s.close()


def test_term_counts_are_fts5s(store: Any) -> None:
    put(store, {pk: " ".join(WORDS[(pk * j) % 10] for j in range(1, 5)) for pk in range(1, 80)})
    terms = ["deploying", "数据", "zebra", "queue"]
    candidates = list(range(1, 80, 3))
    by_fts5 = store.keywords.term_counts(terms, candidates)
    store.keywords.keep_scorer()
    assert store.keywords.term_counts(terms, candidates) == by_fts5


def test_the_first_search_asks_fts5_and_later_ones_the_scorer(store: Any) -> None:
    put(store, {1: "deploy cache", 2: "cache queue", 3: "schema"})
    assert store.keywords._scored(["cache"]) is None  # one search: reading every length would not pay
    assert not store.keywords._shared().ready
    assert_same(store.keywords._scored(["cache"]), fts5(store, ["cache"]))
    assert store.keywords._shared().ready


def test_a_scorer_that_ranks_otherwise_than_fts5_is_not_used(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    put(store, {pk: "cache " * (pk % 3 + 1) + "queue" * (pk % 2) for pk in range(1, 30)})
    monkeypatch.setattr(scorermod, "K1", 1.25)  # as if a later FTS5 weighed term frequency otherwise
    store.keywords.keep_scorer()
    assert store.keywords._scored(["cache"]) is None
    assert store.keywords._shared().agrees is False


def test_a_term_of_several_tokens_is_left_to_fts5(store: Any) -> None:
    put(store, {1: "deploy cache", 2: "cache deploy", 3: "deploy"})
    store.keywords.keep_scorer()
    assert store.keywords._shared().stems(store, ["deploy-cache"]) is None  # a phrase: its tokens must be adjacent
    assert store.keywords._scored(["cache", "deploy-cache"]) is None


def test_another_connections_writes_are_seen(path: Path, store: Any) -> None:
    put(store, {pk: f"cache {'queue ' * (pk % 4)}schema" for pk in range(1, 50)})
    store.keywords.keep_scorer()
    other = connect(path)
    try:
        put(other, {7: "cache cache cache", 60: "cache token", 61: "queue"})
        with other.write():
            other.keywords.delete(8)
    finally:
        other.close()
    assert_same(scored(store, ["cache", "queue"]), fts5(store, ["cache", "queue"]))


def test_a_log_trimmed_past_the_scorer_reads_every_length_again(
    path: Path, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword_log, "TRIM_EVERY", 4)
    monkeypatch.setattr(keyword_log, "LOG_KEEP", 4)
    put(store, {pk: "cache queue" for pk in range(1, 10)})
    store.keywords.keep_scorer()
    other = connect(path)
    try:
        for pk in range(1, 13):
            put(other, {pk: "cache " * (pk % 3 + 1)})
    finally:
        other.close()
    assert store.scalar("SELECT min(seq) FROM keyword_changes") > 10  # the scorer's last change is gone
    loads = _count_loads(monkeypatch)
    assert_same(scored(store, ["cache", "queue"]), fts5(store, ["cache", "queue"]))
    assert loads == [1]


def test_more_changes_than_it_reads_one_by_one_reads_every_length_again(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scorermod, "MAX_CHANGES", 3)
    put(store, {pk: "cache" for pk in range(1, 5)})
    store.keywords.keep_scorer()
    loads = _count_loads(monkeypatch)
    put(store, {2: "cache queue"})
    assert_same(scored(store, ["cache"]), fts5(store, ["cache"]))
    assert loads == []  # one change: applied
    put(store, {pk: "queue cache cache" for pk in range(5, 10)})
    assert_same(scored(store, ["cache"]), fts5(store, ["cache"]))
    assert loads == [1]


def test_a_restored_backup_is_another_history(store: Any) -> None:
    put(store, {pk: "cache queue" for pk in range(1, 20)})
    store.keywords.keep_scorer()
    seen = store.scalar("SELECT max(seq) FROM keyword_changes")
    # The file put back from a backup and written again: the change the scorer saw last has the same
    # number as before, but it is another change (row 5 rewritten), with another token.
    with store.write():
        store.execute("DELETE FROM keyword_changes WHERE seq = ?", (seen,))
        store.execute("INSERT INTO keyword_changes (seq, memory_pk, token) VALUES (?, 5, 1)", (seen,))
        store.execute("DELETE FROM memory_fts WHERE rowid = 5")
        store.execute("INSERT INTO memory_fts (rowid, terms) VALUES (5, 'cache cache cache cache')")
    assert_same(scored(store, ["cache"]), fts5(store, ["cache"]))


def test_a_rolled_back_write_leaves_no_trace(store: Any) -> None:
    put(store, {pk: "cache queue" for pk in range(1, 20)})
    store.keywords.keep_scorer()
    with pytest.raises(RuntimeError), store.write():
        store.keywords.put(4, "cache " * 20)
        store.keywords.put(99, "cache")
        assert store.keywords._scored(["cache"]) is not None  # the scorer reads the writes not yet committed
        raise RuntimeError("undo")
    # The change it saw last is gone: it reads every length again (a later write that gets the same
    # sequence number has another token).
    assert_same(scored(store, ["cache"]), fts5(store, ["cache"]))


def test_the_scorer_outlives_the_store_but_not_the_file(path: Path, store: Any) -> None:
    put(store, {1: "cache", 2: "queue cache"})
    store.keywords.keep_scorer()
    store.close()
    again = connect(path)
    try:
        assert again.keywords._shared().ready  # the warm service opens the file for every prompt
    finally:
        again.close()
    path.unlink()
    anew = connect(path)
    try:
        assert not anew.keywords._shared().ready  # another database at the same path
    finally:
        anew.close()


def test_a_read_only_store_scores_too(path: Path, store: Any) -> None:
    put(store, {1: "cache", 2: "queue cache", 3: "token"})
    store.close()
    reader = connect_read_only(path)
    try:
        reader.keywords.keep_scorer()
        assert_same(scored(reader, ["cache", "token"]), fts5(reader, ["cache", "token"]))
    finally:
        reader.close()


def test_recall_ranks_alike_before_and_after_the_scorer(engram: Any) -> None:
    engram.add_many(
        [{"content": f"the {w} step {i} of deploying the {WORDS[i % 7]} service"} for i, w in enumerate(WORDS * 4)],
        no_merge=True,
    )
    first = [h.to_dict(explain=True) for h in engram.recall("deploy the cache queue", k=8, bump=False)]
    assert not engram.store.keywords._shared().ready
    again = [h.to_dict(explain=True) for h in engram.recall("deploy the cache queue", k=8, bump=False)]
    assert engram.store.keywords._shared().ready
    assert again == first


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    loads: list[int] = []
    load = scorermod.KeywordScorer._load

    def counted(self: Any, db: Any) -> None:
        loads.append(1)
        load(self, db)

    monkeypatch.setattr(scorermod.KeywordScorer, "_load", counted)
    return loads


def test_row_counts_are_fts5s_own_through_deletes(store: Any) -> None:
    assert store.keywords.documents() == 0 == store.evidence.documents()  # before any row
    put(store, {pk: "cache" for pk in range(1, 30)})
    with store.write():
        for pk in (3, 4, 5):
            store.keywords.delete(pk)
        for pk in range(1, 8):
            store.execute("INSERT INTO evidence_fts (rowid, terms) VALUES (?, 'cache queue')", (pk,))
        store.execute("DELETE FROM evidence_fts WHERE rowid IN (2, 6)")
    put(store, {4: "queue", 40: "token"})
    assert store.keywords.documents() == store.scalar("SELECT count(*) FROM memory_fts_docsize") == 28
    assert store.evidence.documents() == store.scalar("SELECT count(*) FROM evidence_fts_docsize") == 5


def test_the_postings_kept_between_changes_are_bounded(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scorermod, "MEMO_ROWS", 25)
    put(store, {pk: "cache queue" if pk % 2 else "cache token" for pk in range(1, 21)})
    store.keywords.keep_scorer()
    scorer = store.keywords._shared()
    for terms in (["cache"], ["queue", "token"], ["cache", "queue"]):
        assert_same(scored(store, terms), fts5(store, terms))
        assert sum(len(pks) for pks, _ in scorer._memo.values()) <= 25
