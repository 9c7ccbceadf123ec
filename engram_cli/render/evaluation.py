"""`engram eval`: recall@k, MRR, nDCG, interference, abstention and latency, one row per mode and group."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_cli.render.console import console

if TYPE_CHECKING:
    from engram_cli.api.results import EvalRun
    from engram_cli.memory.evaluation import Scores


def evaluated(run: EvalRun, *, per_query: bool = False) -> None:
    """One row per mode (overall), then the per-group rows of each mode (``per_query`` is for JSON)."""
    from rich.table import Table

    reports = run.reports

    ks = reports[0].ks
    table = Table(box=None, pad_edge=False)
    for column in (
        "mode",
        "group",
        "n",
        *(f"R@{k}" for k in ks),
        "MRR",
        "nDCG@10",
        f"interf@{ks[-1]}",
        "abstain",
        "p50 ms",
        "p95 ms",
    ):
        table.add_column(column, justify="left" if column in ("mode", "group") else "right")

    def row(mode: str, group: str, s: Scores, latency: dict[str, float] | None) -> None:
        times = [f"{latency['p50']:.1f}", f"{latency['p95']:.1f}"] if latency else ["", ""]
        if s.queries:
            ranking = [
                *(f"{s.recall[k]:.3f}" for k in ks),
                f"{s.mrr:.3f}",
                f"{s.ndcg:.3f}",
                f"{s.interference[ks[-1]]:.3f}",
            ]
        else:  # a group of no-answer queries only: nothing to rank
            ranking = [""] * (len(ks) + 3)
        abstain = f"{s.abstention:.3f} of {s.no_answer}" if s.abstention is not None else ""
        table.add_row(mode, group, str(s.queries), *ranking, abstain, *times)

    for r in reports:
        row(r.mode, "all", r.overall, r.latency_ms)
    for r in reports:
        for name, scores in sorted(r.groups.items()):
            row(r.mode, name, scores, None)
    console().print(table)
