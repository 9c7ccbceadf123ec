"""Keyed facts: the value `get` prints, the list `keys` prints, what `unset` did."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_cli.render.console import clip, console, note, out, plain_table, short

if TYPE_CHECKING:
    from engram_cli.memory.keys import KeyListing, KeyUnset, KeyValue


def value(found: KeyValue) -> None:
    """The value alone on stdout, as it is stored, so that `$(engram get user:tz)` is the value."""
    out(found.value)


def listing(shown: KeyListing) -> None:
    if not shown.entries:
        note("no keys")
        return
    headers = ("key", "value", "scope", "namespace", "type", "updated")
    rows = [
        (
            e.key, clip(e.value, 80), f"{e.scope} (shadowed)" if e.shadowed else e.scope, e.namespace, e.type,
            e.updated_at[:16].replace("T", " "),
        )
        for e in shown.entries
    ]  # fmt: skip
    if plain_table(headers, rows):
        return
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in headers:
        table.add_column(column, no_wrap=column != "value", overflow="fold" if column == "value" else "ellipsis")
    for row in rows:
        table.add_row(*row)
    console().print(table)


def unset(result: KeyUnset) -> None:
    out(f"{result.id}\t{result.action}")
    note(
        f"unset {result.key} in namespace '{result.namespace}': memory {short(result.id)} is archived "
        f"(`engram set {result.key} VALUE` brings it back)"
    )
