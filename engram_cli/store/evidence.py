"""Evidence: the kept turns of ingested conversations, their links to memories, keyword rows and vectors.

A turn is stored once per (source, session, turn key); its keyword row lives in ``evidence_fts`` and its
vector in a vec0 table per embedding model, named after the memories' table of that model with
``__evidence`` appended (a model's slug never holds two underscores in a row, so no model's own table
can take that name). The model itself is registered in ``embedding_models`` like any other, so that
``reembed`` and ``models`` see it. Nothing here commits, except creating a model's table when the
caller is not inside a transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram_cli.memory.model import Turn
from engram_cli.store.fts5_format import fts5_totals
from engram_cli.store.keywords import match_expression
from engram_cli.store.sql import chunks, marks
from engram_cli.store.vectors import MAX_KNN, table_name

if TYPE_CHECKING:
    import numpy as np

    from engram_cli.store.database import Database
    from engram_cli.store.vectors import Vectors

SUFFIX = "__evidence"
# Vectors per vec0 chunk. sqlite-vec allocates a whole chunk at a time, and one per partition: with the
# namespace as a partition key and its default of 1024, a project with a dozen turns took 1.5 MB of zeros
# (2.1 MB of evidence per MB of the sample logs). Unpartitioned, with the namespace a metadata column KNN
# filters on, and smaller chunks, the zeros are one chunk's worth for the whole file.
CHUNK_SIZE = 128
_COLUMNS = "pk, namespace, source, session_key, kind, content, occurred_at, learned_at, seq, embedding_model, turn_key"


def evidence_table(model_id: str) -> str:
    """The vec0 table of a model's evidence vectors."""
    return table_name(model_id) + SUFFIX


def _turn(r: Sequence[Any]) -> Turn:
    return Turn(
        pk=int(r[0]), namespace=str(r[1]), source=str(r[2]), session=str(r[3]), kind=str(r[4]), content=str(r[5]),
        occurred_at=r[6], learned_at=str(r[7]), seq=int(r[8]), embedding_model=r[9],
        message_id=str(r[10]).rsplit(":", 1)[0],
    )  # fmt: skip


def _namespaces(namespaces: Sequence[str] | None, params: list[Any], alias: str = "e") -> str:
    if namespaces is None:
        return "1"
    params.extend(namespaces)
    return f"{alias}.namespace IN ({marks(namespaces)})" if namespaces else "0"


