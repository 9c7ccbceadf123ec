"""Keywords: the FTS5 index of memories, one row per memory keyed by its pk.

The terms are analysed before they get here (``engram_cli.lang.text``: CJK bigrams, split
identifiers), so FTS5 only stems and counts them; a query is searched as any of its terms,
ranked by BM25. The index is contentless: it keeps no text, only what it needs to match.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram_cli.memory.model import Filters
from engram_cli.store.sql import where

if TYPE_CHECKING:
    from engram_cli.store.database import Database

# How many of the best matches, per hit wanted, a search without a namespace filter ranks before it falls back
# to ranking every match.
HEAD_PER_LIMIT = 8


def match_expression(terms: Sequence[str]) -> str | None:
    """An FTS5 MATCH expression for any of ``terms``, each quoted as a phrase; None without terms."""
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class Keywords:
    def __init__(self, store: Database) -> None:
        self.store = store

    def put(self, pk: int, terms: str) -> None:
        """Make ``terms`` (space-separated, analysed) the keyword row of memory ``pk``."""
        # A contentless table has no UPDATE: delete, then insert.
        self.store.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
        self.store.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)", (pk, terms))

    def delete(self, pk: int) -> None:
        self.store.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))

    def search(self, terms: Sequence[str], filters: Filters, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` memories passing ``filters`` that have any of ``terms``: (pk, score), best first.

        The score is BM25 turned so that higher is better.
        """
        match = match_expression(terms)
        if match is None:
            return []
        clause, params = where(filters)
        rows: list[tuple[int, float]] | None = None
        # Without a namespace or model filter the join below walks the matches in pk order, whatever their number;
        # with one, SQLite walks that filter's index instead, and ties would come in its order.
        if filters.namespaces is None and filters.embedding_model is None:
            rows = self._search_head(match, clause, params, limit)
        if rows is None:
            # The full-text matches are materialised first, then joined to the filters by primary key. Written as
            # "rowid IN (filtered memories)", SQLite hands every filtered rowid to FTS5 as a separate lookup: 2.8 s
            # per query at 40k memories instead of milliseconds.
            rows = self.store.rows(
                "WITH hits AS MATERIALIZED (SELECT rowid AS pk, bm25(memory_fts) AS rank FROM memory_fts "
                "WHERE memory_fts MATCH ?) "
                f"SELECT h.pk, h.rank FROM hits h JOIN memories m ON m.pk = h.pk WHERE {clause} "
                "ORDER BY h.rank LIMIT ?",
                [match, *params, limit],
            )
        return [(int(pk), -float(rank)) for pk, rank in rows]

    def _search_head(self, match: str, clause: str, params: list[object], limit: int) -> list[tuple[int, float]] | None:
        """The answer of :meth:`search` from the best ``HEAD_PER_LIMIT * limit`` matches alone; None when they
        hold fewer than ``limit`` that pass the filters (then only all the matches can tell).

        FTS5 ranks its matches itself (``ORDER BY rank``), so only the head is joined and sorted. The matches
        tied with the last of the head are left out, so what is kept is every match better than it; it is
        kept in pk order, as the full match list comes, so that ties rank in the same order either way.
        """
        head = HEAD_PER_LIMIT * limit
        rows = self.store.rows(
            "WITH head AS MATERIALIZED (SELECT rowid AS pk, bm25(memory_fts) AS rank FROM memory_fts "
            "WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?), "
            "hits AS MATERIALIZED (SELECT pk, rank FROM head WHERE (SELECT count(*) FROM head) < ? "
            "OR rank < (SELECT max(rank) FROM head) ORDER BY pk) "
            f"SELECT h.pk, h.rank FROM hits h JOIN memories m ON m.pk = h.pk WHERE {clause} ORDER BY h.rank LIMIT ?",
            [match, head, head, *params, limit],
        )
        return rows if len(rows) >= limit else None

    def term_counts(self, terms: Sequence[str], pks: Sequence[int]) -> dict[str, tuple[int, set[int]]]:
        """term -> (how many keyword rows hold it, which of ``pks`` do), stemmed as the index stems it.

        :meth:`holders` restricted to ``pks``: each term's posting list is walked once, and only its length
        and the candidates in it leave SQLite.
        """
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
        """How many memories have a keyword row."""
        return int(self.store.scalar("SELECT count(*) FROM memory_fts_docsize"))

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
