"""BM25 of the keyword index computed in numpy, with the same result as FTS5's ``bm25()``, bit for bit.

FTS5 scores every match of a query row by row, and for a contentless table each row's score looks
its length up in ``memory_fts_docsize``: a few microseconds a match, 25 to 50 ms for a query with 14,000
matches at 100,000 memories on the build machine. Walking the same posting lists without scoring them
costs a quarter of that.
So a process that searches more than once (the warm service, the MCP server, a library caller, `eval`)
keeps every keyword row's length in memory, reads the query terms' posting lists through an
``fts5vocab`` table, and scores them all at once in numpy, in FTS5's order of operations, so that the
scores, the ranking and the ties are FTS5's own.

The lengths stay exact across writers: every change of a keyword row is logged (``keyword_changes``,
the memory's pk and a random token, in the same transaction), and each search first reads the rows
changed since it last looked. When the change it last read is not there any more (the log was trimmed
past it, a rollback undid it, or the file was restored from a backup and written again), or more than
MAX_CHANGES came in since, the lengths are read again.

The scorer belongs to the process, not to one open store: the warm service runs each prompt's command
afresh, opening the database each time, and its scorer must outlive that. Scorers are found by the
database file's identity and its random epoch (``vector_epoch``), so a file made anew at the same path
never meets an older one's lengths.

A query term that the tokenizer turns into anything but one token (a phrase, or nothing) is left to
FTS5, which matches phrases by position; the caller then searches FTS5 as before.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np

from engram_cli.store.fts5_format import fts5_totals, varint
from engram_cli.store.keyword_log import LOG_TABLE

if TYPE_CHECKING:
    from engram_cli.store.database import Database

log = logging.getLogger(__name__)

# Changes read one by one at most; more than this, and every length is read again.
MAX_CHANGES = 4_096
# Postings kept between two changes, counted in rows (16 bytes each): a common term at a million memories
# holds a few hundred thousand.
MEMO_ROWS = 2_000_000

# FTS5's bm25() constants (fts5_aux.c) and its floor for the idf of a term most rows hold.
K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
# The tokenizer memory_fts was made with (migration 1), as FTS5 runs it on a query's phrases.
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2", "tokenchars", "_"])
VOCAB = "temp.memory_fts_instances"
# Databases a process keeps a scorer for at once (the least recently used goes).
SHARED_MAX = 4


class KeywordScorer:
    """Ranks memory_fts matches as FTS5 would, from lengths kept in memory (see the module docstring).

    Every method takes the caller's store, inside a read transaction, and is called under :attr:`lock`.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.searches = 0  # searches of this database in this process, whether scored here or by FTS5
        # The FTS5 tokenizer and the connection it belongs to (the last one that asked).
        self._tokenizer: tuple[apsw.Connection, Any] | None = None
        self._pks = np.zeros(0, dtype=np.int64)  # every keyword row's pk, sorted
        self._lengths = np.zeros(0, dtype=np.float64)  # its length in tokens
        # The last change of the log the lengths include, and its token; None: nothing read yet.
        self._seen: tuple[int, int] | None = None
        # Posting lists read since the last change: recall asks for the same terms twice (rank, then shares).
        self._memo: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # Whether it ranks as this SQLite's FTS5 does (checked once, on the index's own terms); None: not yet.
        self.agrees: bool | None = None

    @property
    def ready(self) -> bool:
        return self._seen is not None

    # -- keeping the lengths exact -------------------------------------------------------------

    def forget(self) -> None:
        """Read every length again at the next refresh."""
        self._seen = None
        self._memo.clear()

    def refresh(self, db: Database) -> None:
        """Bring the lengths up to the caller's read transaction."""
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB} USING fts5vocab(main, memory_fts, instance)")
        if self._seen is None:
            self._load(db)
            return
        seq, token = self._seen
        if seq and db.scalar(f"SELECT token FROM {LOG_TABLE} WHERE seq = ?", (seq,)) != token:
            self._load(db)  # trimmed away, or another history (a restored backup)
            return
        changes = db.rows(
            f"SELECT seq, memory_pk, token FROM {LOG_TABLE} WHERE seq > ? ORDER BY seq LIMIT ?", (seq, MAX_CHANGES + 1)
        )
        if not changes:
            return
        if len(changes) > MAX_CHANGES:
            self._load(db)
            return
        self._apply(db, sorted({int(r[1]) for r in changes}))
        self._seen = int(changes[-1][0]), int(changes[-1][2])

    def _load(self, db: Database) -> None:
        self._memo.clear()
        last = db.one(f"SELECT seq, token FROM {LOG_TABLE} ORDER BY seq DESC LIMIT 1")
        rows = db.rows("SELECT id, sz FROM memory_fts_docsize ORDER BY id")
        self._pks = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._lengths = np.fromiter((varint(r[1])[0] for r in rows), dtype=np.float64, count=len(rows))
        self._seen = (int(last[0]), int(last[1])) if last else (0, 0)
        log.info("keyword scorer: %d keyword rows read", len(rows))

    def _apply(self, db: Database, pks: list[int]) -> None:
        self._memo.clear()
        marks = ",".join("?" * len(pks))
        rows = db.rows(f"SELECT id, sz FROM memory_fts_docsize WHERE id IN ({marks})", pks)
        now = {int(r[0]): varint(r[1])[0] for r in rows}
        keep = ~np.isin(self._pks, np.asarray(pks, dtype=np.int64))
        added = np.asarray(sorted(now), dtype=np.int64)
        merged = np.concatenate([self._pks[keep], added])
        lengths = np.concatenate([self._lengths[keep], np.asarray([now[int(pk)] for pk in added], dtype=np.float64)])
        order = np.argsort(merged, kind="stable")
        self._pks, self._lengths = merged[order], lengths[order]

    # -- searching -----------------------------------------------------------------------------

    def stems(self, db: Database, terms: Sequence[str]) -> list[str] | None:
        """Each term as the one token FTS5 would look up for it; None when one of them is not one token."""
        if self._tokenizer is None or self._tokenizer[0] is not db.conn:
            self._tokenizer = db.conn, db.conn.fts5_tokenizer(*TOKENIZER)
        tokenize = self._tokenizer[1]
        out: list[str] = []
        for term in terms:
            tokens = list(tokenize(term.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None))
            # (start, end, token); anything else is a phrase, nothing, or colocated tokens.
            if len(tokens) != 1 or not isinstance(tokens[0], tuple) or len(tokens[0]) != 3:
                return None
            out.append(str(tokens[0][2]))
        return out

    def sample_terms(self, db: Database, count: int) -> list[str]:
        """Up to ``count`` of the index's own tokens that the tokenizer leaves as they are (so that a query
        of them finds them), for checking the scorer against FTS5."""
        tokens = [str(r[0]) for r in db.rows(f"SELECT DISTINCT term FROM {VOCAB} LIMIT ?", (count * 8,))]
        return [t for t in tokens if self.stems(db, [t]) == [t]][:count]

    def postings(self, db: Database, stem: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding ``stem``: their pks (ascending) and how often each holds it."""
        if stem in self._memo:
            return self._memo[stem]
        joined = db.scalar(f"SELECT group_concat(doc) FROM {VOCAB} WHERE term = ?", (stem,))
        if joined:
            docs = np.fromstring(joined, dtype=np.int64, sep=",")  # one entry per occurrence, in row order
            starts = np.flatnonzero(np.concatenate(([True], docs[1:] != docs[:-1])))
            found = docs[starts], np.diff(np.append(starts, len(docs))).astype(np.float64)
        else:
            found = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if sum(len(pks) for pks, _ in self._memo.values()) + len(found[0]) > MEMO_ROWS:
            self._memo.clear()
        self._memo[stem] = found
        return found

    def holding(self, db: Database, stem: str, pks: np.ndarray) -> tuple[int, np.ndarray]:
        """How many rows hold ``stem``, and which of ``pks`` do."""
        holders, _ = self.postings(db, stem)
        if not len(holders):
            return 0, pks[:0]
        at = np.minimum(np.searchsorted(holders, pks), len(holders) - 1)
        return len(holders), pks[holders[at] == pks]

    def rank(self, db: Database, stems: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Every row holding any of ``stems`` (the query's phrases, in order): (pks, BM25 ranks, lower is
        better), best first and equal ranks in pk order, as FTS5 ranks ``"a" OR "b" ...``.

        None if a row's length is missing (the lengths fell out of step: the caller asks FTS5).
        """
        found = {stem: self.postings(db, stem) for stem in dict.fromkeys(stems)}
        parts = [pks for pks, _ in found.values() if len(pks)]
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        rows = np.sort(np.concatenate(parts))  # each part is sorted and distinct: drop the repeats
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
        at = np.searchsorted(self._pks, rows)  # rows is sorted, so at[-1] is the largest
        if at[-1] >= len(self._pks) or not np.array_equal(self._pks[at], rows):
            log.warning("keyword scorer: a matching row has no known length; searching with FTS5")
            self.forget()
            return None
        total_rows, total_tokens = fts5_totals(db, "memory_fts")
        # fts5_aux.c: score += idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))), phrase by phrase.
        avgdl = float(total_tokens) / float(total_rows)
        norm = K1 * (1 - B + B * self._lengths[at] / avgdl)
        score = np.zeros(len(rows), dtype=np.float64)
        for stem in stems:
            holders, counts = found[stem]
            idf = math.log((total_rows - len(holders) + 0.5) / (len(holders) + 0.5))
            if idf <= 0.0:
                idf = IDF_FLOOR
            # Only the rows holding the phrase: FTS5 adds 0.0 for the others, which leaves a score as it is.
            mine = np.searchsorted(rows, holders)
            score[mine] = score[mine] + idf * ((counts * (K1 + 1.0)) / (counts + norm[mine]))
        ranks = -1.0 * score
        order = np.lexsort((rows, ranks))
        return rows[order], ranks[order]


_shared: OrderedDict[tuple[Any, ...], KeywordScorer] = OrderedDict()
_shared_lock = threading.Lock()


def scorer_for(db: Database) -> KeywordScorer | None:
    """This process's scorer for ``db``'s file (made on first use); None for a database without a file."""
    if db.path is None or str(db.path) == ":memory:":
        return None
    try:
        info = os.stat(db.path)
    except OSError:
        return None
    if db.scalar(f"SELECT count(*) FROM sqlite_master WHERE name IN ('vector_epoch', '{LOG_TABLE}')") != 2:
        return None  # a file opened without migrating it (read-only, to recover from it)
    key = (info.st_dev, info.st_ino, db.scalar("SELECT epoch FROM vector_epoch WHERE id = 1"))
    with _shared_lock:
        scorer = _shared.pop(key, None) or KeywordScorer()
        _shared[key] = scorer
        while len(_shared) > SHARED_MAX:
            _shared.popitem(last=False)
    return scorer
