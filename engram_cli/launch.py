"""The `engram` console script: the per-prompt hook's quick way in, and the full CLI for everything else.

An assistant runs the per-prompt hook (``engram [--db PATH] --hook NAME:EVENT hooks prompt ASSISTANT``)
before every prompt, so that one command line must not pay for typer, rich, numpy, onnxruntime and
the engine. This module recognises exactly that shape and asks the warm service of the database
(``engram_cli.warm``) to run it; any other command line, or a hook the service cannot answer, goes
to the full CLI in this process, which then starts the service for next time. The output is the same
either way: the service runs the same command and hands back its bytes and exit code.
"""

from __future__ import annotations

import os
import sys

# Options of the root command the installed hooks pass; anything else goes to the full CLI.
_ROOT_OPTIONS = ("--db", "--hook")
_NOT_A_PROMPT = "not a prompt"


def _option(args: list[str], at: int) -> tuple[str, str, int] | None:
    """The long option at ``args[at]`` (``--name value`` or ``--name=value``): name, value, next index."""
    name, eq, value = args[at].partition("=")
    if not eq:
        if at + 1 >= len(args):
            return None
        value, at = args[at + 1], at + 1
    # An empty value or one that looks like an option: let the CLI judge it.
    if not value or value.startswith("-"):
        return None
    return name, value, at + 1


def prompt_database(args: list[str]) -> str | None:
    """The ``--db`` of a per-prompt hook's command line (None: no --db), or ``_NOT_A_PROMPT``.

    Only ``[--db PATH] [--hook NAME] hooks prompt ASSISTANT [--dir PATH]`` (options in any order,
    each at most once, with ``=`` or not) is a prompt here; anything unusual is left to the CLI.
    """
    at, db, seen = 0, None, set()
    while at < len(args) and args[at].startswith("-"):
        found = _option(args, at)
        if found is None or found[0] not in _ROOT_OPTIONS or found[0] in seen:
            return _NOT_A_PROMPT
        name, value, at = found
        seen.add(name)
        if name == "--db":
            db = value
    if args[at : at + 2] != ["hooks", "prompt"]:
        return _NOT_A_PROMPT
    at += 2
    assistant, dirs = [], 0
    while at < len(args):
        if args[at].startswith("-"):
            found = _option(args, at)
            if found is None or found[0] != "--dir" or dirs:
                return _NOT_A_PROMPT
            dirs, at = 1, found[2]
        else:
            assistant.append(args[at])
            at += 1
    return db if len(assistant) == 1 else _NOT_A_PROMPT


def program_name(argv0: str, main_package: str | None) -> str:
    """The name click gives the program in its messages (``engram``, ``python -m engram_cli``)."""
    if not main_package:
        return os.path.basename(argv0)
    name = os.path.splitext(os.path.basename(argv0))[0]
    module = main_package if name == "__main__" else f"{main_package}.{name}"
    return f"python -m {module.lstrip('.')}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _warm_prompt(args: list[str], db: str | None) -> None:
    """Answer the hook from the warm service and exit; return (having set stdin back up) when it cannot."""
    from engram_cli.warm import client, locate
    from engram_cli.warm.protocol import Request, Stream

    stdin, stdout, stderr = sys.stdin, sys.stdout, sys.stderr
    # A person trying the hook at a terminal gets the CLI: its look depends on the terminal.
    if stdin is None or stdout is None or stderr is None or stdout.isatty() or stderr.isatty():
        return
    data = stdin.buffer.read()
    # Whatever happens now, the CLI must find the same stdin if it runs.
    import io

    sys.stdin = io.TextIOWrapper(io.BytesIO(data), stdin.encoding, stdin.errors)
    env = os.environ
    path = locate.socket_path(locate.database(db, env), env)
    if path is None:
        return
    main_module = sys.modules.get("__main__")
    request = Request(
        args, program_name(sys.argv[0], getattr(main_module, "__package__", None)), os.getcwd(),
        locate.forwarded_env(env), data, Stream(stdin.encoding, stdin.errors or "strict"),
        Stream(stdout.encoding, stdout.errors or "strict"), Stream(stderr.encoding, stderr.errors or "strict"),
    )  # fmt: skip
    reply = client.ask(path, request)
    if reply is None:
        return
    try:
        _write_all(1, reply.stdout)
        _write_all(2, reply.stderr)
    except BrokenPipeError:
        sys.exit(141)  # as the CLI ends when its reader goes away
    sys.exit(reply.code)


def _start_service(db: str | None) -> None:
    """After the CLI answered a hook itself: start the warm service for next time, if it is wanted."""
    from engram_cli import config as configmod
    from engram_cli.warm import client, locate

    env = os.environ
    resolved = locate.database(db, env)
    path = locate.socket_path(resolved, env)
    if path is None:
        return
    paths = configmod.Paths.resolve(db)
    if not paths.db.is_file():
        return  # nothing to serve (and the hook says nothing)
    if configmod.load(paths).settings.hooks.warm_idle_s <= 0:
        return
    client.start_service(resolved, path)


def main() -> None:
    """Console-script entry point."""
    args = sys.argv[1:]
    db = prompt_database(args)
    warm = db != _NOT_A_PROMPT and _supported()
    if warm:
        _warm_prompt(args, db)
    from engram_cli.cli import main as cli_main

    try:
        cli_main()
    finally:
        if warm:
            # Starting the service is only for speed next time: it must never fail the hook.
            # (try/except, not contextlib.suppress: contextlib would cost every warm hook its import.)
            try:  # noqa: SIM105
                _start_service(db)
            except Exception:
                pass


def _supported() -> bool:
    from engram_cli.warm import locate

    return locate.supported()
