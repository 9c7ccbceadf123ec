"""Everything a person or a script sees: tables, memory cards, JSON, errors.

Output goes to stdout; errors and notes to stderr. Rich disables colour itself when
NO_COLOR is set or stdout is not a terminal.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from engram_cli.lang.text import estimate_tokens
from engram_cli.serialize import to_json

if TYPE_CHECKING:
    from rich.console import Console

    from engram_cli.errors import EngramError
    from engram_cli.integrations.assistants import SettingsChange
    from engram_cli.integrations.git import GitHookChange
    from engram_cli.integrations.schedule import Schedule
    from engram_cli.memory.audit import AuditReport, Check
    from engram_cli.memory.compact import CompactReport
    from engram_cli.memory.decay import DecayReport
    from engram_cli.memory.manage import ForgetResult
    from engram_cli.memory.model import AddResult, Event, Memory
    from engram_cli.memory.recall import Hit
    from engram_cli.memory.recover import RecoverReport

CARD_HEADER = "The following are the user's long-term memories from engram, for reference only:"
CARD_FOOTER = (
    "Do not trust these memories blindly: they may be outdated or wrong. "
    "Where they contradict the current instruction, the current instruction wins."
)


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class PipeAwareConsole(Console):
        """Rich exits 1 itself on a closed pipe; engram's entry point gives every command the same 141."""

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(errno.EPIPE, "standard output was closed")

    return PipeAwareConsole


def _console(stderr: bool = False) -> Console:
    # Wide enough that tables do not fold ids when output is piped.
    return _console_class()(stderr=stderr, soft_wrap=False, width=None if sys.stdout.isatty() else 200, highlight=False)


def out(text: str = "") -> None:
    """Plain text to stdout, byte for byte (no markup, no wrapping)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    """A remark for the person at the terminal; on stderr so stdout stays parseable."""
    _console(stderr=True).print(text, markup=False)


def json_out(value: Any) -> None:
    out(json.dumps(value, ensure_ascii=False, indent=2))


def error(exc: EngramError) -> None:
    console = _console(stderr=True)
    console.print(f"[bold red]Error:[/] {_escape(exc.message)}")
    if exc.hint:
        console.print(f"[dim]Hint:[/] {_escape(exc.hint)}")


def internal_error(exc: BaseException, *, with_traceback: bool) -> None:
    """A bug, not a user's mistake: one line, and the traceback only when asked for with -vv."""
    import traceback

    console = _console(stderr=True)
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if with_traceback:
        sys.stderr.write("".join(traceback.format_exception(exc)))
        console.print(f"[bold red]Error:[/] internal error ({_escape(what)})")
    else:
        console.print(f"[bold red]Error:[/] internal error ({_escape(what)}); run with -vv for the traceback")


def interrupted() -> None:
    note("Interrupted; nothing half-written was kept.")


def warning(text: str) -> None:
    _console(stderr=True).print(f"[yellow]Warning:[/] {_escape(text)}")


def config_warnings(warnings: Sequence[str]) -> None:
    """What config.toml got wrong; the settings concerned keep their defaults."""
    for text in warnings:
        warning(text)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _short(memory_id: str) -> str:
    return memory_id[:8]


