"""The checks of what is kept beside the memories to answer fast: the vector index (the cache of each model's
vectors must hold exactly what its vec0 table holds) and the memory counts by namespace and status."""

from __future__ import annotations

from engram_cli.memory.audit.report import ERROR, Check
from engram_cli.memory.repair import Work
from engram_cli.store.db import Store


def _vector_index(store: Store, limit: int, work: Work) -> Check:
    stale: list[dict[str, str]] = []
    for model_id, _ in store.vectors.in_use():
        index = store.vectors.index(model_id)
        problem = None if index is None else index.check()
        if problem is not None:
            work.stale_vector_indexes.append(model_id)
            stale.append({"model": model_id, "file": str(index.file) if index else "", "problem": problem})
    return Check(
        "vector_index",
        "vector index files (a cache beside the database) that do not match the vectors stored",
        ERROR,
        count=len(stale),
        examples=stale[:limit],
        hint="`engram audit --fix` rebuilds them (deleting the files is safe too: they are rebuilt on use)",
    )


def _counts(store: Store, limit: int, work: Work) -> Check:
    """The counts that triggers keep of each namespace's memories by status must be what the memories say."""
    wrong = store.memories.miscounted()
    work.recount = bool(wrong)
    return Check(
        "counts",
        "memory counts by namespace and status (kept for `list` and `namespaces`) that differ from the memories",
        ERROR,
        count=len(wrong),
        examples=[
            {"namespace": ns, "status": status, "counted": counted, "memories": held}
            for ns, status, counted, held in wrong[:limit]
        ],
        hint="`engram audit --fix` counts them again",
    )
