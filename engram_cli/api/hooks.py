"""Hooks and cron: what `engram hooks` and `engram schedule` do. None of it needs the database open,
except the session context, which reads it through the ``engram`` it is given."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engram_cli.api.results import SessionContext
from engram_cli.config import Paths
from engram_cli.errors import EngramError
from engram_cli.integrations import assistants, check_database, engram_command, hooklog
from engram_cli.integrations import git as githook
from engram_cli.integrations import schedule as schedmod
from engram_cli.integrations.assistants import (
    ASSISTANTS,
    BACKUP_SUFFIX,
    CONTEXT_BUDGET,
    CONTEXT_K,
    UNSUPPORTED,
    Assistant,
    SettingsChange,
)
from engram_cli.integrations.git import GitHookChange
from engram_cli.integrations.schedule import Schedule
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
    "Schedule",
    "SettingsChange",
    "install_assistant",
    "install_git",
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
    per_prompt: bool | None = None,
) -> SettingsChange:  # fmt: skip
    """Engram's session hooks in an assistant's settings (the user's, a project's, or exactly ``settings``).

    ``per_prompt`` adds or removes the hook that recalls for each prompt; None keeps it as installed.
    """
    a = assistants.assistant(name)
    path = assistants.settings_path(a, project=project, settings=settings)
    check_database(db)
    return assistants.install(a, path, engram_command(db), per_prompt=per_prompt)


def uninstall_assistant(name: str, *, project: Path | None = None, settings: Path | None = None) -> SettingsChange:
    """Remove engram's hooks (only those) from an assistant's settings."""
    a = assistants.assistant(name)
    return assistants.uninstall(a, assistants.settings_path(a, project=project, settings=settings))


def session_context(
    name: str,
    paths: Paths,
    engram: Callable[[], Engram],
    *,
    directory: Path | None = None,
    k: int = CONTEXT_K,
    budget: int = CONTEXT_BUDGET,
) -> SessionContext:
    """The project's and the person's memories for a new session of assistant ``name``; never fails.

    The project is the assistant's project directory's git repository (its directory name is the
    namespace and the query, so importance and freshness decide); the global scope comes with it.
    Reading is not an access. Without a database there is nothing to say (and no reason to create
    one); a store that cannot be read is the result's ``problem``.
    """
    a = assistants.assistant(name)
    namespace = project_namespace(assistants.project_dir(a, directory))
    context = SessionContext([], budget=budget, as_hook_json=a.context_as_json)
    if not paths.db.exists():
        return context
    try:
        # The project's memories and the person's (global), as a recall run in the project would find them.
        context.hits = engram().scoped(Scope(namespace)).recall(namespace, k=k, bump=False)
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
