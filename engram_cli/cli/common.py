"""What the command modules share: the app context, the --json options, reading input, showing a result."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from engram_cli import render
from engram_cli.cli.context import AppContext
from engram_cli.errors import InvalidInput

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
JsonSummaryOpt = Annotated[bool, typer.Option("--json", help="Print a JSON summary.")]
JsonReportOpt = Annotated[bool, typer.Option("--json", help="Print a JSON report.")]


def app_context(ctx: typer.Context) -> AppContext:
    """The context the root command set up (for subcommands of subcommands too)."""
    obj = ctx.find_root().obj
    assert isinstance(obj, AppContext)
    return obj


def show(ctx: typer.Context, value: Any, *, json: bool = False, **options: Any) -> None:
    """Print a command's result (see ``render.result``) and note that it is out.

    A failure found after the result (``audit --strict``, files ingest could not read) then keeps
    stdout to the one JSON document a script parses; the error goes to stderr and the exit code.
    """
    render.result(value, json=json, **options)
    app_context(ctx).shown = True


def read_stdin() -> str:
    """Standard input as text; bytes that are not UTF-8 become U+FFFD (said on stderr), never an error."""
    stream = getattr(sys.stdin, "buffer", None)
    data: bytes = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    if bad:
        render.note(f"standard input held {bad} byte sequence(s) that are not UTF-8; each became U+FFFD")
    return text


def read_lines(path: str) -> list[str]:
    """The lines of a UTF-8 text file (or stdin for -); undecodable lines become errors, not crashes."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()  # noqa: SIM115
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", hint="check the path") from exc
    # surrogateescape keeps invalid bytes visible to the parser, which reports their line.
    return [line.decode("utf-8", errors="surrogateescape") for line in data.splitlines()]