class EvidenceRows:
    def __init__(self, store: Database, vectors: Vectors) -> None:
        self.store = store
        self.vectors = vectors
        self._tables: dict[str, str] = {}  # model id -> its evidence table, once seen to exist

    def forget(self) -> None:
        """Drop what is known of the tables: after a rollback a table created meanwhile may be gone."""
        self._tables.clear()

    # -- tables ------------------------------------------------------------------------------

    def table_for(self, model_id: str) -> str | None:
        """The evidence vector table of ``model_id``; None when no turn was ever embedded with it."""
        if model_id not in self._tables:
            name = evidence_table(model_id)
            if self.store.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)) is None:
                return None
            self._tables[model_id] = name
        return self._tables[model_id]

    def ensure(self, model_id: str, dim: int) -> str:
        """The evidence vector table of ``model_id``, created (and the model registered) on first use."""
        known = self.table_for(model_id)
        if known is not None:
            return known
        self.vectors.ensure(model_id, dim)  # checks the dimension against the model's other vectors
        name = evidence_table(model_id)
        with self.store.write():
            self.store.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0("
                f"evidence_pk INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine, "
                f"namespace TEXT, kind TEXT, chunk_size={CHUNK_SIZE})"
            )
        self._tables[model_id] = name
        return name

    def models(self) -> list[str]:
        """The models some turn's vector was made with."""
        return [str(r[0]) for r in self.store.rows(
            "SELECT DISTINCT embedding_model FROM evidence WHERE embedding_model IS NOT NULL ORDER BY 1")]  # fmt: skip

    # -- writing -----------------------------------------------------------------------------

    def last_of_session(self, source: str, session: str) -> tuple[int, int, str] | None:
        """(pk, seq, content) of the latest kept turn of a session; None before its first."""
        row = self.store.one(
            "SELECT pk, seq, content FROM evidence WHERE source = ? AND session_key = ? ORDER BY seq DESC LIMIT 1",
            (source, session),
        )
        return None if row is None else (int(row[0]), int(row[1]), str(row[2]))

    def pk_of(self, source: str, session: str, turn_key: str) -> int | None:
        row = self.store.one(
            "SELECT pk FROM evidence WHERE source = ? AND session_key = ? AND turn_key = ?", (source, session, turn_key)
        )
        return None if row is None else int(row[0])

    def insert(
        self, *, namespace: str, source: str, session: str, turn_key: str, seq: int, kind: str, content: str,
        content_hash: str, occurred_at: str | None, learned_at: str,
    ) -> int:  # fmt: skip
        """A new turn's row (its keyword row and vector are put separately); returns its pk."""
        self.store.execute(
            "INSERT INTO evidence (namespace, source, session_key, turn_key, seq, kind, content, content_hash, "
            "occurred_at, learned_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (namespace, source, session, turn_key, seq, kind, content, content_hash, occurred_at, learned_at),
        )
        return int(self.store.conn.last_insert_rowid())

    def put_terms(self, pk: int, terms: str) -> None:
        self.store.execute("DELETE FROM evidence_fts WHERE rowid = ?", (pk,))
        self.store.execute("INSERT INTO evidence_fts (rowid, terms) VALUES (?, ?)", (pk, terms))

    def put_vector(self, model_id: str, pk: int, vector: np.ndarray, *, namespace: str, kind: str) -> None:
        """Store (or replace) a turn's vector, moving it off the model it had."""
        import numpy as np

        table = self.ensure(model_id, len(vector))
        row = self.store.one("SELECT embedding_model FROM evidence WHERE pk = ?", (pk,))
        old = None if row is None else row[0]
        if old and old != model_id and (old_table := self.table_for(str(old))) is not None:
            self.store.execute(f"DELETE FROM {old_table} WHERE evidence_pk = ?", (pk,))
        self.store.execute(f"DELETE FROM {table} WHERE evidence_pk = ?", (pk,))
        self.store.execute(
            f"INSERT INTO {table} (evidence_pk, embedding, namespace, kind) VALUES (?, ?, ?, ?)",
            (pk, np.asarray(vector, dtype=np.float32).tobytes(), namespace, kind),
        )
        self.store.execute("UPDATE evidence SET embedding_model = ? WHERE pk = ?", (model_id, pk))

    def set_content(self, pk: int, content: str, content_hash: str) -> None:
        self.store.execute(
            "UPDATE evidence SET content = ?, content_hash = ? WHERE pk = ?", (content, content_hash, pk)
        )

    def link(self, evidence_pks: Sequence[int], memory_pk: int) -> None:
        for pk in evidence_pks:
            self.store.execute(
                "INSERT OR IGNORE INTO evidence_links (evidence_pk, memory_pk) VALUES (?, ?)", (pk, memory_pk)
            )

    def copy_links(self, from_memory: int, to_memory: int) -> None:
        """``to_memory`` is made from what ``from_memory`` was made from (compact, a fold)."""
        self.store.execute(
            "INSERT OR IGNORE INTO evidence_links (evidence_pk, memory_pk) "
            "SELECT evidence_pk, ? FROM evidence_links WHERE memory_pk = ?",
            (to_memory, from_memory),
        )

    def delete(self, pks: Sequence[int]) -> int:
        """Remove turns with their keyword rows, vectors and links; returns how many there were."""
        gone = 0
        tables = [t for m in self.models() if (t := self.table_for(m)) is not None]
        for chunk in chunks(list(pks)):
            for table in tables:
                self.store.execute(f"DELETE FROM {table} WHERE evidence_pk IN ({marks(chunk)})", chunk)
            self.store.execute(f"DELETE FROM evidence_fts WHERE rowid IN ({marks(chunk)})", chunk)
            gone += int(self.store.scalar(f"SELECT count(*) FROM evidence WHERE pk IN ({marks(chunk)})", chunk))
            self.store.execute(f"DELETE FROM evidence WHERE pk IN ({marks(chunk)})", chunk)
        return gone

    def optimize(self) -> None:
        """Merge the keyword index's segments: a deleted turn's terms leave the file only then."""
        with self.store.write():
            self.store.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('optimize')")

    # -- reading -----------------------------------------------------------------------------

    def load_many(self, pks: Sequence[int]) -> dict[int, Turn]:
        out: dict[int, Turn] = {}
        for chunk in chunks(list(pks)):
            for r in self.store.rows(f"SELECT {_COLUMNS} FROM evidence WHERE pk IN ({marks(chunk)})", chunk):
                out[int(r[0])] = _turn(r)
        return out

    def of_memory(self, memory_pk: int) -> list[Turn]:
        """The turns a memory was made from, in the order they were said."""
        rows = self.store.rows(
            f"SELECT {', '.join('e.' + c.strip() for c in _COLUMNS.split(','))} FROM evidence_links l "
            "JOIN evidence e ON e.pk = l.evidence_pk WHERE l.memory_pk = ? ORDER BY e.source, e.session_key, e.seq",
            (memory_pk,),
        )
        return [_turn(r) for r in rows]

    def of_session(self, source: str, session: str) -> list[Turn]:
        rows = self.store.rows(
            f"SELECT {_COLUMNS} FROM evidence WHERE source = ? AND session_key = ? ORDER BY seq", (source, session)
        )
        return [_turn(r) for r in rows]

    def neighbours(self, turn: Turn) -> tuple[str, str]:
        """The text of the turns said just before and just after ``turn`` in its session ('' at either end)."""
        before = self.store.one(
            "SELECT content FROM evidence WHERE source = ? AND session_key = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
            (turn.source, turn.session, turn.seq),
        )
        after = self.store.one(
            "SELECT content FROM evidence WHERE source = ? AND session_key = ? AND seq > ? ORDER BY seq LIMIT 1",
            (turn.source, turn.session, turn.seq),
        )
        return ("" if before is None else str(before[0])), ("" if after is None else str(after[0]))

    def linked_elsewhere(self, evidence_pks: Sequence[int], memory_pk: int) -> set[int]:
        """Those of ``evidence_pks`` that some memory other than ``memory_pk`` was made from too."""
        out: set[int] = set()
        for chunk in chunks(list(evidence_pks)):
            out |= {int(r[0]) for r in self.store.rows(
                f"SELECT DISTINCT evidence_pk FROM evidence_links WHERE evidence_pk IN ({marks(chunk)}) "
                "AND memory_pk != ?", [*chunk, memory_pk])}  # fmt: skip
        return out

    def containing(self, text: str) -> list[int]:
        """The turns that say ``text`` word for word (case-insensitive)."""
        return [int(r[0]) for r in self.store.rows(
            "SELECT pk FROM evidence WHERE instr(lower(content), lower(?)) > 0", (text,))]  # fmt: skip

    def count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return int(self.store.scalar("SELECT count(*) FROM evidence"))
        return int(self.store.scalar("SELECT count(*) FROM evidence WHERE namespace = ?", (namespace,)))

    def counts_by_namespace(self, namespaces: Sequence[str] | None = None) -> dict[str, int]:
        params: list[Any] = []
        clause = _namespaces(namespaces, params)
        rows = self.store.rows(f"SELECT e.namespace, count(*) FROM evidence e WHERE {clause} GROUP BY 1", params)
        return {str(ns): int(n) for ns, n in rows}

    def oldest_beyond(self, namespace: str, cap: int) -> list[int]:
        """The turns of ``namespace`` past the newest ``cap``: first those no memory was made from, oldest first."""
        rows = self.store.rows(
            "SELECT e.pk FROM evidence e WHERE e.namespace = ? ORDER BY "
            "EXISTS (SELECT 1 FROM evidence_links l WHERE l.evidence_pk = e.pk) DESC, e.learned_at DESC, e.pk DESC "
            "LIMIT -1 OFFSET ?",
            (namespace, cap),
        )
        return [int(r[0]) for r in rows]

    def learned_before(self, cutoff: str, namespaces: Sequence[str] | None = None) -> list[int]:
        params: list[Any] = [cutoff]
        clause = _namespaces(namespaces, params)
        return [int(r[0]) for r in self.store.rows(f"SELECT e.pk FROM evidence e WHERE e.learned_at < ? AND {clause}",
                                                   params)]  # fmt: skip

    def not_on_model(self, model_id: str, limit: int) -> list[Turn]:
        rows = self.store.rows(
            f"SELECT {_COLUMNS} FROM evidence WHERE embedding_model IS NOT ? ORDER BY pk LIMIT ?", (model_id, limit)
        )
        return [_turn(r) for r in rows]

    def count_not_on_model(self, model_id: str) -> int:
        return int(self.store.scalar("SELECT count(*) FROM evidence WHERE embedding_model IS NOT ?", (model_id,)))

    # -- searching ---------------------------------------------------------------------------

    def knn(
        self, model_id: str, query: np.ndarray, k: int, namespaces: Sequence[str] | None
    ) -> list[tuple[int, float]]:
        """Nearest turns by cosine: (pk, cosine similarity), best first."""
        import numpy as np

        table = self.table_for(model_id)
        if table is None:
            return []
        params: list[Any] = [np.asarray(query, dtype=np.float32).tobytes(), min(max(k, 1), MAX_KNN)]
        clauses = ["embedding MATCH ?", "k = ?"]
        if namespaces is not None:
            if not namespaces:
                return []
            clauses.append(f"namespace IN ({marks(namespaces)})")
            params.extend(namespaces)
        rows = self.store.rows(f"SELECT evidence_pk, distance FROM {table} WHERE {' AND '.join(clauses)}", params)
        return sorted(((int(pk), 1.0 - float(d)) for pk, d in rows), key=lambda h: -h[1])

    def vectors_of(self, model_id: str, pks: Sequence[int]) -> dict[int, np.ndarray]:
        import numpy as np

        table = self.table_for(model_id)
        out: dict[int, np.ndarray] = {}
        for chunk in chunks(list(pks)) if table is not None else []:
            for pk, blob in self.store.rows(
                f"SELECT evidence_pk, embedding FROM {table} WHERE evidence_pk IN ({marks(chunk)})", chunk
            ):
                out[int(pk)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def search(self, terms: Sequence[str], namespaces: Sequence[str] | None, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` turns of ``namespaces`` with any of ``terms``: (pk, BM25 turned so higher is better)."""
        match = match_expression(terms)
        if match is None:
            return []
        params: list[Any] = [match]
        clause = _namespaces(namespaces, params)
        rows = self.store.rows(
            "WITH hits AS MATERIALIZED (SELECT rowid AS pk, bm25(evidence_fts) AS rank FROM evidence_fts "
            "WHERE evidence_fts MATCH ?) "
            f"SELECT h.pk, h.rank FROM hits h JOIN evidence e ON e.pk = h.pk WHERE {clause} ORDER BY h.rank LIMIT ?",
            [*params, limit],
        )
        return [(int(pk), -float(rank)) for pk, rank in rows]

    def documents(self) -> int:
        """How many turns have a keyword row (FTS5's own count: no scan of its rows)."""
        return fts5_totals(self.store, "evidence_fts")[0]

    def holders(self, terms: Sequence[str]) -> dict[str, set[int]]:
        """term -> the turns whose keyword row holds it (see Keywords.holders)."""
        out: dict[str, set[int]] = {}
        for term in terms:
            match = match_expression([term])
            if match is not None:
                out[term] = {int(r[0]) for r in self.store.rows(
                    "SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ?", (match,))}  # fmt: skip
        return out

    def stored_bytes(self) -> dict[str, int]:
        """Bytes on disk of the evidence tables, their indexes, keyword index and vector tables (dbstat)."""
        rows = self.store.rows(
            "SELECT name, sum(pgsize) FROM dbstat WHERE name LIKE 'evidence%' "
            "OR name LIKE 'sqlite_autoindex_evidence%' OR name LIKE ? GROUP BY name",
            (f"%{SUFFIX}%",),
        )
        return {str(name): int(size) for name, size in rows}
