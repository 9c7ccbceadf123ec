"""Vectors: one sqlite-vec ``vec0`` table per embedding model.

A table per model lets rows of two models coexist while `reembed` migrates a database
progressively. The table's partition key (namespace) and metadata columns (status,
memory type, agent) let a KNN query filter before it ranks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now

MAX_KNN = 4096  # sqlite-vec refuses larger k


def table_name(model_id: str) -> str:
    return "vec_" + re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")


def table_for(store: Store, model_id: str) -> str | None:
    value = store.scalar("SELECT vec_table FROM embedding_models WHERE model_id = ?", (model_id,))
    return None if value is None else str(value)


def ensure_table(store: Store, model_id: str, dim: int) -> str:
    """The vec0 table of a model, created (with its registry row) on first use."""
    row = store.one("SELECT vec_table, dim FROM embedding_models WHERE model_id = ?", (model_id,))
    if row is not None:
        if int(row[1]) != dim:
            from engram_cli.errors import ModelError

            raise ModelError(f"model {model_id} has dimension {dim}, but its stored vectors have {row[1]}")
        return str(row[0])
    name = table_name(model_id)
    with store.write():
        store.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0("
            f"memory_pk INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine, "
            "namespace TEXT PARTITION KEY, status TEXT, memory_type TEXT, agent_id TEXT)"
        )
        store.execute(
            "INSERT INTO embedding_models (model_id, dim, vec_table, created_at) VALUES (?, ?, ?, ?)",
            (model_id, dim, name, iso_now()),
        )
    return name


def models_in_use(store: Store) -> list[tuple[str, str]]:
    return [
        (str(r[0]), str(r[1])) for r in store.rows("SELECT model_id, vec_table FROM embedding_models ORDER BY model_id")
    ]


def put(
    store: Store,
    table: str,
    pk: int,
    vector: np.ndarray,
    *,
    namespace: str,
    status: str,
    memory_type: str,
    agent: str,
) -> None:
    # vec0 has no upsert: delete first so the same call serves insert and replace.
    store.execute(f"DELETE FROM {table} WHERE memory_pk = ?", (pk,))
    store.execute(
        f"INSERT INTO {table} (memory_pk, embedding, namespace, status, memory_type, agent_id) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (pk, np.asarray(vector, dtype=np.float32).tobytes(), namespace, status, memory_type, agent),
    )


def delete(store: Store, table: str, pk: int) -> None:
    store.execute(f"DELETE FROM {table} WHERE memory_pk = ?", (pk,))


def set_status(store: Store, table: str, pk: int, status: str) -> None:
    store.execute(f"UPDATE {table} SET status = ? WHERE memory_pk = ?", (status, pk))


def set_type(store: Store, table: str, pk: int, memory_type: str) -> None:
    store.execute(f"UPDATE {table} SET memory_type = ? WHERE memory_pk = ?", (memory_type, pk))


def get(store: Store, table: str, pks: Iterable[int]) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for pk in pks:
        row = store.one(f"SELECT embedding FROM {table} WHERE memory_pk = ?", (pk,))
        if row is not None:
            out[pk] = np.frombuffer(row[0], dtype=np.float32)
    return out


def of_namespace(store: Store, table: str, namespace: str, pks: set[int] | None = None) -> dict[int, np.ndarray]:
    """Every vector of one namespace (one partition scan), optionally only those of ``pks``."""
    out: dict[int, np.ndarray] = {}
    for pk, blob in store.rows(f"SELECT memory_pk, embedding FROM {table} WHERE namespace = ?", (namespace,)):
        if pks is None or pk in pks:
            out[int(pk)] = np.frombuffer(blob, dtype=np.float32)
    return out


def _in(column: str, values: Sequence[str], params: list[Any]) -> str:
    params.extend(values)
    if len(values) == 1:
        return f"{column} = ?"
    return f"{column} IN ({', '.join('?' for _ in values)})"


def knn(
    store: Store,
    table: str,
    query: np.ndarray,
    k: int,
    *,
    namespaces: Sequence[str] | None = None,
    statuses: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    agent: str | None = None,
) -> list[tuple[int, float]]:
    """Nearest rows by cosine: (memory_pk, cosine similarity), best first."""
    params: list[Any] = [np.asarray(query, dtype=np.float32).tobytes(), min(max(k, 1), MAX_KNN)]
    where = ["embedding MATCH ?", "k = ?"]
    if namespaces:
        where.append(_in("namespace", namespaces, params))
    if statuses:
        where.append(_in("status", statuses, params))
    if types:
        where.append(_in("memory_type", types, params))
    if agent is not None:
        where.append("agent_id = ?")
        params.append(agent)
    rows = store.rows(f"SELECT memory_pk, distance FROM {table} WHERE {' AND '.join(where)}", params)
    hits = [(int(pk), 1.0 - float(dist)) for pk, dist in rows]
    hits.sort(key=lambda h: -h[1])
    return hits


def similarities(store: Store, table: str, query: np.ndarray, pks: Sequence[int]) -> list[tuple[int, float]]:
    """Exact cosine for a given set of rows (used when filters are too narrow for KNN)."""
    q = np.asarray(query, dtype=np.float32)
    vectors = get(store, table, pks)
    return sorted(((pk, float(np.dot(v, q))) for pk, v in vectors.items()), key=lambda h: -h[1])


def counts_by_model(store: Store) -> dict[str, int]:
    """How many memories each model's vectors represent."""
    rows = store.rows(
        "SELECT embedding_model, count(*) FROM memories WHERE embedding_model IS NOT NULL GROUP BY embedding_model"
    )
    return {str(r[0]): int(r[1]) for r in rows}
