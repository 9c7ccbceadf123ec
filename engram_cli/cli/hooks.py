"""hooks install|uninstall git|ASSISTANT, hooks context, schedule."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from engram_cli.api import hooks
from engram_cli.cli.common import JsonOpt, app_context, read_stdin, show

RepoOpt = Annotated[
    Path | None, typer.Option("--repo", metavar="PATH", help="The repository (default: the current directory's).")
]
ProjectOpt = Annotated[
    Path | None,
    typer.Option("--project", metavar="PATH", help="This repository's project settings instead of the user's."),
]
SettingsOpt = Annotated[
    Path | None, typer.Option("--settings", metavar="FILE", help="Exactly this settings file (overrides the default).")
]

PerPromptOpt = Annotated[
    bool | None,
    typer.Option(
        "--per-prompt/--no-per-prompt",
        help="Also add the hook that recalls for each prompt / remove it (default: keep what is installed).",
        show_default=False,
    ),
]

McpOpt = Annotated[
    bool | None,
    typer.Option(
        "--mcp/--no-mcp",
        help="Also register engram's MCP server (`engram mcp`) in the assistant's MCP settings / remove it "
        "(default: keep what is registered, brought up to date).",
        show_default=False,
    ),
]

_UNSUPPORTED = ", ".join(hooks.UNSUPPORTED)

hooks_app = typer.Typer(
    help="Run engram from git and coding assistants: ingest after commits and sessions, memories at session start.",
    no_args_is_help=True,
)
install_app = typer.Typer(
    help="Install engram's hook for git or an assistant. Safe to repeat; existing hooks and settings are kept.",
    epilog=f"No hooks (no documented format engram could check) for: {_UNSUPPORTED}. `engram schedule` covers them.",
    no_args_is_help=True,
)
uninstall_app = typer.Typer(
    help="Remove engram's hook and only engram's, putting back what was there before.", no_args_is_help=True
)
hooks_app.add_typer(install_app, name="install")
hooks_app.add_typer(uninstall_app, name="uninstall")


@install_app.command("git")
def install_git(ctx: typer.Context, repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
    """A post-commit hook that starts `engram ingest --quiet --max-seconds 60` in the background.

    It never fails or slows a commit. An existing post-commit hook is kept beside it as
    post-commit.engram-chained and still runs, with its exit status. Honours core.hooksPath.
    """
    state = app_context(ctx)
    show(ctx, hooks.install_git(state.paths, state.db, repo), json=as_json)


@uninstall_app.command("git")
def uninstall_git(ctx: typer.Context, repo: RepoOpt = None, as_json: JsonOpt = False) -> None:
    """Remove engram's post-commit hook and put back the one it chained, byte for byte."""
    show(ctx, hooks.uninstall_git(repo), json=as_json)


def _install_assistant(name: str) -> Callable[..., None]:
    a = hooks.ASSISTANTS[name]

    def command(
        ctx: typer.Context,
        project: ProjectOpt = None,
        settings: SettingsOpt = None,
        per_prompt: PerPromptOpt = None,
        mcp: McpOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        change = hooks.install_assistant(
            name, app_context(ctx).db, project=project, settings=settings, per_prompt=per_prompt, mcp=mcp
        )
        show(ctx, change, json=as_json)

    when = a.ingest_event
    if a.ingest_event == a.context_event:
        when += f" too, for the sessions before ({a.title} has no session-end event)"
    command.__doc__ = (
        f"{a.title}: a card of the project's and your global memories at {a.context_event}; `engram ingest "
        f"{a.name}` in the background at {when}. With --per-prompt, also `engram hooks prompt {a.name}` at "
        f"{a.prompt_event}: the memories relevant to each prompt, or nothing.\n\nMerges into "
        f"{a.user_settings()} (or the project's {a.project_file}), keeping every other key and hook; backs the "
        f"file up once as *{hooks.BACKUP_SUFFIX}; refuses a file that is not valid JSON.\n\n"
        f"{hooks.describe_mcp(name)}"
    )
    return command


def _uninstall_assistant(name: str) -> Callable[..., None]:
    a = hooks.ASSISTANTS[name]

    def command(
        ctx: typer.Context, project: ProjectOpt = None, settings: SettingsOpt = None, as_json: JsonOpt = False
    ) -> None:
        show(ctx, hooks.uninstall_assistant(name, project=project, settings=settings), json=as_json)

    left_alone = "" if name == "gemini-cli" else " With --settings, the MCP settings are left alone."
    command.__doc__ = f"Remove engram's {a.title} hooks and its MCP server entry (only those).{left_alone}"
    return command


for _name in hooks.ASSISTANTS:
    install_app.command(_name)(_install_assistant(_name))
    uninstall_app.command(_name)(_uninstall_assistant(_name))


@hooks_app.command("context")
def context(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="ASSISTANT", help=f"{', '.join(hooks.ASSISTANTS)}.")],
    directory: Annotated[
        Path | None,
        typer.Option("--dir", metavar="PATH", help="The project (default: the assistant's project dir, or here)."),
    ] = None,
    k: Annotated[int, typer.Option("-k", min=1, help="At most this many memories.")] = hooks.CONTEXT_K,
    budget: Annotated[
        int, typer.Option("--budget", min=1, help="Stop before this many tokens.")
    ] = hooks.CONTEXT_BUDGET,
    now: Annotated[
        str | None, typer.Option("--now", help="Judge ages as of this time (ISO 8601): for tests and backfills.")
    ] = None,
) -> None:
    """What a SessionStart hook runs: the project's and your global memories as a card, in the assistant's format.

    No query: the strongest memories by importance x decay x recency, the global scope holding at most
    half the places while the project can fill them, near-copies once, within the budget. Reading does
    not count as an access. Prints nothing when there is nothing to say, and never fails the session: a
    problem is one line on stderr.
    """
    state = app_context(ctx)
    result = hooks.session_context(name, state.paths, state.engram, directory=directory, k=k, budget=budget, now=now)
    show(ctx, result)
    if result.problem is not None and state.hook:
        state.record_hook_failure(result.problem.exit_code, result.problem.message)