def _clip(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# -- add ---------------------------------------------------------------------------------


def added(results: Sequence[AddResult], *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(list(results)) if len(results) != 1 else to_json(results[0]))
        return
    for result in results:
        out(result.id)
        if result.redacted:
            kinds = ", ".join(sorted(set(result.redacted)))
            note(
                f"redacted {len(result.redacted)} secret(s) ({kinds}) before storing; "
                "--keep-secrets stores the text as given"
            )
        if result.action == "merged":
            note(
                f"merged into existing memory {_short(result.id)} (cosine {result.similarity:.3f}); "
                "the new text is kept as a source"
            )
        elif result.action == "duplicate":
            note(f"already remembered as {_short(result.id)}; counted as a reminder")
        for old in result.superseded:
            note(f"supersedes memory {_short(old)}: it leaves recall (still inspectable) with half its importance")
        if result.action == "created" and result.similar_id and not result.superseded:
            note(
                f"similar to memory {_short(result.similar_id)} (cosine {result.similarity:.3f}) but kept apart: "
                + "; ".join(result.kept_apart_because or [])
            )


# -- recall ------------------------------------------------------------------------------


def card_block(memory: Memory) -> str:
    head = (
        f"[memory #{_short(memory.id)}][type: {memory.type}][importance: {memory.importance:.2g}]"
        f"[accessed: {memory.access_count}]"
    )
    return f"{head}\n{memory.content}"


def cards(hits: Sequence[Hit], *, budget: int | None = None) -> str:
    """The prompt block: header, one block per memory, footer; stops before ``budget`` tokens."""
    used = estimate_tokens(CARD_HEADER) + estimate_tokens(CARD_FOOTER)
    blocks: list[str] = []
    for hit in hits:
        block = card_block(hit.memory)
        cost = estimate_tokens(block) + 1
        if budget is not None and used + cost > budget:
            break
        blocks.append(block)
        used += cost
    if not blocks:
        return ""
    return "\n".join([CARD_HEADER, "", "\n\n".join(blocks), "", CARD_FOOTER])


def markdown(hits: Sequence[Hit]) -> str:
    lines = ["# Memories", ""]
    for hit in hits:
        m = hit.memory
        tags = f" · tags: {', '.join(m.tags)}" if m.tags else ""
        lines.append(f"- **{m.type}** · importance {m.importance:.2g} · `{_short(m.id)}`{tags}")
        for line in m.content.splitlines() or [""]:
            lines.append("  " + line)
    return "\n".join(lines)


def hits(hits: Sequence[Hit], *, fmt: str, explain: bool = False, budget: int | None = None) -> None:
    if fmt == "json":
        json_out(to_json(list(hits), explain=explain))
        return
    if fmt == "card":
        text = cards(hits, budget=budget)
        if text:
            out(text)
        return
    if fmt == "markdown":
        out(markdown(hits))
        return
    if not hits:
        note("no memories matched")
        return
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("id", "score", "type", "imp", "content"):
        table.add_column(column, overflow="fold" if column == "content" else "ellipsis", no_wrap=column != "content")
    for hit in hits:
        m = hit.memory
        table.add_row(_short(m.id), f"{hit.score:.3f}", m.type, f"{m.importance:.2f}", _clip(m.content, 100))
    _console().print(table)
    if explain:
        for hit in hits:
            _console().print(f"[bold]{_short(hit.memory.id)}[/]", _escape(json.dumps(hit.explain, ensure_ascii=False)))


# -- list / inspect / forget --------------------------------------------------------------


def memory_list(memories: Sequence[Memory], *, as_json: bool, total: int | None = None, offset: int = 0) -> None:
    """The memories; when ``total`` says more match than are shown, a note on stderr (JSON stays a list)."""
    if total is not None and total > offset + len(memories):
        first, last = offset + 1, offset + len(memories)
        span = f"{first}" if first == last else f"{first}-{last}"
        shown = f"{len(memories)} of {total} shown" if offset == 0 else f"{span} of {total} shown"
        note(f"{shown}; more with --offset {last} or a larger --limit (--limit {total - offset} shows the rest)")
    if as_json:
        json_out(to_json(list(memories)))
        return
    if not memories:
        note("no memories")
        return
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("id", "created", "type", "ns", "status", "imp", "content"):
        table.add_column(column, no_wrap=column != "content")
    for m in memories:
        table.add_row(
            _short(m.id), m.created_at[:16].replace("T", " "), m.type, m.namespace, m.status,
            f"{m.importance:.2f}", _clip(m.content, 90),
        )  # fmt: skip
    _console().print(table)


def inspect(memory: Memory, events: Sequence[Event], factors: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        data = memory.to_dict()
        data["history"] = to_json(list(events))
        data["score_factors"] = factors
        json_out(data)
        return
    console = _console()
    console.print(f"[bold]memory {memory.id}[/]")
    console.print(_escape(memory.content), markup=True)
    console.print()
    fields = [
        ("type", memory.type), ("status", memory.status), ("namespace", memory.namespace),
        ("agent", memory.agent), ("session", memory.session or "-"), ("tags", ", ".join(memory.tags) or "-"),
        ("importance", f"{memory.importance:.3f}"), ("confidence", f"{memory.confidence:.3f}"),
        ("decay score", f"{memory.decay_score:.3f}"),
        ("accessed", f"{memory.access_count} times, last {memory.last_access_at or 'never'}"),
        ("created", memory.created_at), ("updated", memory.updated_at),
        ("embedding model", memory.embedding_model or "-"), ("version", str(memory.version)),
    ]  # fmt: skip
    if memory.summary:
        fields.insert(0, ("summary", memory.summary))
    if memory.superseded_by:
        fields.append(("superseded by", memory.superseded_by))
    if memory.consolidated_into:
        fields.append(("consolidated into", memory.consolidated_into))
    if memory.metadata:
        fields.append(("metadata", json.dumps(memory.metadata, ensure_ascii=False)))
    for name, value in fields:
        console.print(f"  [dim]{name:>16}[/]  {_escape(str(value))}")
    console.print("\n[bold]score factors[/]")
    for name, value in factors.items():
        console.print(f"  [dim]{name:>16}[/]  {_escape(str(value))}")
    console.print("\n[bold]sources[/]")
    for s in memory.sources:
        where = " ".join(x for x in (s.kind, s.ref or "", f"message {s.message_id}" if s.message_id else "") if x)
        extra = f" — {_clip(s.content, 70)}" if s.content else ""
        console.print(f"  {s.created_at}  {_escape(where)}{_escape(extra)}")
    console.print("\n[bold]history[/]")
    for e in events:
        console.print(f"  {e.at}  {e.kind:<10} {_escape(e.note or '')}{_escape(_change(e))}")


def _change(e: Event) -> str:
    """An event's before -> after values, or nothing."""
    if not (e.before or e.after):
        return ""
    return f"  {json.dumps(e.before, ensure_ascii=False)} -> {json.dumps(e.after, ensure_ascii=False)}"


def forgotten(results: Sequence[ForgetResult], *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(list(results)))
        return
    for r in results:
        out(f"{r.id}\t{r.action}" + (f"\t({r.note})" if r.note else ""))
        if r.edited:
            out(f"  removed its text from {_memories(len(r.edited), 'other ')}: {', '.join(map(_short, r.edited))}")
        if r.consolidated:
            out(
                f"  {_memories(len(r.consolidated))} it had consolidated keep their own text: "
                f"{', '.join(map(_short, r.consolidated))} (`engram forget --hard ID` removes one too)"
            )


def _memories(n: int, kind: str = "") -> str:
    return f"{n} {kind}{'memory' if n == 1 else 'memories'}"


def decay_report(report: DecayReport, *, as_json: bool) -> None:
    """Quiet unless a score moved by the reporting step or a memory was archived (cron mails what a job prints).

    The small daily drifts are applied all the same; --json lists them too.
    """
    if as_json:
        json_out(to_json(report))
        return
    notable = report.notable
    if report.dry_run:
        for c in notable:
            verb = "would archive" if c.archived else "would decay"
            out(f"{verb} {_short(c.id)}  {c.before:.3f} -> {c.after:.3f}  {_clip(c.content, 60)}")
    if notable or report.dry_run:
        prefix = "dry run: " if report.dry_run else ""
        drifts = f"; {report.silent_drifts} smaller drifts" if report.silent_drifts else ""
        out(
            f"{prefix}{len(notable)} of {report.scanned} active memories decayed by {report.step:g} or more, "
            f"{report.archived} archived{drifts} (as of {report.now})"
        )


def compact_report(report: CompactReport, *, as_json: bool) -> None:
    """The plan (dry run) or what was done; quiet when nothing changed, like decay."""
    if as_json:
        json_out(to_json(report))
        return
    would = "would " if report.dry_run else ""
    for c in report.clusters:
        if c.promoted and c.memory_id:
            target = f"{_short(c.memory_id)}, one of them, now a semantic memory"
        else:
            target = f"new semantic memory {_short(c.memory_id)}" if c.memory_id else "a new semantic memory"
        out(f"{would}consolidate {len(c.members)} episodes in {c.namespace} into {target}:")
        for m in c.members:
            out(f"    {_short(m.id)}  {_clip(m.content, 70)}")
        out(f"  -> {_clip(c.content, 200)}")
    for f in report.folds:
        what = "join" if f.kind == "joined" else "fold duplicate"
        out(f"{would}{what} {_short(f.loser.id)} into {_short(f.winner_id)} (cosine {f.similarity:.3f})  "
            f"{_clip(f.loser.content, 60)}")  # fmt: skip
    for r in report.capped:
        out(f"{would}archive {_short(r.id)} (over the cap)  {_clip(r.content, 60)}")
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


_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def audit_report(report: AuditReport, *, as_json: bool) -> None:
    """A summary table, the examples of every check that found something, the repairs, and a verdict."""
    if as_json:
        json_out(to_json(report))
        return
    from rich.table import Table

    console = _console()
    scope = ", ".join(report.namespaces) if report.namespaces else "all namespaces"
    console.print(f"[bold]audit[/] {_escape(report.database)} ({_escape(scope)}, as of {report.now[:19]}Z)")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    columns = ["check", "severity", "count", *(["found", "fixed"] if report.fix else []), "what"]
    for column in columns:
        table.add_column(
            column, no_wrap=column != "what", justify="right" if column in ("count", "found", "fixed") else "left"
        )
    for check in report.checks:
        style = _SEVERITY_STYLE[check.severity] if check.count else "green"
        count = "skipped" if check.skipped else str(check.count)
        fixed = [str(check.found if check.found is not None else check.count), str(check.fixed)] if report.fix else []
        table.add_row(check.name, f"[{style}]{check.severity}[/]", count, *fixed, _escape(check.title))
    console.print(table)
    for check in report.checks:
        if check.count:
            _audit_check(console, check)
    if report.actions:
        console.print("\n[bold]fixed[/]")
        for action in report.actions:
            console.print(f"  {action.name:<18} {action.count:>5}  {_escape(action.detail)}")
    left = report.left_for_a_person()
    if left and report.fix:
        console.print("\n[bold]left for a person[/]")
        for check in left:
            console.print(f"  {check.name:<18} {check.count:>5}  {_escape(check.hint or '')}")
    problems = report.problems
    review = sum(c.count for c in report.checks if not c.problem)
    console.print()
    if problems:
        names = ", ".join(f"{c.name} ({c.count})" for c in problems)
        console.print(f"[bold red]{len(problems)} problem(s):[/] {_escape(names)}")
    else:
        console.print("[green]no problems[/]" + (f"; {review} memories to review" if review else ""))


def _audit_check(console: Console, check: Check) -> None:
    console.print(f"\n[bold]{check.name}[/] [dim]{check.count}: {_escape(check.title)}[/]")
    if check.name == "other_model":
        d = check.details
        models = ", ".join(f"{m} {n}" for m, n in d["models"].items())
        console.print(
            f"  migration to {_escape(d['target_model'])}: {d['migrated']} of {d['total']} "
            f"({d['percent_migrated']}%) done; {_escape(models)}"
        )
    for example in check.examples:
        for line in _audit_example(example):
            console.print("  " + _escape(line))
    if check.details.get("truncated"):
        console.print("  [dim]stopped at the pair limit: there are at least this many[/]")
    if check.hint:
        console.print(f"  [dim]→ {_escape(check.hint)}[/]")


def _audit_example(ex: dict[str, Any]) -> list[str]:
    if "detail" in ex:
        return [ex["detail"]]
    if "rowid" in ex:
        return [f"{ex['index']} row {ex['rowid']}"]
    if "model" in ex:
        return []  # shown in the migration line
    if "other_id" in ex:
        why = "exact" if ex.get("exact") else ex.get("reason", "near duplicate")
        return [
            f"{ex['id']} ~ {ex['other_id']}  cosine {ex['cosine']:.3f}  {why}",
            f"    {ex['text']}",
            f"    {ex['other_text']}",
        ]
    text = f"  {ex['text']}" if ex.get("text") else ""
    if "table" in ex:  # a secret in a row that belongs to no memory
        return [f"{ex['table']} {ex['row']}  in {', '.join(ex['columns'])}{text}".rstrip()]
    extras = [
        f"{key} {', '.join(value) if isinstance(value, list) else value}"
        for key, value in ex.items()
        if key not in ("id", "text", "purged", "where", "columns")
    ]
    if "columns" in ex:  # where a secret sits: table.column
        extras.insert(0, f"in {', '.join(ex['columns'])}")
    if ex.get("purged"):
        extras.append("(purged memory's history)")
    return [f"{ex['id']}  {'; '.join(extras)}{text}".rstrip()]


def ingest_report(report: Any, *, as_json: bool, quiet: bool, verbose: bool) -> None:
    """One line per source that had something new; the memories themselves on a dry run."""
    if as_json:
        json_out(to_json(report))
        return
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
                    out(f"{verb} {m.type:<10} {m.importance:.2f} [{m.namespace}] {_clip(m.content, 90)}")
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


def ingest_sources(rows: Sequence[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        json_out(list(rows))
        return
    from rich.table import Table

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
    _console().print(table)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}"
        size /= 1024
    return f"{size:.0f} GB"


def eval_reports(reports: Sequence[Any], *, as_json: bool, per_query: bool) -> None:
    """One row per mode (overall), then the per-group rows of each mode."""
    if as_json:
        data = [to_json(r, per_query=per_query) for r in reports]
        json_out(data[0] if len(data) == 1 else data)
        return
    from rich.table import Table

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
        "p50 ms",
        "p95 ms",
    ):
        table.add_column(column, justify="left" if column in ("mode", "group") else "right")

    def row(mode: str, group: str, s: Any, latency: dict[str, float] | None) -> None:
        times = [f"{latency['p50']:.1f}", f"{latency['p95']:.1f}"] if latency else ["", ""]
        table.add_row(
            mode, group, str(s.queries), *(f"{s.recall[k]:.3f}" for k in ks), f"{s.mrr:.3f}", f"{s.ndcg:.3f}",
            f"{s.interference[ks[-1]]:.3f}", *times,
        )  # fmt: skip

    for r in reports:
        row(r.mode, "all", r.overall, r.latency_ms)
    for r in reports:
        for name, scores in sorted(r.groups.items()):
            row(r.mode, name, scores, None)
    _console().print(table)


def events(items: Sequence[Event], *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(list(items)))
        return
    if not items:
        note("no events")
        return
    for e in items:
        out(f"{e.at}  {_short(e.memory_id)}  {e.kind:<10} {e.note or ''}{_change(e)}".rstrip())


def jsonl(records: Iterable[dict[str, Any]], path: str | None) -> int:
    """Write one JSON object per line to stdout (no path, or ``-``) or to ``path``; returns the count.

    A file is written atomically and created 0600 (memories are private): an error at any point
    leaves no partial file and no temporary file behind.
    """
    rows = iter(records)
    try:
        return _write_jsonl(rows, path)
    finally:
        # A generator reading the store is closed now, even after a failed write, so its read
        # transaction ends while the store is open rather than whenever it is garbage-collected.
        close = getattr(rows, "close", None)
        if close is not None:
            close()


def _write_jsonl(rows: Iterator[dict[str, Any]], path: str | None) -> int:
    from engram_cli.atomic import replace_file
    from engram_cli.errors import InvalidInput

    count = 0
    if path is None or path == "-":
        for record in rows:
            sys.stdout.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
        sys.stdout.flush()
        return count
    try:
        with replace_file(path) as fh:
            for record in rows:
                fh.write((json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
                count += 1
    except OSError as exc:
        raise InvalidInput(
            f"cannot write {path}: {exc.strerror or exc}", hint="check that its directory exists and is writable"
        ) from exc
    return count


def read_lines(path: str) -> list[str]:
    """The lines of a UTF-8 text file (or stdin for -); undecodable lines become errors, not crashes."""
    from engram_cli.errors import InvalidInput

    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()  # noqa: SIM115
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", hint="check the path") from exc
    # surrogateescape keeps invalid bytes visible to the parser, which reports their line.
    return [line.decode("utf-8", errors="surrogateescape") for line in data.splitlines()]


def import_report(report: Any, *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(report))
        return
    redacted = f", secrets redacted in {report.redacted}" if report.redacted else ""
    out(
        f"imported {report.imported}, already present {report.skipped_existing}, bad lines {len(report.errors)}"
        f"{redacted}"
    )
    for error in report.errors:
        note(f"line {error['line']}: {error['error']}")


@contextlib.contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on a terminal (stderr); nothing when output is piped or in cron."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.progress import Progress

    with Progress(console=_console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


def reembed_report(report: Any, *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(report))
        return
    state = "now the active model" if report.active else f"{report.remaining} memories still on other models"
    out(f"re-embedded {report.done} memories with {report.model}; {state}")


def touched(memories: Sequence[Memory], *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(list(memories)))
        return
    for m in memories:
        out(f"{m.id}\t{m.status}\taccessed {m.access_count}")


# -- models / doctor / config --------------------------------------------------------------


def models(rows: Sequence[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        json_out(list(rows))
        return
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("", "id", "dim", "merge at", "size", "licence", "vectors", "name"):
        table.add_column(column, no_wrap=True)
    for r in rows:
        table.add_row(
            "*" if r["active"] else "", r["id"], str(r["dim"]),
            "-" if r["merge_threshold"] is None else f"{r['merge_threshold']:.3f}",
            f"{r['size_bytes'] / 1e6:.1f} MB", r["licence"], str(r["vectors"]), r["name"],
        )  # fmt: skip
    _console().print(table)
    note("* = active model (new vectors are made with it)")


def checks(rows: Iterable[dict[str, Any]], *, as_json: bool) -> None:
    rows = list(rows)
    if as_json:
        json_out(rows)
        return
    console = _console()
    marks = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[bold red]FAIL[/]"}
    for r in rows:
        console.print(f"{marks[r['status']]:>6}  {_escape(r['check'])}: {_escape(r['detail'])}")
        if r.get("hint") and r["status"] != "ok":
            console.print(f"        [dim]→ {_escape(r['hint'])}[/]")


def config_table(values: dict[str, Any], origins: dict[str, str], *, as_json: bool) -> None:
    if as_json:
        json_out({k: {"value": v, "from": origins.get(k, "default")} for k, v in values.items()})
        return
    for key, value in values.items():
        shown = "none" if value is None else json.dumps(value) if not isinstance(value, str) else value
        out(f"{key} = {shown}\t# {origins.get(key, 'default')}")


def config_unset(key: str, removed: bool) -> None:
    out(f"{key} = default" if removed else f"{key} was not set in config.toml; nothing changed")


# -- hooks / schedule ----------------------------------------------------------------------


def git_hook_change(change: GitHookChange, *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(change))
        return
    hook, chained = change.hook, change.chained
    if change.action == "absent":
        out(f"no engram post-commit hook in {hook.parent}; nothing to do")
    elif change.action == "restored":
        out(f"removed engram's post-commit hook; the earlier hook is back as {hook}")
    elif change.action == "removed":
        out(f"removed engram's post-commit hook {hook}")
    else:
        out(f"{change.action} post-commit hook {hook}")
        if chained is not None:
            note(f"the hook that was there before is kept as {chained.name} and runs after engram's")


def settings_change(change: SettingsChange, *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(change))
        return
    where = change.path
    events = ", ".join(change.events)
    if change.action == "absent":
        out(f"no engram hooks in {where}; nothing to do")
    elif change.action == "removed":
        out(f"removed engram's {events} hooks from {where}")
    else:
        out(f"{change.action} engram's {events} hooks in {where}")
    if change.backup is not None:
        note(f"the file as it was is saved as {change.backup}")
    if change.next_step and change.action != "removed":
        note(change.next_step)


def session_context(hits: Sequence[Hit], *, budget: int, as_hook_json: bool) -> None:
    """The memory card an assistant adds to a new session's context; nothing at all when there is none."""
    text = cards(hits, budget=budget)
    if not text:
        return
    if as_hook_json:
        out(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}))
    else:
        out(text)


def schedule(plan: Schedule, *, as_json: bool) -> None:
    if as_json:
        json_out(to_json(plan))
        return
    # Only crontab syntax on stdout, so `(crontab -l; engram schedule) | crontab -` works as is.
    out("# engram maintenance (from `engram schedule`)")
    for job in plan.jobs:
        out(f"# {job.name}: {job.why}")
        out(job.line)
    note("Nothing was installed. Paste these lines into `crontab -e`, or append them in one go with")
    note("  (crontab -l 2>/dev/null; engram schedule) | crontab -")
    note(f"Output (only changes and errors) goes to {plan.log}.")
    note("systemd or launchd instead of cron: run the same commands on the same calendar (a user .timer, or a")
    note("LaunchAgent with StartCalendarInterval); the commands need nothing from cron itself.")


# -- recover -------------------------------------------------------------------------------


def recover_report(report: RecoverReport, *, as_json: bool) -> None:
    """Per table what was saved and lost, then how to switch to the new file."""
    if as_json:
        json_out(to_json(report))
        return
    import shlex

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
