"""The `engram` command: a thin skin over the engine. Each module is one command group."""

from __future__ import annotations

import logging
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from engram_cli import __version__
from engram_cli.errors import EngramError


class _Group(TyperGroup):
    """Maps domain errors to `Error: …` on stderr and an exit code, for every command."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except EngramError as exc:
            from engram_cli import render

            render.error(exc)
            _record_hook_failure(ctx, exc.exit_code, exc.message + (f" ({exc.hint})" if exc.hint else ""))
            raise typer.Exit(exc.exit_code) from exc
        except KeyboardInterrupt:
            sys.stderr.write("Interrupted; nothing half-written was kept.\n")
            raise typer.Exit(130) from None


def _record_hook_failure(ctx: Any, code: int, message: str) -> None:
    """When run by a hook (``--hook NAME``), leave a trace that `engram doctor` shows; busy is no failure."""
    obj = getattr(ctx, "obj", None)
    if code == 75 or obj is None or not getattr(obj, "hook", None):
        return
    obj.record_hook_failure(code, message)


app = typer.Typer(
    cls=_Group,
    name="engram",
    help="Local-first long-term memory for developers and their AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"engram {__version__}\n")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    db: str | None = typer.Option(
        None,
        "--db",
        metavar="PATH",
        help="Database file (default: $ENGRAM_DB, $ENGRAM_HOME/engram.db, or the user data dir).",
    ),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="Log what happens (-vv for debug)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    hook: str | None = typer.Option(
        None, "--hook", metavar="NAME", hidden=True, help="Set by installed hooks: failures go to hooks.log."
    ),
) -> None:
    """engram keeps memories in one SQLite file and finds them again with a bundled local model."""
    from engram_cli.cli.context import AppContext

    if verbose:
        logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO, format="%(name)s: %(message)s")
    ctx.obj = AppContext(db=db, hook=hook)
    ctx.call_on_close(ctx.obj.close)


def _register() -> None:
    from engram_cli.cli import evaluate, hooks, ingest, lifecycle, maintenance, memories, system

    memories.register(app)
    lifecycle.register(app)
    maintenance.register(app)
    ingest.register(app)
    hooks.register(app)
    evaluate.register(app)
    system.register(app)


_register()


def main() -> None:
    """Console-script entry point."""
    sys.exit(app(standalone_mode=True))
