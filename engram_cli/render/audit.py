"""The audit report: a summary table, the examples of each check that found something, and a verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_cli.render.console import console as terminal
from engram_cli.render.console import escape

if TYPE_CHECKING:
    from rich.console import Console

    from engram_cli.memory.audit import AuditReport, Check

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def audit(report: AuditReport) -> None:
    """A summary table, the examples of every check that found something, the repairs, and a verdict."""
    from rich.table import Table

    console = terminal()
    scope = ", ".join(report.namespaces) if report.namespaces else "all namespaces"
    console.print(f"[bold]audit[/] {escape(report.database)} ({escape(scope)}, as of {report.now[:19]}Z)")
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
        table.add_row(check.name, f"[{style}]{check.severity}[/]", count, *fixed, escape(check.title))
    console.print(table)
    for check in report.checks:
        if check.count:
            _check(console, check)
    if report.actions:
        console.print("\n[bold]fixed[/]")
        for action in report.actions:
            console.print(f"  {action.name:<18} {action.count:>5}  {escape(action.detail)}")
    left = report.left_for_a_person()
    if left and report.fix:
        console.print("\n[bold]left for a person[/]")
        for check in left:
            console.print(f"  {check.name:<18} {check.count:>5}  {escape(check.hint or '')}")
    problems = report.problems
    review = sum(c.count for c in report.checks if not c.problem)
    console.print()
    if problems:
        names = ", ".join(f"{c.name} ({c.count})" for c in problems)
        console.print(f"[bold red]{len(problems)} problem(s):[/] {escape(names)}")
    else:
        console.print("[green]no problems[/]" + (f"; {review} memories to review" if review else ""))


def _check(console: Console, check: Check) -> None:
    console.print(f"\n[bold]{check.name}[/] [dim]{check.count}: {escape(check.title)}[/]")
    if check.name == "other_model":
        d = check.details
        models = ", ".join(f"{m} {n}" for m, n in d["models"].items())
        console.print(
            f"  migration to {escape(d['target_model'])}: {d['migrated']} of {d['total']} "
            f"({d['percent_migrated']}%) done; {escape(models)}"
        )
    for example in check.examples:
        for line in _example(example):
            console.print("  " + escape(line))
    if check.details.get("truncated"):
        console.print("  [dim]stopped at the pair limit: there are at least this many[/]")
    if check.hint:
        console.print(f"  [dim]→ {escape(check.hint)}[/]")


def _example(ex: dict[str, Any]) -> list[str]:
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
