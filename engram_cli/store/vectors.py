"""Vectors: one sqlite-vec ``vec0`` table per embedding model, addressed by the model's id.

A table per model lets rows of two models coexist while `reembed` migrates a database
progressively. The table's partition key (namespace) and metadata columns (status,
memory type, agent) let a KNN query filter before it ranks.

The registry of models (``embedding_models``) is read once per model and kept: tables are
only ever added, and a rollback, which may take a new one away, empties what was kept.
Nothing here commits, except creating a model's table, which is a write of its own.

Every write to a vec0 table is logged (``vector_changes``) in the same transaction, so the
vector index (:mod:`engram_cli.store.vector_index`), a cache outside the file that KNN queries
search, can catch up with it. Every write must therefore go through this class.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from engram_cli.errors import ModelError
from engram_cli.store.sql import chunks, marks
from engram_cli.timeutil import iso_now

if TYPE_CHECKING:
    import numpy as np

    from engram_cli.store.database import Database
    from engram_cli.store.knn import IndexOptions
    from engram_cli.store.vector_index import Prefetched, Row, VectorIndex

MAX_KNN = 4096  # sqlite-vec refuses larger k
# Vectors per vec0 chunk, for tables made from now on (a table keeps the size it was made with).
# sqlite-vec keeps a chunk's vectors in one blob and writes a new vector in place, reading the blob's
# pages up to its slot: with sqlite-vec's 1,024 (a 1.5 MB blob at 384-d) an insert took 0.55 ms, with
# 256 0.07 ms (30k rows in six namespaces). It also allocates a whole chunk per namespace, so a
# namespace of a few memories no longer holds 1.5 MB of zeros.
CHUNK_SIZE = 256


def table_name(model_id: str) -> str:
    return "vec_" + re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")


def _in(column: str, values: Sequence[str], params: list[Any]) -> str:
    params.extend(values)
    if len(values) == 1:
        return f"{column} = ?"
    return f"{column} IN ({marks(values)})"


# numpy is imported where vectors are read or written, not with the store: `engram get` opens the
# store for an exact lookup and must not pay for numpy.


def _vector(blob: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32)


def _blob(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


class Vectors:
    def __init__(self, store: Database, index: IndexOptions | None = None) -> None:
        self.store = store
        self.options = index
        self._tables: dict[str, tuple[str, int]] = {}  # model id -> (vec0 table, dimension)
        self._indexes: dict[str, VectorIndex] = {}

    def forget(self) -> None:
        """Drop what is known of the registry and the indexes: after a rollback a table created
        meanwhile may be gone, and an index may have read rows that are gone again."""
        self._tables.clear()
        for index in self._indexes.values():
            index.reset()

    def index(self, model_id: str) -> VectorIndex | None:
        """The vector index of a model's table; None when the index is turned off, the model has no table, or
        no usable index file is there and this process may not build one (``IndexOptions.build``)."""
        known = self._known(model_id)
        if known is None or (self.options is not None and not self.options.enabled):
            return None
        if model_id not in self._indexes:
            from engram_cli.store.knn import IndexOptions
            from engram_cli.store.vector_index import VectorIndex

            options = self.options or IndexOptions()
            self._indexes[model_id] = VectorIndex(self.store, model_id, known[0], known[1], options)
        index = self._indexes[model_id]
        # Looked for again on every call: a file another process builds meanwhile is used from then on.
        if self.options is not None and not self.options.build and not index.usable():
            return None
        return index

    def warm(self, model_id: str) -> None:
        """Bring a model's index up to date now, outside any write transaction: only there can it write its
        file, so a writer that would build it inside its transaction builds (and keeps) it here first."""
        index = self.index(model_id)
        if index is not None:
            index.refresh()

    def _changed(self, model_id: str, pk: int, row: Callable[[Row | None], Row | None]) -> None:
        """Log a change to a memory's vector row, for the vector index; now and then trim the log.

        ``row`` makes the row as it is now from the row before (None: none), so that this process's
        index takes the change in without reading it back from the table.
        """
        from engram_cli.store.vector_index import LOG_TABLE, LOG_TRIM_EVERY, log_keep

        ((seq, token),) = self.store.rows(
            f"INSERT INTO {LOG_TABLE} (model_id, memory_pk, token) VALUES (?, ?, random()) RETURNING seq, token",
            (model_id, pk),
        )
        if seq % LOG_TRIM_EVERY == 0:
            keep = log_keep(int(self.store.scalar("SELECT count(*) FROM memories")))
            if seq > keep:
                self.store.execute(f"DELETE FROM {LOG_TABLE} WHERE seq <= ?", (seq - keep,))
        index = self._indexes.get(model_id)
        if index is not None:
            index.note(int(seq), int(token), pk, row)

    def _known(self, model_id: str) -> tuple[str, int] | None:
        if model_id not in self._tables:
            row = self.store.one("SELECT vec_table, dim FROM embedding_models WHERE model_id = ?", (model_id,))
            if row is None:
                return None
            self._tables[model_id] = (str(row[0]), int(row[1]))
        return self._tables[model_id]

    def table_for(self, model_id: str) -> str | None:
        """The vec0 table of a model; None when no vector of it was ever stored."""
        known = self._known(model_id)
        return None if known is None else known[0]

    def ensure(self, model_id: str, dim: int) -> str:
        """The vec0 table of a model, created (with its registry row) on first use."""
        known = self._known(model_id)
        if known is None:
            with self.store.write():
                # Looked for again under the write lock: another process may have made it since.
                row = self.store.one("SELECT vec_table, dim FROM embedding_models WHERE model_id = ?", (model_id,))
                if row is None:
                    name = table_name(model_id)
                    self.store.execute(
                        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0("
                        f"memory_pk INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine, "
                        "namespace TEXT PARTITION KEY, status TEXT, memory_type TEXT, agent_id TEXT, "
                        f"chunk_size={CHUNK_SIZE})"
                    )
                    self.store.execute(
                        "INSERT INTO embedding_models (model_id, dim, vec_table, created_at) VALUES (?, ?, ?, ?)",
                        (model_id, dim, name, iso_now()),
                    )
                    row = (name, dim)
            known = self._tables[model_id] = (str(row[0]), int(row[1]))
        if known[1] != dim:
            raise ModelError(f"model {model_id} has dimension {dim}, but its stored vectors have {known[1]}")
        return known[0]

    def in_use(self) -> list[tuple[str, str]]:
        """(model id, vec0 table) of every model with a table, by model id."""
        rows = self.store.rows("SELECT model_id, vec_table, dim FROM embedding_models ORDER BY model_id")
        for model_id, table, dim in rows:
            self._tables[str(model_id)] = (str(table), int(dim))
        return [(str(r[0]), str(r[1])) for r in rows]

    def set_created_at(self, model_id: str, at: str) -> None:
        self.store.execute("UPDATE embedding_models SET created_at = ? WHERE model_id = ?", (at, model_id))

    # -- one memory's vector ---------------------------------------------------------------

    def put(
        self,
        model_id: str,
        pk: int,
        vector: np.ndarray,
        *,
        namespace: str,
        status: str,
        memory_type: str,
        agent: str,
    ) -> None:
        """Store (or replace) a memory's vector in its model's table, creating the table on first use."""
        table = self.ensure(model_id, len(vector))
        # vec0 has no upsert: delete first so the same call serves insert and replace.
        self.store.execute(f"DELETE FROM {table} WHERE memory_pk = ?", (pk,))
        blob = _blob(vector)
        self.store.execute(
            f"INSERT INTO {table} (memory_pk, embedding, namespace, status, memory_type, agent_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (pk, blob, namespace, status, memory_type, agent),
        )
        self._changed(model_id, pk, lambda _: (_vector(blob), namespace, status, memory_type, agent))

    def delete(self, model_id: str, pk: int) -> None:
        table = self.table_for(model_id)
        if table is not None:
            self.store.execute(f"DELETE FROM {table} WHERE memory_pk = ?", (pk,))
            self._changed(model_id, pk, lambda _: None)

    def set_status(self, model_id: str, pk: int, status: str) -> None:
        table = self.table_for(model_id)
        if table is not None:
            self.store.execute(f"UPDATE {table} SET status = ? WHERE memory_pk = ?", (status, pk))
            self._changed(model_id, pk, lambda old: None if old is None else (old[0], old[1], status, *old[3:]))

    def set_type(self, model_id: str, pk: int, memory_type: str) -> None:
        table = self.table_for(model_id)
        if table is not None:
            self.store.execute(f"UPDATE {table} SET memory_type = ? WHERE memory_pk = ?", (memory_type, pk))
            self._changed(model_id, pk, lambda old: None if old is None else (*old[:3], memory_type, old[4]))

    # -- reading ---------------------------------------------------------------------------

    def get(self, model_id: str, pks: Sequence[int]) -> dict[int, np.ndarray]:
        """The vectors of ``pks`` that ``model_id``'s table holds."""
        table = self.table_for(model_id)
        out: dict[int, np.ndarray] = {}
        for chunk in chunks(pks) if table is not None else []:
            for pk, blob in self.store.rows(
                f"SELECT memory_pk, embedding FROM {table} WHERE memory_pk IN ({marks(chunk)})", chunk
            ):
                out[int(pk)] = _vector(blob)
        return out

    def lookup(self, model_id: str, pks: Sequence[int]) -> dict[int, np.ndarray]:
        """:meth:`get` read from the model's vector index when there is one: the same vectors, without asking
        sqlite-vec, which answers ``memory_pk IN (...)`` by scanning its whole table (ascending pk order)."""
        if self.index(model_id) is None:
            return self.get(model_id, pks)
        return dict(sorted(self.current(model_id, pks).items()))

    def matrix_of(
        self, model_id: str, pks: Sequence[int], *, namespace: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of ``pks`` that ``model_id``'s table holds (only those of ``namespace`` when given):
        the pks found, in the order asked, and their vectors as one float32 matrix.

        Read from the vector index when it is on (a mapped matrix: no row-by-row vec0 read), else from
        the table; either way exactly the bytes the table holds.
        """
        import numpy as np

        index = self.index(model_id)
        if index is not None:
            return index.vectors_of(pks, namespace)
        found = self.get(model_id, pks) if namespace is None else self.of_namespace(model_id, namespace, set(pks))
        kept = [pk for pk in pks if pk in found]
        known = self._known(model_id)
        dim = 0 if known is None else known[1]
        matrix = np.stack([found[pk] for pk in kept]) if kept else np.zeros((0, dim), dtype=np.float32)
        return np.asarray(kept, dtype=np.int64), matrix.astype(np.float32, copy=False)

    def current(self, model_id: str, pks: Sequence[int]) -> dict[int, np.ndarray]:
        """:meth:`get`, answered by the vector index when it is on (see :meth:`matrix_of`)."""
        found, matrix = self.matrix_of(model_id, pks)
        return dict(zip(found.tolist(), matrix, strict=True))

    def of_namespace(self, model_id: str, namespace: str, pks: set[int] | None = None) -> dict[int, np.ndarray]:
        """Every vector of one namespace (one partition scan), optionally only those of ``pks``."""
        table = self.table_for(model_id)
        if table is None:
            return {}
        out: dict[int, np.ndarray] = {}
        for pk, blob in self.store.rows(f"SELECT memory_pk, embedding FROM {table} WHERE namespace = ?", (namespace,)):
            if pks is None or pk in pks:
                out[int(pk)] = _vector(blob)
        return out

    def filters_of(self, model_id: str) -> dict[int, tuple[str, str, str, str]]:
        """Every row of the model's table: pk -> the namespace, status, type and agent recall filters on."""
        table = self.table_for(model_id)
        if table is None:
            return {}
        from engram_cli.store import vec0_storage

        with self.store.read():
            whole = vec0_storage.read(self.store, table, 0, vectors=False)
        if whole is not None:  # read from the storage tables: a few blobs instead of a row at a time
            columns = [[whole.vocab[n][c] for c in whole.codes[n].tolist()] for n in ("ns", "status", "mtype", "agent")]
            return dict(zip(whole.pks.tolist(), zip(*columns, strict=True), strict=True))
        return {
            int(pk): (str(ns), str(status), str(mtype), str(agent))
            for pk, ns, status, mtype, agent in self.store.rows(
                f"SELECT memory_pk, namespace, status, memory_type, agent_id FROM {table}"
            )
        }

    def count(self, model_id: str) -> int | None:
        """How many vectors the model's table holds, from its index; None when there is no index to ask
        (counting a vec0 table in SQL reads all of it)."""
        index = self.index(model_id)
        if index is None:
            return None
        from engram_cli.store.vector_index import Unbuilt

        try:
            return index.rows()
        except Unbuilt:
            index.reset()
            return None

    def sample(self, model_id: str, step: int, limit: int) -> list[tuple[np.ndarray, str]]:
        """Up to ``limit`` (vector, memory text) pairs: those whose pk is a multiple of ``step``."""
        table = self.table_for(model_id)
        if table is None:
            return []
        rows = self.store.rows(
            f"SELECT v.embedding, m.content FROM {table} v JOIN memories m ON m.pk = v.memory_pk "
            "WHERE v.memory_pk % ? = 0 LIMIT ?",
            (step, limit),
        )
        return [(_vector(blob), str(content)) for blob, content in rows]

    def blob(self, table: str, pk: int) -> bytes | None:
        """The stored bytes of one vector, read from a table named as it is (not through the registry).

        For reading a damaged database, whose registry may be what cannot be read. None when
        there is no such row, or what is there is not bytes.
        """
        row = self.store.one(f'SELECT embedding FROM "{table}" WHERE memory_pk = ?', (pk,))
        return row[0] if row is not None and isinstance(row[0], bytes) else None

    def knn(
        self,
        model_id: str,
        query: np.ndarray,
        k: int,
        *,
        namespaces: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        exact: bool = False,
    ) -> list[tuple[int, float]]:
        """Nearest rows by cosine: (memory_pk, cosine similarity), best first. ``exact``: never the index's
        approximate path (a write's merge check must not miss a duplicate)."""
        return self.knn_many(
            model_id, [query], k, namespaces=namespaces, statuses=statuses, types=types, agent=agent, exact=exact
        )[0]

    def knn_many(
        self,
        model_id: str,
        queries: Sequence[np.ndarray] | np.ndarray,
        k: int,
        *,
        namespaces: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
        exact: bool = False,
        shift: np.ndarray | None = None,
    ) -> list[list[tuple[int, float]]]:
        """:meth:`knn` for several queries at once: one pass over the rows (one matrix product) scores them all.

        With ``shift``, one more list comes last: the first query's (normalised) moved by ``shift`` and
        normalised again (recall's cross-language list), which the index scores without another pass.
        """
        import numpy as np

        def by_vec0() -> list[list[tuple[int, float]]]:
            asked = [np.asarray(q, dtype=np.float32) for q in queries]
            if shift is not None:
                first = asked[0] / (float(np.linalg.norm(asked[0])) or 1.0)
                moved = first + np.asarray(shift, dtype=np.float32)
                asked.append(moved / (float(np.linalg.norm(moved)) or 1.0))
            return [self.knn_vec0(model_id, q, k, namespaces=namespaces, statuses=statuses, types=types,
                                  agent=agent) for q in asked]  # fmt: skip

        index = self.index(model_id)
        if index is None:
            return by_vec0()
        from engram_cli.store.knn import Filter
        from engram_cli.store.vector_index import Unbuilt

        spec = Filter(namespaces or None, statuses or None, types or None, agent)
        try:
            return index.search(
                np.asarray(queries, dtype=np.float32), min(max(k, 1), MAX_KNN), spec, exact=exact, shift=shift
            )
        except Unbuilt:  # the file went stale since index() looked, and this process may not rebuild it
            index.reset()
            return by_vec0()

    def prefetch(
        self, model_id: str, queries: np.ndarray, k: int, *, namespace: str, status: str, agent: str, spare: int
    ) -> Prefetched | None:
        """The ``k`` nearest rows of each query, found together now and kept exact while the caller writes
        (:class:`~engram_cli.store.vector_index.Prefetched`); None without an index."""
        index = self.index(model_id)
        if index is None:
            return None
        from engram_cli.store.knn import Filter
        from engram_cli.store.vector_index import Prefetched, Unbuilt

        try:
            return Prefetched(index, queries, k, Filter([namespace], [status], None, agent), spare)
        except Unbuilt:
            index.reset()
            return None

    def knn_vec0(
        self,
        model_id: str,
        query: np.ndarray,
        k: int,
        *,
        namespaces: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        agent: str | None = None,
    ) -> list[tuple[int, float]]:
        """:meth:`knn` answered by sqlite-vec itself, without the index (the reference the index is checked against)."""
        table = self.table_for(model_id)
        if table is None:
            return []
        params: list[Any] = [_blob(query), min(max(k, 1), MAX_KNN)]
        clauses = ["embedding MATCH ?", "k = ?"]
        if namespaces:
            clauses.append(_in("namespace", namespaces, params))
        if statuses:
            clauses.append(_in("status", statuses, params))
        if types:
            clauses.append(_in("memory_type", types, params))
        if agent is not None:
            clauses.append("agent_id = ?")
            params.append(agent)
        rows = self.store.rows(f"SELECT memory_pk, distance FROM {table} WHERE {' AND '.join(clauses)}", params)
        hits = [(int(pk), 1.0 - float(dist)) for pk, dist in rows]
        hits.sort(key=lambda h: -h[1])
        # With several namespaces vec0 answers k per namespace (partition): the k best of them all, as the index.
        return hits[: min(max(k, 1), MAX_KNN)]

    def similarities(self, model_id: str, query: np.ndarray, pks: Sequence[int]) -> list[tuple[int, float]]:
        """Exact cosine for a given set of rows (used when filters are too narrow for KNN), best first."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        found = self.lookup(model_id, pks)
        return sorted(((pk, float(np.dot(v, q))) for pk, v in found.items()), key=lambda h: -h[1])
