"""eval: measure recall on labelled queries."""

from __future__ import annotations

from typing import Annotated

import typer

from engram_cli import render
from engram_cli.api import system
from engram_cli.cli.common import JsonOpt, app_context, read_lines, show
from engram_cli.errors import UsageError


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise UsageError(f"--k takes whole numbers separated by commas, not {text!r}") from exc
    if not ks or ks[0] < 1:
        raise UsageError("--k values must be at least 1")
    return ks


def eval_(
    ctx: typer.Context,
    path: Annotated[
        str | None, typer.Argument(metavar="[FILE]", help="Labelled queries (JSONL); - for standard input.")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option("--dataset", help="A directory with *memories.jsonl and *queries.jsonl, loaded into its own DB."),
    ] = None,
    k: Annotated[str, typer.Option("--k", help="Cut-offs for recall@k, comma-separated.")] = "1,5,10",
    mode: Annotated[
        str, typer.Option("--mode", help="hybrid (engram's recall), bm25 or dense alone, or all three.")
    ] = "hybrid",
    per_query: Annotated[bool, typer.Option("--per-query", help="With --json: every query's hits.")] = False,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild the cached dataset database.")] = False,
    harvest: Annotated[
        str | None,
        typer.Option(
            "--harvest",
            help="A harvest benchmark (home/ + labels/*.jsonl, e.g. bench/harvest): ingest it into a fresh DB "
            "and score what was kept. With -v: each session's noise and misses.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall@k, MRR, nDCG@10, interference, abstention and latency of recall on labelled queries.

    A line: {"query": …, "namespace"?: …, "filters"?: {…}, "expected": {"ids": […]} | {"contains": […]} |
    {"metadata": {key: value}} | {"none": true}}. Without "namespace" a query searches every namespace.
    {"none": true} marks a query the store has no answer to: abstention is the share of those that got
    no hit above the relevance floor; the other metrics are over the answerable queries.

    --harvest DIR ingests a harvest benchmark's logs into a fresh database and reports precision, recall,
    answerability, error→fix recall, outcome and scope correctness, by source and by language.
    """
    if harvest is not None:
        if path is not None or dataset is not None:
            raise UsageError("--harvest scores a benchmark of its own; it takes no FILE or --dataset")
        from engram_cli.api import harvest as harvestmod

        app = app_context(ctx)
        with render.progress("ingesting") as advance:
            report = harvestmod.evaluate(harvest, paths=app.paths, config=app.config, progress=advance)
        show(ctx, report, json=as_json, verbose=app.verbose > 0)
        return
    ks = _ks(k)
    modes = list(system.EVAL_MODES) if mode == "all" else [mode]
    if mode != "all" and mode not in system.EVAL_MODES:
        raise UsageError(f"unknown mode {mode!r}", hint="use hybrid, bm25, dense or all")
    if path is None and dataset is None:
        raise UsageError("give a queries file or --dataset DIR", hint="e.g. engram eval --dataset bench/dev-memory")
    queries = system.parse_queries(read_lines(path)) if path is not None else []
    run = system.evaluate(app_context(ctx).engram, queries, dataset=dataset, rebuild=rebuild, ks=ks, modes=modes)
    show(ctx, run, json=as_json, per_query=per_query)


def register(app: typer.Typer) -> None:
    app.command(name="eval")(eval_)