@hooks_app.command("prompt")
def prompt(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="ASSISTANT", help=f"{', '.join(hooks.ASSISTANTS)}.")],
    directory: Annotated[
        Path | None,
        typer.Option("--dir", metavar="PATH", help="The project (default: the hook's cwd, or the assistant's)."),
    ] = None,
) -> None:
    """What a per-prompt hook runs: the memories relevant to the prompt on stdin, or nothing.

    Reads the assistant's hook JSON (`prompt`, `cwd`) or plain text from stdin, recalls it in the
    project and the global scope, and prints only hits at least hooks.prompt_min_relevance likely to be
    relevant (at most hooks.prompt_k, within hooks.prompt_budget tokens) as a card in the assistant's
    format. Prints nothing when nothing is relevant, for slash commands, and past
    hooks.prompt_time_limit_s; never fails the prompt: a problem is one line on stderr.
    """
    state = app_context(ctx)
    # Building a missing vector index takes minutes at a million memories, far past the time limit: the
    # prompt searches with sqlite-vec instead, and the warm service builds the index in the background.
    state.build_index = False
    result = hooks.prompt_context(name, state.paths, state.engram, read_stdin(), directory=directory)
    show(ctx, result)
    if result.problem is not None and state.hook:
        state.record_hook_failure(result.problem.exit_code, result.problem.message)


@hooks_app.command("serve", hidden=True)
def serve(
    ctx: typer.Context,
    lock_fd: Annotated[int | None, typer.Option("--lock-fd", hidden=True, help="The service's lock, taken.")] = None,
) -> None:
    """Internal: the per-prompt hook's warm service for this database (the hook starts it itself).

    Keeps the store and the model loaded and runs `hooks prompt` for the hooks of this user over a
    private Unix socket, until hooks.warm_idle_s pass without a prompt, the database file is replaced
    or engram is upgraded. Linux only; elsewhere every prompt runs engram afresh.
    """
    from engram_cli import config as configmod
    from engram_cli.errors import UsageError
    from engram_cli.warm import locate, server

    state = app_context(ctx)
    if not locate.supported():
        raise UsageError("the warm service needs Unix sockets with peer credentials (Linux)")
    path = locate.socket_path(locate.database(state.db, os.environ), os.environ)
    if path is None:
        raise UsageError("the socket path would be too long for a Unix socket", hint="set XDG_RUNTIME_DIR")
    root = ctx.find_root().command

    def idle_seconds() -> float:
        return configmod.load(state.paths).settings.hooks.warm_idle_s

    # The prompts' own setting: the warm-up must not build the vector index before the service listens.
    state.build_index = False

    def warm_up() -> None:
        # Loads the model and the store's pages as the first prompt would; reading only, no access counted.
        mem = state.engram()
        mem.recall("warm up", k=1, bump=False, evidence=False)
        mem.keep_keyword_scorer()

    def build_index() -> None:
        # In the service's background thread, so on a connection of its own (apsw connections are not
        # shared between threads). Prompts answered meanwhile search with sqlite-vec; those after it, the file.
        from engram_cli.api import Engram

        with Engram.open(config=state.config, paths=state.paths) as mem:
            mem.build_vector_index()

    stopped = server.serve(
        path, str(state.paths.db), lambda request: server.run_command(root, request), idle_seconds,
        lock_fd=lock_fd, warm_up=warm_up, background=build_index,
    )  # fmt: skip
    logging.getLogger(__name__).info("warm service stopped: %s", stopped)


def schedule(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Print crontab lines for ingest (every 30 min), decay (daily) and compact (weekly). Installs nothing.

    Each line uses this engram's absolute path, carries ENGRAM_HOME/ENGRAM_DB and the like when they are
    set, and appends its output to cron.log in engram's data directory. Add them with `crontab -e`.
    """
    state = app_context(ctx)
    show(ctx, hooks.schedule(state.paths, state.db), json=as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(hooks_app, name="hooks")
    app.command()(schedule)
