"""eval: measure recall on labelled queries."""

from __future__ import annotations

from typing import Annotated

import typer

from engram_cli import render
from engram_cli.cli.context import AppContext
from engram_cli.errors import UsageError
from engram_cli.memory import evaluation

MODES = ("hybrid", "bm25", "dense")


def _app(ctx: typer.Context) -> AppContext:
    obj = ctx.obj
    assert isinstance(obj, AppContext)
    return obj


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
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recall@k, MRR, nDCG@10, interference and latency of recall on labelled queries.

    A line: {"query": …, "namespace"?: …, "filters"?: {…}, "expected": {"ids": […]} | {"contains": […]} |
    {"metadata": {key: value}}}. Without "namespace" a query searches every namespace.
    """
    ks = _ks(k)
    modes = list(MODES) if mode == "all" else [mode]
    if mode != "all" and mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", hint="use hybrid, bm25, dense or all")
    if path is None and dataset is None:
        raise UsageError("give a queries file or --dataset DIR", hint="e.g. engram eval --dataset bench/dev-memory")
    app = _app(ctx)
    if dataset is not None:
        from engram_cli.api import Engram

        engram, queries = Engram.open_dataset(dataset, rebuild=rebuild)
    else:
        engram, queries = app.engram(), []
    try:
        if path is not None:
            queries = evaluation.parse_queries(render.read_lines(path))
        reports = [engram.evaluate(queries, ks=ks, mode=m) for m in modes]
    finally:
        if dataset is not None:
            engram.close()
    render.eval_reports(reports, as_json=as_json, per_query=per_query)


def register(app: typer.Typer) -> None:
    app.command(name="eval")(eval_)
