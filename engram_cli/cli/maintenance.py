"""audit, recover."""

from __future__ import annotations

from typing import Annotated

import typer

from engram_cli import render
from engram_cli.cli.common import app_context, show
from engram_cli.errors import ProblemsRemain


def audit(
    ctx: typer.Context,
    namespace: Annotated[
        list[str] | None,
        typer.Option("--namespace", "-n", help="Only this namespace (repeatable; default: all of them)."),
    ] = None,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Repair what is safe: redact secrets, rebuild index rows, remove orphans, merge exact duplicates, "
            "re-run decay.",
        ),
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when problems (not informational items) remain: for cron.")
    ] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="SQLite quick_check instead of integrity_check; skip the pairwise checks.")
    ] = False,
    now: Annotated[
        str | None, typer.Option("--now", help="Judge ages as of this time (ISO 8601): for tests and backfills.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full report as JSON.")] = False,
) -> None:
    """Report the store's health: stale, duplicate or conflicting memories, secrets, index and file damage."""
    report = app_context(ctx).engram().audit(namespace=namespace, fix=fix, quick=quick, now=now)
    show(ctx, report, json=as_json)
    if report.damage is not None:
        raise report.damage
    if strict and report.problems:
        names = ", ".join(f"{c.name} ({c.count})" for c in report.problems)
        raise ProblemsRemain(
            f"audit found problems that remain: {names}",
            hint="`engram audit --fix` repairs what is safe; the report says what is left for a person",
        )


def recover(
    ctx: typer.Context,
    output: Annotated[
        str | None,
        typer.Argument(
            metavar="[OUT]", help="The new database (default: <db>.recovered-<time>.db beside it); never overwritten."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Copy every row a damaged database still yields into a new one; the damaged file is only read.

    Vectors that no longer read are made again from their memory's text, and the keyword index
    is rebuilt. The report says what was saved and lost per table, and how to switch to the new file.
    """
    from engram_cli.api import Engram  # numpy and SQLite only for the commands that open a store

    state = app_context(ctx)
    with render.progress("recovering") as advance:
        report = Engram.recover(output=output, config=state.config, paths=state.paths, progress=advance)
    show(ctx, report, json=as_json)


def register(app: typer.Typer) -> None:
    app.command()(audit)
    app.command()(recover)
