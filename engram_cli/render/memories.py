"""Memories one by one: what add and edit did, pages of list, inspect, history, forget, touch and import."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from engram_cli.render.console import clip, console, escape, note, out, plain_lines, plain_table, short, shown_text

if TYPE_CHECKING:
    from engram_cli.api.results import Forgotten, History, Inspection, NamespaceListing, Page, Touched
    from engram_cli.memory.edit import EditResult
    from engram_cli.memory.model import AddResult, Event
    from engram_cli.memory.transfer import ImportReport


def added(result: AddResult) -> None:
    """The id on stdout; what happened to it (merged, superseded, redacted) on stderr."""
    out(result.id)
    if result.redacted:
        kinds = ", ".join(sorted(set(result.redacted)))
        note(
            f"redacted {len(result.redacted)} secret(s) ({kinds}) before storing; "
            "--keep-secrets stores the text as given"
        )
    if result.action == "merged":
        note(
            f"merged into existing memory {short(result.id)} (cosine {result.similarity:.3f}); "
            "the new text is kept as a source"
        )
    elif result.action == "duplicate":
        note(f"already remembered as {short(result.id)}; counted as a reminder")
    elif result.action == "updated":
        was = f" (was: {clip(result.previous, 60)})" if result.previous is not None else ""
        note(f"updated {result.memory.key} in place in {result.memory.namespace}{was}")
    elif result.action == "unchanged":
        note(f"{result.memory.key} already has this value in {result.memory.namespace}")
    elif result.memory.key is not None:
        note(f"set {result.memory.key} in {result.memory.namespace}")
    for old in result.superseded:
        note(f"supersedes memory {short(old)}: it leaves recall (still inspectable) with half its importance")
    if result.action == "created" and result.similar_id and not result.superseded:
        note(
            f"similar to memory {short(result.similar_id)} (cosine {result.similarity:.3f}) but kept apart: "
            + "; ".join(result.kept_apart_because or [])
        )


def edited(result: EditResult) -> None:
    """The id on stdout; which fields changed on stderr."""
    out(result.memory.id)
    if result.redacted:
        kinds = ", ".join(sorted(set(result.redacted)))
        note(f"redacted {len(result.redacted)} secret(s) ({kinds}); --keep-secrets stores the text as given")
    if result.changed:
        note(f"edited {', '.join(result.changed)} (version {result.memory.version})")
    else:
        note("nothing changed: it already was so")


def more(page: Page) -> None:
    """When more match than the page shows, how to see them (on stderr, so that JSON stays a list)."""
    if not page.more:
        return
    total, offset, shown = page.total or 0, page.offset, len(page.memories)
    first, last = offset + 1, offset + shown
    span = f"{first}" if first == last else f"{first}-{last}"
    counted = f"{shown} of {total} shown" if offset == 0 else f"{span} of {total} shown"
    note(f"{counted}; more with --offset {last} or a larger --limit (--limit {total - offset} shows the rest)")


def page(shown: Page) -> None:
    if not shown.memories:
        note("no memories")
        return
    headers = ("id", "created", "type", "ns", "status", "imp", "content")
    rows = [
        (
            short(m.id), m.created_at[:16].replace("T", " "), m.type, m.namespace, m.status,
            f"{m.importance:.2f}", clip(shown_text(m), 90),
        )
        for m in shown.memories
    ]  # fmt: skip
    if plain_table(headers, rows):
        return
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in headers:
        table.add_column(column, no_wrap=column != "content")
    for row in rows:
        table.add_row(*row)
    console().print(table)


def namespace_list(shown: NamespaceListing) -> None:
    """Each namespace with its counts; the scope column marks where commands work from here."""
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("namespace", "scope", "active", "superseded", "archived", "total"):
        table.add_column(column, no_wrap=True, justify="right" if column not in ("namespace", "scope") else "left")
    for n in shown.namespaces:
        scope = "" if n.scope == "other" else n.scope
        table.add_row(escape(n.namespace), scope, str(n.active), str(n.superseded), str(n.archived), str(n.memories))
    console().print(table)
    where = shown.scope.project
    note(
        f"here: add writes to {where!r}; recall searches it and 'global'"
        if where
        else "here (no git repository): add writes to 'global' and recall searches it; -n NAME or -A for the others"
    )


def inspection(shown: Inspection) -> None:
    memory, events = shown.memory, shown.events
    lines = [f"[bold]memory {memory.id}[/]", escape(memory.content), ""]  # each printed as rich markup
    fields = [
        ("type", memory.type), ("status", memory.status), ("namespace", memory.namespace),
        ("agent", memory.agent), ("session", memory.session or "-"), ("tags", ", ".join(memory.tags) or "-"),
        ("importance", f"{memory.importance:.3f}"), ("confidence", f"{memory.confidence:.3f}"),
        ("decay score", f"{memory.decay_score:.3f}"),
        ("accessed", f"{memory.access_count} times, last {memory.last_access_at or 'never'}"),
        ("occurred", memory.occurred_at), ("learned", memory.learned_at), ("updated", memory.updated_at),
        ("embedding model", memory.embedding_model or "-"), ("version", str(memory.version)),
    ]  # fmt: skip
    if memory.summary:
        fields.insert(0, ("summary", memory.summary))
    if memory.key:
        fields.insert(0, ("key", memory.key))
    if memory.superseded_by:
        fields.append(("superseded by", memory.superseded_by))
    if memory.consolidated_into:
        fields.append(("consolidated into", memory.consolidated_into))
    if memory.metadata:
        fields.append(("metadata", json.dumps(memory.metadata, ensure_ascii=False)))
    for name, value in fields:
        lines.append(f"  [dim]{name:>16}[/]  {escape(str(value))}")
    lines.append("\n[bold]score factors[/]")
    for name, factor in shown.score_factors.items():
        lines.append(f"  [dim]{name:>16}[/]  {escape(str(factor))}")
    lines.append("\n[bold]sources[/]")
    for s in memory.sources:
        where = " ".join(x for x in (s.kind, s.ref or "", f"message {s.message_id}" if s.message_id else "") if x)
        extra = f" — {clip(s.content, 70)}" if s.content else ""
        lines.append(f"  {s.created_at}  {escape(where)}{escape(extra)}")
    if shown.evidence:
        lines.append("\n[bold]evidence[/] (the turns of conversations it was made from)")
        for t in shown.evidence:
            lines.append(f"  {t.occurred_at or t.learned_at}  {t.kind:<8} {escape(t.where)} — "
                         f"{escape(clip(t.content, 90))}")  # fmt: skip
    lines.append("\n[bold]history[/]")
    for e in events:
        lines.append(f"  {e.at}  {e.kind:<10} {escape(e.note or '')}{escape(_change(e))}")
    # Printed whole, not wrapped at the pipe's width (a terminal wraps them itself): a script reading the
    # memory gets its text as it is, and a long text no longer takes rich to print.
    if not plain_lines(lines, wrap=False):
        terminal = console()
        for line in lines:
            terminal.print(line, soft_wrap=True)


def _change(e: Event) -> str:
    """An event's before -> after values, or nothing."""
    if not (e.before or e.after):
        return ""
    return f"  {json.dumps(e.before, ensure_ascii=False)} -> {json.dumps(e.after, ensure_ascii=False)}"


