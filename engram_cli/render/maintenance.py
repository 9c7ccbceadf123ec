"""The maintenance verbs: decay, compact, reembed and recover. Quiet when nothing changed (cron mails output)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from engram_cli.render.console import clip, note, out, short

if TYPE_CHECKING:
    from engram_cli.memory.compact import CompactReport
    from engram_cli.memory.decay import DecayReport
    from engram_cli.memory.recover import RecoverReport
    from engram_cli.memory.reembed import ReembedReport


def decay(report: DecayReport) -> None:
    """Quiet unless a score moved by the reporting step or a memory was archived (cron mails what a job prints).

    The small daily drifts are applied all the same; --json lists them too.
    """
    notable = report.notable
    if report.dry_run:
        for c in notable:
            verb = "would archive" if c.archived else "would decay"
            out(f"{verb} {short(c.id)}  {c.before:.3f} -> {c.after:.3f}  {clip(c.content, 60)}")
    if notable or report.dry_run:
        prefix = "dry run: " if report.dry_run else ""
        drifts = f"; {report.silent_drifts} smaller drifts" if report.silent_drifts else ""
        out(
            f"{prefix}{len(notable)} of {report.scanned} active memories decayed by {report.step:g} or more, "
            f"{report.archived} archived{drifts} (as of {report.now})"
        )


def compact(report: CompactReport) -> None:
    """The plan (dry run) or what was done; quiet when nothing changed, like decay."""
    would = "would " if report.dry_run else ""
    for c in report.clusters:
        if c.promoted and c.memory_id:
            target = f"{short(c.memory_id)}, one of them, now a semantic memory"
        else:
            target = f"new semantic memory {short(c.memory_id)}" if c.memory_id else "a new semantic memory"
        out(f"{would}consolidate {len(c.members)} episodes in {c.namespace} into {target}:")
        for m in c.members:
            out(f"    {short(m.id)}  {clip(m.content, 70)}")
        out(f"  -> {clip(c.content, 200)}")
    for f in report.folds:
        what = "join" if f.kind == "joined" else "fold duplicate"
        out(f"{would}{what} {short(f.loser.id)} into {short(f.winner_id)} (cosine {f.similarity:.3f})  "
            f"{clip(f.loser.content, 60)}")  # fmt: skip
    for r in report.capped:
        out(f"{would}archive {short(r.id)} (over the cap)  {clip(r.content, 60)}")
    for line in report.skipped:
        note(line)
    for line in report.errors:
        note(f"error: {line}")
    if report.changed or report.dry_run:
        decay = report.decay
        joined = sum(1 for f in report.folds if f.kind == "joined")
        out(
            f"{'dry run: ' if report.dry_run else ''}{len(report.clusters)} semantic memories from "
            f"{report.consolidated - joined} episodes, {joined} episodes joined existing ones, "
            f"{len(report.folds) - joined} duplicates folded, {len(report.capped)} over the cap archived; "
            f"decay: {len(decay.changes) if decay else 0} updated, {decay.archived if decay else 0} archived "
            f"({report.scanned} active memories, as of {report.now})"
        )


def reembed(report: ReembedReport) -> None:
    state = "now the active model" if report.active else f"{report.remaining} memories still on other models"
    out(f"re-embedded {report.done} memories with {report.model}; {state}")


def recover(report: RecoverReport) -> None:
    """Per table what was saved and lost, then how to switch to the new file."""
    out(f"recovered {report.source} into {report.output}")
    out(f"  {'table':<34} {'read':>8} {'lost':>8}")
    for t in report.tables:
        extra = []
        if t.reembedded:
            extra.append(f"{t.reembedded} re-embedded")
        if t.dropped:
            extra.append(f"{t.dropped} left out with their lost memory")
        if t.rejected:
            extra.append(f"{t.rejected} unusable")
        lost = "?" if t.lost is None else str(t.lost)
        out(f"  {t.table:<34} {t.read:>8} {lost:>8}  {', '.join(extra)}".rstrip())
    out(f"  keyword index rebuilt for {report.keyword_rows} memories")
    if report.links_cleared:
        out(f"  {report.links_cleared} links to lost memories (superseded_by, consolidated_into) cleared")
    if report.lost_memory_ids:
        shown = ", ".join(i[:8] for i in report.lost_memory_ids[:10])
        more = f" and {len(report.lost_memory_ids) - 10} more" if len(report.lost_memory_ids) > 10 else ""
        out(f"  lost memories: {shown}{more} (--json lists them all)")
    remade = sum(t.reembedded for t in report.tables)
    if report.complete:
        out("nothing was lost" + (f"; {remade} vectors were made again from their memory's text" if remade else ""))
    else:
        out("the rows counted as lost were on pages that could not be read")
    source, output, aside = report.source, shlex.quote(report.output), f"{report.source}.damaged"
    # A -wal beside the damaged file belongs to it: left there, SQLite would apply it to the new one.
    moves = [f"mv {shlex.quote(f)} {shlex.quote(aside + f[len(source) :])}" for f in [source, *report.side_files]]
    out("\nTo switch to it, keep the damaged file aside and move the new one in its place:")
    out("  " + " && ".join([*moves, f"mv {output} {shlex.quote(source)}"]))
    out(f"or use it where it is: engram --db {output} …")
