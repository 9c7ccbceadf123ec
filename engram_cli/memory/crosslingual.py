"""Cross-language recall: move a query's vector from its language's region to the other's.

Multilingual embedding models keep a language signal in every vector: a Chinese query's
nearest neighbours are Chinese memories, however well an English memory answers it. The
mean vector of each script's memories carries most of that signal, so a query shifted by
(mean of the other script - mean of its own) lands among the other script's memories
near its meaning. recall runs a second nearest-neighbour search with the shifted vector
and fuses its other-script hits with the rest.

The means come from the database's own vectors, from a sample, cached in the settings
table and recomputed when the number of vectors has grown or shrunk by a fifth. That
number comes from the vector index, which holds it: counting in SQL reads a whole table
(`count(*)` of the memories took 2 ms of every recall at 100k rows; of a vec0 table, 73 ms).
Without an index, the memories are counted.
"""

from __future__ import annotations

import json

import numpy as np

from engram_cli.lang import text as textmod
from engram_cli.store.db import Store

SAMPLE = 4000
# Too few memories of a script to say where its region is.
MIN_PER_SCRIPT = 20
STALE = 0.2


def _key(model_id: str) -> str:
    return f"script_means:{model_id}"


def script_means(store: Store, model_id: str) -> dict[str, np.ndarray]:
    """Mean vector per script (latin, cjk) of the memories with this model's vectors."""
    vectors = store.vectors.count(model_id)
    count = store.memories.count() if vectors is None else vectors
    cached = store.setting(_key(model_id))
    if cached:
        data = json.loads(cached)
        if data.get("count") and abs(count - data["count"]) <= STALE * data["count"]:
            return {s: np.asarray(v, dtype=np.float32) for s, v in data["means"].items()}
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}
    step = max(1, count // SAMPLE)
    for vector, content in store.vectors.sample(model_id, step, SAMPLE):
        script = textmod.script_of(content)
        sums[script] = sums.get(script, 0) + vector
        counts[script] = counts.get(script, 0) + 1
    means = {s: sums[s] / counts[s] for s in sums if counts[s] >= MIN_PER_SCRIPT}
    payload = {"count": count, "means": {s: m.round(6).tolist() for s, m in means.items()}}
    if store.read_only is None:  # a read-only database recomputes them each time
        store.set_setting(_key(model_id), json.dumps(payload))
    return {s: np.asarray(m, dtype=np.float32) for s, m in means.items()}


def shift(query_script: str, means: dict[str, np.ndarray]) -> tuple[str, np.ndarray] | None:
    """(the other script, the step from the query's region to its region), or None when either is unknown."""
    other = "cjk" if query_script == "latin" else "latin"
    if query_script not in means or other not in means:
        return None
    return other, (means[other] - means[query_script]).astype(np.float32)


def shifted(query_vector: np.ndarray, query_script: str, means: dict[str, np.ndarray]) -> tuple[str, np.ndarray] | None:
    """(the other script, the query moved into its region), or None when either region is unknown."""
    step = shift(query_script, means)
    if step is None:
        return None
    other, delta = step
    moved = query_vector + delta
    norm = float(np.linalg.norm(moved))
    if norm == 0:
        return None
    return other, (moved / norm).astype(np.float32)
