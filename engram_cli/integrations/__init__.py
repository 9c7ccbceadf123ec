"""Wiring engram into other tools: a git post-commit hook, assistants' session hooks, cron lines.

Nothing here runs engram's engine. Each module writes (or prints) commands that call the
``engram`` executable later, from a hook or cron, where neither our PATH nor our virtualenv
can be assumed: so every command starts with the absolute path of the running engram.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from engram_cli import atomic
from engram_cli.errors import IntegrationError

# Ends every command line engram writes into another tool's configuration, so that
# `uninstall` (and a later `install` with a moved engram) finds exactly its own entries.
MARKER = "engram-managed"

SCRIPT_NAMES = ("engram", "engram.exe")


def engram_command(db: str | None = None) -> list[str]:
    """The argv that runs this same engram from anywhere: the console script if we were started
    as one, else this interpreter with ``-m engram_cli``; plus ``--db`` when one was given."""
    argv0 = sys.argv[0] if sys.argv else ""
    started_as = Path(argv0).name
    if started_as in SCRIPT_NAMES and Path(argv0).exists():
        # Absolute, but not resolved: pipx and Homebrew put a stable symlink on PATH that
        # survives upgrades, while the file it points to moves with every version.
        command = [os.path.abspath(argv0)]
    elif started_as == "__main__.py" or not (found := shutil.which("engram")):
        command = [os.path.abspath(sys.executable), "-m", "engram_cli"]
    else:
        command = [os.path.abspath(found)]
    if db is not None:
        command += ["--db", os.path.abspath(os.path.expanduser(db))]
    return command


def shell_join(command: Sequence[str]) -> str:
    """A POSIX shell rendering of ``command`` that survives spaces and quotes in paths."""
    return shlex.join(command)


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one rename, creating its directory (a project's ``.claude/``) if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_atomic(path, data, mode)


def check_database(db: str | None) -> None:
    """A ``--db`` that hooks and cron lines will carry must work when they run: refuse one that cannot.

    A hook's output goes nowhere, so a path that fails would fail unseen on every commit. An existing
    database must be a readable and writable file; a new one needs an existing, writable directory.
    """
    if db is None:
        return
    path = Path(db).expanduser()
    redo = "fix the path and run the install again"
    if path.is_dir():
        raise IntegrationError(f"`db` {db} is a directory, not a database file", hint=redo, param="db")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise IntegrationError(
                f"`db` {db}: the file is not readable and writable", hint=f"chmod 600 {path}", param="db"
            )
        return
    parent = path.parent
    if not parent.is_dir():
        raise IntegrationError(
            f"`db` {db}: the directory {parent} does not exist, so every run of the hook would fail",
            hint=f"create it first (mkdir -p {shlex.quote(str(parent))}), or {redo}",
            param="db",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise IntegrationError(
            f"`db` {db}: cannot create a database in {parent} (permission denied)", hint=redo, param="db"
        )
