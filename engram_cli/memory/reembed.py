"""reembed: move memories to another bundled model, batch by batch.

Each batch is one transaction that writes the new vectors, removes the old ones and
records the new model on the rows, so an interrupted run leaves every row with exactly
one vector, and a re-run carries on with the rows still on other models. Recall embeds
the query with every model present, so nothing becomes unrecallable half-way. The turns kept
as evidence move the same way, after the memories, each embedded again with its neighbours as
context. When no row (memory or turn) is left on another model, the target becomes the
database's active model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from engram_cli.errors import InvalidInput
from engram_cli.memory import evidence as evidencemod
from engram_cli.serialize import json_meta
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now

ACTIVE_MODEL_KEY = "active_model"
# The model an unfinished reembed is moving rows to, so `audit` can show its progress.
TARGET_MODEL_KEY = "reembed_target"


@dataclass
class ReembedReport:
    model: str
    done: int = field(metadata=json_meta(key="reembedded"))
    remaining: int
    active: bool


def pending(store: Store, model_id: str) -> int:
    """Memories and evidence turns whose vector is not yet of ``model_id``."""
    return store.memories.count_not_on_model(model_id) + store.evidence.count_not_on_model(model_id)


def run(
    store: Store,
    model_id: str,
    dim: int,
    embed: Callable[[Sequence[str]], np.ndarray],
    *,
    batch: int = 64,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReembedReport:
    if batch < 1:
        raise InvalidInput("`batch` must be at least 1", param="batch")
    if limit is not None and limit < 1:
        raise InvalidInput("`limit` must be at least 1", param="limit")
    total = pending(store, model_id)
    goal = total if limit is None else min(total, limit)
    store.vectors.ensure(model_id, dim)
    if total:
        store.set_setting(TARGET_MODEL_KEY, model_id)
    done = 0
    while done < goal:
        memories = store.memories.not_on_model(model_id, min(batch, goal - done))
        if not memories:
            break
        matrix = embed([m.passage for m in memories])
        at = iso_now()
        with store.write():
            for memory, vector in zip(memories, matrix, strict=True):
                if memory.embedding_model:
                    store.vectors.delete(memory.embedding_model, memory.pk)
                store.vectors.put(
                    model_id, memory.pk, vector,
                    namespace=memory.namespace, status=memory.status, memory_type=memory.type, agent=memory.agent,
                )  # fmt: skip
                store.memories.move_to_model(memory.pk, model_id, at=at)
                store.events.add(
                    memory.id, "reembedded", at,
                    before={"embedding_model": memory.embedding_model}, after={"embedding_model": model_id},
                    actor="reembed",
                )  # fmt: skip
        done += len(memories)
        if progress:
            progress(done, goal)
    while done < goal:
        turns = store.evidence.not_on_model(model_id, min(batch, goal - done))
        if not turns:
            break
        with store.read():
            texts = [evidencemod.passage_of(store, turn) for turn in turns]
        matrix = embed(texts)
        with store.write():
            for turn, vector in zip(turns, matrix, strict=True):
                store.evidence.put_vector(model_id, turn.pk, vector, namespace=turn.namespace, kind=turn.kind)
        done += len(turns)
        if progress:
            progress(done, goal)
    remaining = pending(store, model_id)
    if remaining == 0:
        with store.write():
            store.set_setting(ACTIVE_MODEL_KEY, model_id)
            store.delete_setting(TARGET_MODEL_KEY)
    return ReembedReport(model=model_id, done=done, remaining=remaining, active=remaining == 0)
