"""engram itself: the bundled models, doctor's checks, and the settings."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import TYPE_CHECKING

from engram_cli.render.console import console, escape, note, out

if TYPE_CHECKING:
    from engram_cli.api.results import ConfigChange, ConfigListing
    from engram_cli.doctor import DoctorReport, ModelListing


def models(listing: ModelListing) -> None:
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("", "id", "dim", "merge at", "size", "licence", "vectors", "name"):
        table.add_column(column, no_wrap=True)
    for m in listing.models:
        table.add_row(
            "*" if m.active else "", m.id, str(m.dim),
            "-" if m.merge_threshold is None else f"{m.merge_threshold:.3f}",
            f"{m.size_bytes / 1e6:.1f} MB", m.licence, str(m.vectors), m.name,
        )  # fmt: skip
    console().print(table)
    note("* = active model (new vectors are made with it)")


def doctor(report: DoctorReport) -> None:
    terminal = console()
    marks = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[bold red]FAIL[/]"}
    for c in report.checks:
        terminal.print(f"{marks[c.status]:>6}  {escape(c.check)}: {escape(c.detail)}")
        if c.hint and c.status != "ok":
            terminal.print(f"        [dim]→ {escape(c.hint)}[/]")


def settings(listing: ConfigListing) -> None:
    for key, value in listing.values.items():
        shown = "none" if value is None else json.dumps(value) if not isinstance(value, str) else value
        doc = listing.docs.get(key)
        out(f"{key} = {shown}\t# {listing.origin(key)}" + (f" — {doc}" if doc else ""))


def setting_changed(change: ConfigChange) -> None:
    if not change.changed:
        out(f"{change.key} was not set in config.toml; nothing changed")
    else:
        out(f"{change.key} = {'default' if change.value is None else change.value}")


def path(value: PurePath) -> None:
    out(str(value))
