"""The `engram` command: a thin skin over the engine. Each module is one command group.

Exit codes (the README's table): 0 ok; 1 an error the message explains (input the engine cannot
use, a damaged database, audit --strict problems, failed doctor checks); 2 usage (unknown flags,
flag values of the wrong kind, an engine UsageError); 75 busy (another compact or ingest holds the
lock); 130 interrupted; 141 standard output closed early (`engram export | head`); 70 internal
error (a bug: one line, the traceback with -vv).

With --json (or recall's --format json) a failure is also one JSON document on stdout, the error
envelope {"error": {"type", "message", "hint", "exit_code"}}, unless the command already printed
its result there (`audit --strict` after its report): a script parses one document either way.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import DefaultPlaceholder

from engram_cli.api import __version__
from engram_cli.cli import coerce
from engram_cli.errors import EngramError

EXIT_INTERNAL = 70  # EX_SOFTWARE
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141  # what a shell reports for a process killed by SIGPIPE

# How Typer (which may bring its own copy of click) signals usage errors (exit 2) and explicit exits.
_USAGE_ERRORS: tuple[type[Any], ...] = (next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"),)
_FRAMEWORK_EXITS: tuple[type[Exception], ...] = (
    typer.Exit,
    typer.Abort,
    next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"),
)


@functools.cache
def _lone_surrogate() -> re.Pattern[str]:
    """Python decodes argv with surrogateescape: a byte that is not UTF-8 arrives as a lone surrogate.
    (Compiled on first use: the wide range takes milliseconds, which a command line of ASCII never needs.)"""
    return re.compile("[\ud800-\udfff]")


_WANTS_JSON = "engram.wants_json"  # in the context's meta: the command line asked for JSON output
_FLAGS_GIVEN = "engram.flags_given"  # in the context's meta: the long options on the command line

# The flag of each library parameter an error may name (EngramError.param). An error says the flag
# when it was on the command line; otherwise the parameter (a field of an eval query, say) keeps its name.
FLAGS = {
    "now": "--now",
    "since": "--since",
    "until": "--until",
    "accessed_since": "--accessed-since",
    "accessed_until": "--accessed-until",
    "batch": "--batch",
    "limit": "--limit",
    "path": "--path",
    "db": "--db",
    "project": "--project",
    "settings": "--settings",
    "namespace": "--namespace",
    "global_scope": "--global",
    "all_namespaces": "--all-namespaces",
    "no_global": "--no-global",
    "min_relevance": "--min-relevance",
}


class OutputClosed(Exception):
    """Standard output was closed by its reader. Click would turn the BrokenPipeError into exit 1,
    so it travels past click under this name to main(), which ends the run quietly with 141."""


# Every command, in the order `engram --help` lists them, and the module under cli/ that defines it.
# A command's module is imported only when that command runs (or help lists it), so `engram get`
# pays for neither the ingest machinery nor the hook installers. tests/test_startup.py fails when
# this table and the modules' register() functions disagree.
COMMANDS: dict[str, str] = {
    "add": "memories",
    "recall": "memories",
    "inspect": "memories",
    "list": "memories",
    "edit": "memories",
    "forget": "memories",
    "namespaces": "memories",
    "set": "keys",
    "get": "keys",
    "unset": "keys",
    "keys": "keys",
    "reembed": "lifecycle",
    "export": "lifecycle",
    "import": "lifecycle",
    "decay": "lifecycle",
    "compact": "lifecycle",
    "touch": "lifecycle",
    "history": "lifecycle",
    "audit": "maintenance",
    "recover": "maintenance",
    "ingest": "ingest",
    "schedule": "hooks",
    "eval": "evaluate",
    "mcp": "system",
    "models": "system",
    "doctor": "system",
    "hooks": "hooks",
    "config": "system",
}


class _Commands(MutableMapping[str, Any]):
    """The root group's commands by name, each built from its module on first use."""

    def __init__(self, names: dict[str, str]) -> None:
        self._modules = dict(names)
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._modules:
                raise KeyError(name)
            self._built[name] = build_command(name, self._modules[name])
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._modules.setdefault(name, "")
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._modules[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, name: object) -> bool:
        return name in self._modules


class _Command(TyperCommand):
    """A subcommand whose --help option, made when a command line is parsed, converts its value plainly too."""

    def get_help_option(self, ctx: Any) -> Any:
        return coerce.installed(super().get_help_option(ctx))


class _SubGroup(TyperGroup):
    """A group below the root (``hooks``, ``config``), its --help option like a subcommand's."""

    def get_help_option(self, ctx: Any) -> Any:
        return coerce.installed(super().get_help_option(ctx))


def _with_plain_classes(holder: typer.Typer) -> None:
    """Build ``holder``'s commands and groups (and theirs) as :class:`_Command` and :class:`_SubGroup`."""
    for info in holder.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = _Command
    for group in holder.registered_groups:
        if isinstance(group.cls, DefaultPlaceholder) or group.cls in (None, TyperGroup):
            group.cls = _SubGroup
        if group.typer_instance is not None:
            _with_plain_classes(group.typer_instance)


def registrations(module_name: str) -> typer.Typer:
    """A Typer holding what one module under cli/ registers."""
    module = importlib.import_module(f"engram_cli.cli.{module_name}")
    holder = typer.Typer()
    module.register(holder)
    return holder


