"""ingest: harvest the logs other tools write."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from engram_cli import render
from engram_cli.api import SourceListing
from engram_cli.cli.common import JsonReportOpt, app_context, show
from engram_cli.errors import EngramError, UsageError


def ingest(
    ctx: typer.Context,
    source: Annotated[
        str | None,
        typer.Argument(
            metavar="[SOURCE]", help="One source (claude-code, codex, aider, zsh, notes …); default: all found."
        ),
    ] = None,
    given: Annotated[
        str | None,
        typer.Argument(
            metavar="[PATH]", help="A file or directory to read (chatgpt, claude-ai and chat need one); same as --path."
        ),
    ] = None,
    path: Annotated[
        str | None, typer.Option("--path", help="Read this file or directory instead of the default place.")
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="Show the sources found, what is new, and the cursors.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be stored; store nothing.")] = False,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Store everything here (default: each log's project).")
    ] = None,
    max_seconds: Annotated[
        float | None,
        typer.Option(
            "--max-seconds", min=0, help="Stop after this long, between files or at a line of a long log (hooks, cron)."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing unless something fails.")] = False,
    as_json: JsonReportOpt = False,
) -> None:
    """Turn assistants' logs, chat exports, shell history and notes into memories: incremental, idempotent, redacted.

    Run it twice and the second run adds nothing; interrupt it and the next run finishes the job.
    """
    if given is not None:
        if path is not None and path != given:
            raise UsageError("give the path once: as PATH or with --path", hint=f"e.g. engram ingest {source} {given}")
        path = given
    engram = app_context(ctx).engram()
    if list_:
        if dry_run or path:
            raise UsageError("--list shows what is there; it takes no --dry-run or --path")
        show(ctx, SourceListing(engram.ingest_sources()), json=as_json)
        return
    with render.progress("ingesting") as advance:
        report = engram.ingest(
            source, path=path, dry_run=dry_run, namespace=namespace, max_seconds=max_seconds, progress=advance
        )
    verbose = logging.getLogger("engram_cli").isEnabledFor(logging.INFO)
    show(ctx, report, json=as_json, quiet=quiet, verbose=verbose)
    if report.errors:
        raise EngramError(
            f"{len(report.errors)} file(s) could not be ingested; the rest was",
            hint="see the messages above; those files are read again on the next run",
        )


def register(app: typer.Typer) -> None:
    app.command()(ingest)
