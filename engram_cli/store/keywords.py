"""Keywords: the FTS5 index of memories, one row per memory keyed by its pk.

The terms are analysed before they get here (``engram_cli.lang.text``: CJK bigrams, split
identifiers), so FTS5 only stems and counts them; a query is searched as any of its terms,
ranked by BM25. The index is contentless: it keeps no text, only what it needs to match.

A process's first search of a database asks FTS5 to rank the matches. From its second search on, it
ranks them with :class:`~engram_cli.store.keyword_scorer.KeywordScorer` (the same scores, several times
faster), which keeps every row's length in memory: worth it only to a process that searches again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram_cli.memory.model import Filters
from engram_cli.store.fts5_format import fts5_totals
from engram_cli.store.keyword_log import log_change
from engram_cli.store.sql import passing, where

if TYPE_CHECKING:
    import numpy as np

    from engram_cli.store.database import Database
    from engram_cli.store.keyword_scorer import KeywordScorer

log = logging.getLogger(__name__)

# How many of the best matches, per hit wanted, a search without a namespace filter takes from FTS5 before it
# falls back to ranking every match; also the first stretch of the ranking checked against the filters.
HEAD_PER_LIMIT = 8
# Matches a walk whose filters keep few of them (a time window) may still have to check before it reads the
# memories the filters keep instead (when they are fewer than the matches left): each check is a row lookup.
NARROW_WALK = 2_000


def match_expression(terms: Sequence[str]) -> str | None:
    """An FTS5 MATCH expression for any of ``terms``, each quoted as a phrase; None without terms."""
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class Keywords:
    def __init__(self, store: Database) -> None:
        self.store = store
        self._scorer: KeywordScorer | None = None

    def put(self, pk: int, terms: str) -> None:
        """Make ``terms`` (space-separated, analysed) the keyword row of memory ``pk``."""
        # A contentless table has no UPDATE: delete, then insert.
        self.store.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
        self.store.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)", (pk, terms))
        log_change(self.store, pk)

    def delete(self, pk: int) -> None:
        self.store.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
        log_change(self.store, pk)

    def keep_scorer(self) -> None:
        """Rank with the in-memory scorer from the next search on (a process that will search many times),
        reading every row's length now rather than in the middle of its second search."""
        scorer = self._shared()
        if scorer is not None:
            with scorer.lock, self.store.read():
                scorer.refresh(self.store)

    def _shared(self) -> KeywordScorer | None:
        from engram_cli.store.keyword_scorer import scorer_for

        if self._scorer is None:
            self._scorer = scorer_for(self.store)
        return self._scorer

    def _scored(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Every match of ``terms`` ranked by the in-memory scorer, or None: FTS5 ranks them (see the module
        docstring)."""
        scorer = self._shared()
        if scorer is None:
            return None
        with scorer.lock:
            scorer.searches += 1
            if not scorer.ready and scorer.searches < 2:
                return None
            with self.store.read():  # the lengths, the postings and FTS5's totals from one snapshot
                stems = self._stems(scorer, terms)
                return None if stems is None else scorer.rank(self.store, stems)

    def _stems(self, scorer: KeywordScorer, terms: Sequence[str]) -> list[str] | None:
        """``scorer`` brought up to the caller's read transaction, and ``terms`` as it looks them up; None when
        it may not rank them (it ranks otherwise than FTS5, or a term is a phrase). The caller holds its lock."""
        scorer.refresh(self.store)
        if scorer.agrees is None:
            scorer.agrees = self._agrees(scorer)
        return scorer.stems(self.store, terms) if scorer.agrees else None

    def _agrees(self, scorer: KeywordScorer) -> bool:
        """Whether ``scorer`` ranks a few of the index's own terms exactly as this SQLite's FTS5 does. Its
        formula is FTS5's as of SQLite 3.54; an FTS5 that scored otherwise is left to rank by itself."""
        import numpy as np

        terms = scorer.sample_terms(self.store, 3)
        if not terms:
            return True  # nothing indexed yet: nothing to rank differently
        match = match_expression(terms)
        assert match is not None
        own = scorer.rank(self.store, terms)
        theirs = self._ranked(match)
        same = own is not None and np.array_equal(own[0], theirs[0]) and np.array_equal(own[1], theirs[1])
        if not same:
            log.warning("the keyword scorer ranks otherwise than this SQLite's FTS5; FTS5 ranks every search")
        return same

    def search(self, terms: Sequence[str], filters: Filters, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` memories passing ``filters`` that have any of ``terms``: (pk, score), best first.

        The score is BM25 turned so that higher is better; equal scores rank by pk.
        """
        return self.search_many(terms, [filters], limit)[0]

    def search_many(
        self, terms: Sequence[str], filter_sets: Sequence[Filters], limit: int
    ) -> list[list[tuple[int, float]]]:
        """:meth:`search` under each of ``filter_sets``, FTS5 ranking the matches once for them all.

        Recall asks twice for one query (its filters, and those narrowed to a time window): ranking every
        match is most of a search's cost, so it is done once and each set of filters walks the ranking.
        """
        match = match_expression(terms)
        if match is None:
            return [[] for _ in filter_sets]
        found: list[list[tuple[int, float]] | None] = [None] * len(filter_sets)
        scored = self._scored(terms)
        if scored is not None:
            return [self._walk(scored, filters, limit) for filters in filter_sets]
        # Without a namespace or model filter, most of the best matches pass the filters: FTS5 sorts its
        # matches itself and only the head leaves SQLite.
        if all(f.namespaces is None and f.embedding_model is None for f in filter_sets):
            head, every = self._head(match, HEAD_PER_LIMIT * limit)
            for i, filters in enumerate(filter_sets):
                kept = self._walk(head, filters, limit)
                found[i] = kept if len(kept) >= limit or every else None
        if any(f is None for f in found):
            ranked = self._ranked(match)
            for i, filters in enumerate(filter_sets):
                if found[i] is None:
                    found[i] = self._walk(ranked, filters, limit)
        return [f or [] for f in found]

    def _ranked(self, match: str) -> tuple[np.ndarray, np.ndarray]:
        """Every match of ``match``: (pks, BM25 ranks, lower is better), best first and equal ranks in pk order."""
        import numpy as np  # here, not at the top: commands that never search keywords do not load numpy

        rows = self.store.rows("SELECT rowid, bm25(memory_fts) FROM memory_fts WHERE memory_fts MATCH ?", (match,))
        if not rows:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        pks = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        ranks = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        order = np.lexsort((pks, ranks))
        return pks[order], ranks[order]

    def _head(self, match: str, size: int) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
        """The best ``size`` matches, ranked as :meth:`_ranked` ranks them all, and whether they are every match.

        The matches tied with the last of the head are left out (unless the head holds every match), so
        what is kept is every match better than it, in the same order as in the whole ranking.
        """
        import numpy as np

        rows = self.store.rows(
            "SELECT rowid, bm25(memory_fts) AS rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?",
            (match, size),
        )
        every = len(rows) < size
        if not every:
            last = rows[-1][1]
            rows = [r for r in rows if r[1] < last]
        pks = np.array([r[0] for r in rows], dtype=np.int64)
        ranks = np.array([r[1] for r in rows], dtype=np.float64)
        order = np.lexsort((pks, ranks))
        return (pks[order], ranks[order]), every

    def _walk(self, ranked: tuple[np.ndarray, np.ndarray], filters: Filters, limit: int) -> list[tuple[int, float]]:
        """The first ``limit`` of ``ranked`` that pass ``filters``, as (pk, score).

        The ranking is checked against the filters a stretch at a time, each stretch four times the last:
        broad filters stop after the first, narrow ones take a few statements whatever the matches' number.
        Filters that keep few (a time window) would have the walk check most of the ranking: when fewer
        memories pass them than are left to check, those are read instead and the rest is walked in memory.
        """
        pks, ranks = ranked
        kept: list[tuple[int, float]] = []
        start, stretch = 0, HEAD_PER_LIMIT * limit
        while start < len(pks) and len(kept) < limit:
            part = pks[start : start + stretch].tolist()
            held = passing(self.store, part, filters)
            kept.extend((pk, -float(ranks[start + i])) for i, pk in enumerate(part) if pk in held)
            start += stretch
            stretch *= 4
            rest = len(pks) - start
            if len(kept) < limit and rest > NARROW_WALK and (limit - len(kept)) * start > NARROW_WALK * len(kept):
                # Few pass (a time window): finishing would check more than NARROW_WALK matches. Read the
                # memories the filters keep instead, if they are fewer than the matches left, and walk in memory.
                import numpy as np

                allowed = self._passing_all(filters, rest)
                if allowed is not None:
                    tail = np.flatnonzero(np.isin(pks[start:], allowed)) + start
                    kept.extend((int(pks[i]), -float(ranks[i])) for i in tail[: limit - len(kept)].tolist())
                    break
        return kept[:limit]

    def _passing_all(self, filters: Filters, most: int) -> np.ndarray | None:
        """The pks of every memory that passes ``filters``, or None when there are more than ``most``."""
        import numpy as np

        clause, params = where(filters)
        rows = self.store.rows(f"SELECT m.pk FROM memories m WHERE {clause} LIMIT ?", [*params, most + 1])
        if len(rows) > most:
            return None
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def term_counts(self, terms: Sequence[str], pks: Sequence[int]) -> dict[str, tuple[int, set[int]]]:
        """term -> (how many keyword rows hold it, which of ``pks`` do), stemmed as the index stems it.

        :meth:`holders` restricted to ``pks``: each term's posting list is walked once, and only its length
        and the candidates in it leave SQLite.
        """
        scorer = self._shared()
        if scorer is not None and scorer.ready:
            with scorer.lock, self.store.read():
                stems = self._stems(scorer, terms)
                if stems is not None:
                    import numpy as np

                    asked = np.asarray(list(pks), dtype=np.int64)
                    counted: dict[str, tuple[int, set[int]]] = {}
                    for term, stem in zip(terms, stems, strict=True):
                        rows, held = scorer.holding(self.store, stem, asked)
                        counted[term] = (rows, set(held.tolist()))
                    return counted
        wanted = json.dumps(list(pks))
        out: dict[str, tuple[int, set[int]]] = {}
        for term in terms:
            match = match_expression([term])
            if match is None:
                continue
            row = self.store.one(
                "SELECT count(*), json_group_array(rowid) FILTER (WHERE rowid IN (SELECT value FROM json_each(?))) "
                "FROM memory_fts WHERE memory_fts MATCH ?",
                (wanted, match),
            )
            assert row is not None
            out[term] = (int(row[0]), {int(pk) for pk in json.loads(row[1])})
        return out

    def documents(self) -> int:
        """How many memories have a keyword row (FTS5's own count: no scan of its rows)."""
        return fts5_totals(self.store, "memory_fts")[0]

    def holders(self, terms: Sequence[str]) -> dict[str, set[int]]:
        """term -> the pks whose keyword row holds it (stemmed as the index stems it).

        One lookup per term gives both how common the term is and which candidates have it: asking FTS5
        for "term AND rowid IN (candidates)" walks the term's whole posting list once per candidate chunk.
        """
        out: dict[str, set[int]] = {}
        for term in terms:
            match = match_expression([term])
            if match is not None:
                out[term] = {
                    int(r[0])
                    for r in self.store.rows("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (match,))
                }
        return out

    def pks(self) -> set[int]:
        """The pks that have a keyword row."""
        # A contentless index keeps its rowids in its document-size table.
        return {int(r[0]) for r in self.store.rows("SELECT id FROM memory_fts_docsize")}

    def optimize(self) -> None:
        """Merge the index's segments into one: a replaced row's old terms leave the file only then."""
        with self.store.write():
            self.store.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