def build_command(name: str, module_name: str) -> Any:
    """The click command (or group) ``name`` that ``engram_cli.cli.<module_name>`` registers."""
    holder = registrations(module_name)
    _with_plain_classes(holder)
    command: Any = None
    for info in holder.registered_commands:
        if info.callback is not None and (info.name or typer.main.get_command_name(info.callback.__name__)) == name:
            command = typer.main.get_command_from_info(
                info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
            )
    for group in holder.registered_groups:
        if group.name == name:
            command = typer.main.get_group_from_info(
                group,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
                suggest_commands=app.suggest_commands,
            )
    if command is None:
        raise LookupError(f"engram_cli.cli.{module_name} registers no command {name!r}")
    coerce.install_tree(command)
    return command


class _Group(TyperGroup):
    """Maps every outcome of every command to a message on stderr and an exit code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.commands:  # the root: its commands come from COMMANDS, built when first asked for
            self.commands = _Commands(COMMANDS)
        coerce.install(self.params)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_help_option(self, ctx: Any) -> Any:
        return coerce.installed(super().get_help_option(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # Read before any option is: an unknown flag fails before the command could say it wants JSON.
        ctx.meta[_WANTS_JSON] = asks_for_json(args)
        ctx.meta[_FLAGS_GIVEN] = flags_given(args)
        result: list[str] = super().parse_args(ctx, args)
        return result

    def invoke(self, ctx: Any) -> Any:
        from engram_cli import render

        try:
            return super().invoke(ctx)
        except EngramError as raised:
            given = ctx.meta.get(_FLAGS_GIVEN, set())
            exc = raised.naming({param: flag for param, flag in FLAGS.items() if flag in given})
            render.error(exc, json=_envelope(ctx))
            _record_hook_failure(ctx, exc.exit_code, exc.message + (f" ({exc.hint})" if exc.hint else ""))
            raise typer.Exit(exc.exit_code) from raised
        except KeyboardInterrupt:
            render.interrupted()
            if _envelope(ctx):
                render.error_document(
                    "Interrupted", "interrupted; nothing half-written was kept", None, EXIT_INTERRUPTED
                )
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError as exc:
            raise OutputClosed from exc
        except _USAGE_ERRORS as exc:
            # Click prints its own message and usage on stderr as it exits 2.
            if _envelope(ctx):
                where = getattr(getattr(exc, "ctx", None), "command_path", "engram")
                hint = f"`{where} --help` lists the arguments and options"
                render.error_document("UsageError", exc.format_message(), hint, exc.exit_code)
            raise
        except _FRAMEWORK_EXITS:
            raise  # explicit exits keep their codes
        except Exception as exc:
            verbose = getattr(ctx.obj, "verbose", 0)
            render.internal_error(exc, with_traceback=verbose >= 2)
            if _envelope(ctx):
                what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                render.error_document("InternalError", f"internal error ({what})", "run with -vv for the traceback",
                                      EXIT_INTERNAL)  # fmt: skip
            _record_hook_failure(ctx, EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
            raise typer.Exit(EXIT_INTERNAL) from exc


def asks_for_json(args: list[str]) -> bool:
    """Whether a command line asks for JSON output: --json anywhere before ``--``, or --format json."""
    for i, arg in enumerate(args):
        if arg == "--":
            return False
        if arg in ("--json", "--format=json", "-fjson") or (
            arg in ("--format", "-f") and args[i + 1 : i + 2] == ["json"]
        ):
            return True
    return False


# Short options whose errors name them: each letter means the same long option in every command.
_SHORT_FLAGS = {"-n": "--namespace", "-g": "--global", "-A": "--all-namespaces"}


def flags_given(args: list[str]) -> set[str]:
    """The long options on a command line (``--now`` of ``--now=2026-01-01`` too, ``-n`` as
    ``--namespace``), up to ``--``."""
    given: set[str] = set()
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            given.add(arg.partition("=")[0])
        elif arg[:2] in _SHORT_FLAGS:
            given.add(_SHORT_FLAGS[arg[:2]])
    return given


def _envelope(ctx: Any) -> bool:
    """An error envelope on stdout: JSON was asked for, and the command has not printed its result there."""
    return bool(ctx.meta.get(_WANTS_JSON)) and not getattr(ctx.obj, "shown", False)


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
    ctx.obj = AppContext(db=db, verbose=verbose, hook=hook)
    ctx.call_on_close(ctx.obj.close)


def clean_argv(args: list[str]) -> list[str]:
    """argv with every undecodable byte (a lone surrogate) replaced by U+FFFD, so no command chokes on it."""
    return [arg if arg.isascii() else _lone_surrogate().sub("\ufffd", arg) for arg in args]


def main() -> None:
    """Console-script entry point."""
    try:
        try:
            app(args=clean_argv(sys.argv[1:]), standalone_mode=True)
        finally:
            # Flushed here, inside the try, so a reader that went away is noticed now rather
            # than at interpreter exit (where it would print "Exception ignored ...").
            sys.stdout.flush()
    except (BrokenPipeError, OutputClosed):
        # The reader has all it wanted (`engram export | head -1`): stop quietly, as Python's
        # documentation on SIGPIPE advises, pointing stdout at devnull for the final flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_PIPE_CLOSED)
