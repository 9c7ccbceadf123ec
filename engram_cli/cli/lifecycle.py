"""decay, compact, touch, history, export, import, reembed."""

from __future__ import annotations

from typing import Annotated

import typer

from engram_cli import render
from engram_cli.api import History, Touched
from engram_cli.cli.common import JsonOpt, JsonReportOpt, JsonSummaryOpt, app_context, read_lines, show
from engram_cli.errors import EngramError, InvalidInput, UsageError

# Options the maintenance verbs share: they run over every namespace unless told otherwise.
NowOption = Annotated[
    str | None, typer.Option("--now", help="Compute as of this time (ISO 8601): for tests and backfills.")
]
AllNamespacesOption = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Only this namespace (default: all of them).")
]


def decay(
    ctx: typer.Context,
    now: NowOption = None,
    namespace: AllNamespacesOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")] = False,
    as_json: JsonSummaryOpt = False,
) -> None:
    """Recompute decay scores and archive faded memories. Quiet unless something changed (for cron)."""
    show(ctx, app_context(ctx).engram().decay(now=now, namespace=namespace, dry_run=dry_run), json=as_json)


def compact(
    ctx: typer.Context,
    now: NowOption = None,
    namespace: AllNamespacesOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; change nothing.")] = False,
    as_json: JsonReportOpt = False,
) -> None:
    """Consolidate episodes into semantic memories, fold near duplicates, archive what faded, enforce the cap.

    Nothing is deleted: consolidated memories are archived with a link to the memory that
    carries them. Safe to run from cron: quiet unless something changed, and a second run
    while one is going exits at once (code 75).
    """
    with render.progress("compacting") as advance:
        report = app_context(ctx).engram().compact(now=now, namespace=namespace, dry_run=dry_run, progress=advance)
    show(ctx, report, json=as_json)
    if report.errors:
        raise EngramError(
            f"{len(report.errors)} clusters were left as they are because summarizer.command failed",
            hint="fix the command, or clear it to use the built-in summary: engram config set summarizer.command ''",
        )


def touch(
    ctx: typer.Context,
    memory_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Memory ids or unique prefixes.")],
    as_json: JsonOpt = False,
) -> None:
    """Remember again: count an access, restore full freshness, bring an archived memory back."""
    if not memory_ids:
        raise UsageError("give at least one memory id")
    show(ctx, Touched(app_context(ctx).engram().touch(memory_ids)), json=as_json)


def history(
    ctx: typer.Context,
    memory_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help="One memory's timeline; without it, recent events.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, help="How many recent events.")] = 50,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="Only events of this kind (created, merged, …; repeatable).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What changed: one memory's history, or the latest events of the whole database."""
    engram = app_context(ctx).engram()
    if memory_id is not None:
        _, events = engram.history(memory_id)
        if kind:
            events = [e for e in events if e.kind in kind]
    else:
        events = engram.events(limit=limit, kinds=kind)
    show(ctx, History(events), json=as_json)


def export(
    ctx: typer.Context,
    path: Annotated[
        str | None, typer.Argument(metavar="[FILE]", help="Write here, created 0600 (default, or -: standard output).")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace (default: this git project's, else 'global').")
    ] = None,
    global_scope: Annotated[bool, typer.Option("--global", "-g", help="The global scope.")] = False,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Every namespace.")] = False,
    with_vectors: Annotated[bool, typer.Option("--vectors", help="Include each memory's vector.")] = False,
) -> None:
    """Write memories as JSONL: one per line with tags, sources, metadata and events."""
    records = (
        app_context(ctx)
        .engram()
        .export(
            with_vectors=with_vectors, namespace=namespace, global_scope=global_scope, all_namespaces=all_namespaces
        )
    )
    render.export(records, path)


def import_(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="FILE", help="A JSONL export, or - for standard input.")],
    atomic: Annotated[bool, typer.Option("--atomic", help="Import nothing if any line is bad.")] = False,
    as_json: JsonSummaryOpt = False,
) -> None:
    """Read memories written by `engram export`, or minimal records with the fields `engram add` takes.

    Every text is redacted before it is stored. Bad lines are reported by number and skipped;
    when no line could be imported, the exit status is 1.
    """
    report = app_context(ctx).engram().import_lines(read_lines(path), atomic=atomic)
    show(ctx, report, json=as_json)
    if report.errors and not report.imported:
        raise InvalidInput(
            f"nothing was imported: {len(report.errors)} bad line(s)",
            hint="each bad line is listed above with the reason; a line needs at least a non-empty 'content'",
        )


def reembed(
    ctx: typer.Context,
    model: Annotated[str, typer.Option("--model", help="Bundled model id (see `engram models`).")],
    batch: Annotated[int, typer.Option("--batch", min=1, help="Memories per transaction.")] = 64,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Stop after this many.")] = None,
    as_json: JsonSummaryOpt = False,
) -> None:
    """Re-embed memories with another model, in resumable batches; it becomes active when all are done."""
    with render.progress("re-embedding") as advance:
        report = app_context(ctx).engram().reembed(model, batch=batch, limit=limit, progress=advance)
    show(ctx, report, json=as_json)


def register(app: typer.Typer) -> None:
    app.command()(reembed)
    app.command()(export)
    app.command(name="import")(import_)
    app.command()(decay)
    app.command()(compact)
    app.command()(touch)
    app.command()(history)
