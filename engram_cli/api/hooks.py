"""Hooks and cron: what `engram hooks` and `engram schedule` do. None of it needs the database open,
except the session context, which reads it through the ``engram`` it is given."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engram_cli.api.results import SessionContext
from engram_cli.config import Paths
from engram_cli.errors import EngramError, InvalidInput
from engram_cli.ingest.limits import Abandoned, hard_stop
from engram_cli.integrations import assistants, check_database, engram_command, hooklog
from engram_cli.integrations import git as githook
from engram_cli.integrations import mcp as mcpmod
from engram_cli.integrations import schedule as schedmod
from engram_cli.integrations.assistants import (
    ASSISTANTS,
    CONTEXT_BUDGET,
    CONTEXT_K,
    UNSUPPORTED,
    Assistant,
    SettingsChange,
)
from engram_cli.integrations.git import GitHookChange
from engram_cli.integrations.mcp import McpChange
from engram_cli.integrations.mcp import describe as describe_mcp
from engram_cli.integrations.schedule import Schedule
from engram_cli.integrations.settings_files import BACKUP_SUFFIX
from engram_cli.project import Scope, project_namespace

if TYPE_CHECKING:
    from engram_cli.api.engram import Engram

__all__ = [
    "ASSISTANTS",
    "BACKUP_SUFFIX",
    "CONTEXT_BUDGET",
    "CONTEXT_K",
    "UNSUPPORTED",
    "Assistant",
    "GitHookChange",
    "McpChange",
    "Schedule",
    "SettingsChange",
    "describe_mcp",
    "install_assistant",
    "install_git",
    "prompt_context",
    "record_hook_failure",
    "schedule",
    "session_context",
    "uninstall_assistant",
    "uninstall_git",
]


def install_git(paths: Paths, db: str | None = None, repo: Path | None = None) -> GitHookChange:
    """A post-commit hook in ``repo`` (default: the current directory's) that ingests in the background."""
    check_database(db)
    return githook.install(engram_command(db), repo, log_file=paths.data_dir / hooklog.LOG_FILE)


def uninstall_git(repo: Path | None = None) -> GitHookChange:
    """Remove engram's post-commit hook and put back the one it chained."""
    return githook.uninstall(repo)


def install_assistant(
    name: str, db: str | None = None, *, project: Path | None = None, settings: Path | None = None,
    per_prompt: bool | None = None, mcp: bool | None = None,
) -> SettingsChange:  # fmt: skip
    """Engram's session hooks in an assistant's settings (the user's, a project's, or exactly ``settings``).

    ``per_prompt`` adds or removes the hook that recalls for each prompt; ``mcp`` registers or removes
    engram's MCP server (``engram mcp``) in the assistant's MCP settings for the same scope; None keeps
    either as installed. ``settings`` names a hooks file; only Gemini CLI keeps its MCP servers there.
    """
    a = assistants.assistant(name)
    path = assistants.settings_path(a, project=project, settings=settings)
    servers = mcpmod.location(name, project=project, settings=settings, mcp=mcp)
    check_database(db)
    return assistants.install(a, path, engram_command(db), per_prompt=per_prompt, mcp=mcp, servers=servers)


def uninstall_assistant(name: str, *, project: Path | None = None, settings: Path | None = None) -> SettingsChange:
    """Remove engram's hooks and its MCP server (only those) from an assistant's settings.

    With ``settings`` naming Claude Code's or Codex's hooks file, their MCP settings are left alone.
    """
    a = assistants.assistant(name)
    path = assistants.settings_path(a, project=project, settings=settings)
    return assistants.uninstall(a, path, servers=mcpmod.location(name, project=project, settings=settings))


def session_context(
    name: str,
    paths: Paths,
    engram: Callable[[], Engram],
    *,
    directory: Path | None = None,
    k: int = CONTEXT_K,
    budget: int = CONTEXT_BUDGET,
    now: str | None = None,
) -> SessionContext:
    """The card a new session of assistant ``name`` starts with; never fails once the project is known.

    No query (nobody has asked anything yet): the strongest memories of the project (the assistant's
    project directory's git repository) and of the global scope, by importance x decay x recency
    (:meth:`Engram.card`), as of ``now`` (default: now). Reading is not an access. Without a database
    there is nothing to say (and no reason to create one); a store that cannot be read is the result's
    ``problem``.
    """
    a = assistants.assistant(name)
    namespace = project_namespace(assistants.project_dir(a, directory))
    context = SessionContext([], budget=budget, as_hook_json=a.context_as_json, event=a.context_event)
    if not paths.db.exists():
        return context
    try:
        context.hits = engram().scoped(Scope(namespace)).card(k, now=now)
    except EngramError as exc:
        context.problem = exc
    return context


def prompt_context(
    name: str,
    paths: Paths,
    engram: Callable[[], Engram],
    payload: str,
    *,
    directory: Path | None = None,
) -> SessionContext:
    """What the per-prompt hook adds to a prompt: the memories relevant to it, or nothing; never fails.

    ``payload`` is what the assistant hands the hook on stdin (JSON with ``prompt`` and ``cwd``, or the
    prompt as text). The prompt is recalled in its project and the global scope, and only hits at least
    ``hooks.prompt_min_relevance`` likely to be relevant are kept (at most ``hooks.prompt_k``, within
    ``hooks.prompt_budget`` tokens); they count as accessed, since they are put before the model. A
    slash command or an empty prompt asks nothing. Past ``hooks.prompt_time_limit_s`` engram gives up
    and the problem says so: the prompt goes on without memories rather than wait.
    """
    a = assistants.assistant(name)
    event = assistants.prompt_event(payload)
    namespace = project_namespace(assistants.project_dir(a, directory or event.cwd))
    context = SessionContext([], budget=0, as_hook_json=a.context_as_json, event=a.prompt_event)
    if not paths.db.exists() or not assistants.asks_memory(event.prompt):
        return context
    try:
        mem = engram().scoped(Scope(namespace))
        limits = mem.settings.hooks
        context.budget = limits.prompt_budget
        with hard_stop(limits.prompt_time_limit_s):
            # Memories only: a card never carries evidence (the raw turns of conversations).
            context.hits = mem.recall(
                event.prompt, k=limits.prompt_k, min_relevance=limits.prompt_min_relevance, evidence=False
            )
    except Abandoned:
        context.hits = []
        context.problem = InvalidInput(
            "gave up on recall for this prompt: it took longer than hooks.prompt_time_limit_s",
            hint="raise hooks.prompt_time_limit_s, or see `engram doctor` for what is slow",
        )
    except EngramError as exc:
        context.problem = exc
    return context


def schedule(paths: Paths, db: str | None = None) -> Schedule:
    """Crontab lines for ingest, decay and compact that run this engram (with ``--db``, if given)."""
    check_database(db)
    return schedmod.plan(engram_command(db), paths.data_dir / schedmod.LOG_FILE, os.environ)


def record_hook_failure(paths: Paths, hook: str, code: int, message: str) -> None:
    """Note a hook's failure in hooks.log, where `engram doctor` finds it (never raises)."""
    hooklog.record(paths.data_dir / hooklog.LOG_FILE, hook, code, message)
