"""What an ingest did, and what `ingest --list` finds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram_cli.render.console import clip, console, note, out

if TYPE_CHECKING:
    from engram_cli.api.results import SourceListing
    from engram_cli.ingest.report import IngestReport


def ingested(report: IngestReport, *, quiet: bool = False, verbose: bool = False) -> None:
    """One line per source that had something new; the memories themselves on a dry run; errors always."""
    for source in report.sources:
        for line in source.errors:
            note(f"error: {source.name}: {line}")
    if quiet:
        return
    for source in report.sources:
        if report.dry_run:
            for m in source.memories:
                if m.action != "unchanged":
                    verb = "would update" if m.action == "updated" else "would store"
                    out(f"{verb} {m.type:<10} {m.importance:.2f} [{m.namespace}] {clip(m.content, 90)}")
        skipped = sum(source.skipped.values())
        stored = source.count("created", "new", "merged", "duplicate", "updated")
        if not (stored or skipped or report.dry_run):
            continue
        parts = [
            f"{source.files} file(s), {source.changed} changed",
            f"{source.sessions} session part(s)",
            f"{source.count('created', 'new')} new memories",
        ]
        if source.count("merged", "duplicate"):
            parts.append(f"{source.count('merged', 'duplicate')} merged into existing ones")
        if source.count("updated"):
            parts.append(f"{source.count('updated')} updated")
        if source.redacted:
            parts.append(f"{sum(source.redacted.values())} secret(s) redacted")
        if skipped:
            reasons = ", ".join(f"{n} {reason}" for reason, n in source.skipped.most_common())
            parts.append(f"skipped {reasons}")
        out(f"{'dry run: ' if report.dry_run else ''}{source.name}: " + "; ".join(parts))
        if verbose:
            for line in source.notes:
                note(f"  {line}")
    for path in report.abandoned:
        note(f"gave up on {path}: still being read well past --max-seconds; it is read again on the next run")
    if report.stopped_early:
        note("stopped at --max-seconds; the next run continues where this one stopped")
    if report.found_nothing:
        _found_nothing(report.looked)


def _found_nothing(looked: Sequence[dict[str, Any]]) -> None:
    """Where each source looked, so that a wrong --path or a tool kept elsewhere is seen at once."""
    if len(looked) == 1 and looked[0]["path"]:
        place = looked[0]
        note(f"found nothing to ingest at {place['path']}: {place['source']} reads {place['reads']}")
        return
    if len(looked) == 1:
        note(f"found nothing to ingest: {looked[0]['source']} found no {looked[0]['reads']}")
    else:
        note("found nothing to ingest in the default places:")
        for place in looked:
            note(f"  {place['source']:<12} {place['reads']}")
    note("logs kept elsewhere: engram ingest SOURCE --path P")


def sources(listing: SourceListing) -> None:
    """Every source with something in its default places: files, what is new, the cursors."""
    from rich.table import Table

    rows = listing.sources

    table = Table(box=None, pad_edge=False)
    columns = ["source", "files", "new", "changed", "pending", "sessions", "memories", "last ingest"]
    skipping = any(r.get("skipped") for r in rows)
    if skipping:  # FIFOs, broken links and the like where logs should be: worth a column only when there
        columns.insert(4, "skipped")
    for column in columns:
        table.add_column(column)
    for r in rows:
        if r.get("error"):
            note(f"error: {r['source']}: {r['error']}")
        if not r["files"] and not r["sessions_seen"]:
            continue
        cells = [
            r["source"], str(r["files"]), str(r["new"]), str(r["changed"]), _size(r["pending_bytes"]),
            str(r["sessions_seen"]), str(r["memories"]), (r["last_ingest"] or "never")[:16],
        ]  # fmt: skip
        if skipping:
            cells.insert(4, str(r.get("skipped", 0)))
        table.add_row(*cells)
    if not table.row_count:
        note("no logs found in the default places; use `engram ingest SOURCE --path P`")
        return
    console().print(table)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}"
        size /= 1024
    return f"{size:.0f} GB"
