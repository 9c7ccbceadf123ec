"""`engram eval`: recall@k, MRR, nDCG, interference, abstention and latency, one row per mode and group;
`eval --harvest`: what ingest kept from labelled sessions, one row per source and language."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_cli.render.console import console, note, out

if TYPE_CHECKING:
    from engram_cli.api.results import EvalRun
    from engram_cli.memory.evaluation import Scores
    from engram_cli.memory.harvest_eval import HarvestReport, SessionScore, Tally


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


def _metric(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def harvested(report: HarvestReport, *, verbose: bool = False) -> None:
    """The metrics overall, by source and by language; with ``verbose``, each session's noise and misses."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    columns = (
        "group", "sessions", "memories", "mem/session", "precision", "recall", "answer@5", "fix recall",
        "outcome", "scope",
    )  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "group" else "right")

    def row(name: str, t: Tally) -> None:
        table.add_row(
            name, str(t.sessions), str(t.memories), _metric(t.memories_per_session), _metric(t.precision),
            _metric(t.recall), _metric(t.answerability), _metric(t.fix_recall), _metric(t.outcome_correctness),
            _metric(t.scope_correctness),
        )  # fmt: skip

    row("all", report.overall)
    for name, tally in sorted(report.groups.items()):
        row(name, tally)
    console().print(table)
    out(f"{report.memories} memories stored, {report.unlabelled} of them from no labelled session")
    for line in report.ingest_errors:
        note(f"error: ingest: {line}")
    if verbose:
        for s in report.sessions:
            _session(s)


def _session(s: SessionScore) -> None:
    lines: list[str] = []
    lines += [f"  noise    {j.id[:8]} {j.type:<10} [{j.namespace}] {j.text}  <- {j.why}" for j in s.noise]
    lines += [f"  missing  {item}" for item in s.missing]
    lines += [f"  scope    {j.id[:8]} {j.why}" for j in s.wrong_scope]
    lines += [f"  question {q}" for q in s.unanswered]
    if s.outcome is not None:
        lines.append(f"  outcome  {s.outcome}")
    if lines:
        out(f"\n{s.session} ({s.lang}, {s.project}): {s.tally.memories} memories")
        for line in lines:
            out(line)