def history(shown: History) -> None:
    if not shown.events:
        note("no events")
        return
    for e in shown.events:
        out(f"{e.at}  {short(e.memory_id)}  {e.kind:<10} {e.note or ''}{_change(e)}".rstrip())


def forgotten(shown: Forgotten) -> None:
    for r in shown.results:
        out(f"{r.id}\t{r.action}" + (f"\t({r.note})" if r.note else ""))
        if r.edited:
            out(f"  removed its text from {_memories(len(r.edited), 'other ')}: {', '.join(map(short, r.edited))}")
        if r.consolidated:
            out(
                f"  {_memories(len(r.consolidated))} it had consolidated keep their own text: "
                f"{', '.join(map(short, r.consolidated))} (`engram forget --hard ID` removes one too)"
            )


def _memories(n: int, kind: str = "") -> str:
    return f"{n} {kind}{'memory' if n == 1 else 'memories'}"


def touched(shown: Touched) -> None:
    for m in shown.memories:
        out(f"{m.id}\t{m.status}\taccessed {m.access_count}")


def imported(report: ImportReport) -> None:
    redacted = f", secrets redacted in {report.redacted}" if report.redacted else ""
    merged = f", updated {report.updated}" if report.updated else ""
    purged = f", purged {report.purged}" if report.purged else ""
    out(
        f"imported {report.imported}{merged}, already present {report.skipped_existing}{purged}, "
        f"bad lines {len(report.errors)}{redacted}"
    )
    for error in report.errors:
        note(f"line {error['line']}: {error['error']}")
