"""The operations that need no open database: doctor, the list of bundled models, eval's queries."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engram_cli import doctor as doctormod
from engram_cli.api.results import EvalRun
from engram_cli.config import Paths
from engram_cli.doctor import DoctorReport, ModelListing

if TYPE_CHECKING:
    from engram_cli.api.engram import Engram
    from engram_cli.memory.evaluation import Query

EVAL_MODES = ("hybrid", "bm25", "dense")

__all__ = ["EVAL_MODES", "DoctorReport", "ModelListing", "doctor", "evaluate", "models", "parse_queries"]


def doctor(paths: Paths) -> DoctorReport:
    """Every health check, in the order a person would fix things."""
    return doctormod.run(paths)


def models(active: str, vector_counts: dict[str, int] | None = None) -> ModelListing:
    """The bundled models, ``active`` marked; with a store, :meth:`Engram.models` also counts its vectors."""
    return doctormod.model_rows(active, vector_counts)


def parse_queries(lines: Sequence[str]) -> list[Query]:
    """Labelled queries, one JSON object a line (see README, `engram eval`)."""
    from engram_cli.memory import evaluation

    return evaluation.parse_queries(lines)


def evaluate(
    engram: Callable[[], Engram],
    queries: Sequence[Query] = (),
    *,
    dataset: str | None = None,
    rebuild: bool = False,
    ks: Sequence[int] = (1, 5, 10),
    modes: Sequence[str] = ("hybrid",),
) -> EvalRun:
    """Score recall on ``queries`` in each mode: on the store ``engram()`` opens, or on a dataset's own database.

    A dataset brings its queries; ``queries`` given as well replace them.
    """
    if dataset is None:
        store, owned = engram(), False
    else:
        from engram_cli.api.engram import Engram

        store, dataset_queries = Engram.open_dataset(dataset, rebuild=rebuild)
        owned, queries = True, queries or dataset_queries
    try:
        return EvalRun([store.evaluate(queries, ks=ks, mode=mode) for mode in modes])
    finally:
        if owned:
            store.close()
