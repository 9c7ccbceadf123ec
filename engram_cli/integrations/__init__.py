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

# Ends every command line engram writes into another tool's configuration, so that
# `uninstall` (and a later `install` with a moved engram) finds exactly its own entries.
MARKER = "engram-managed"

_SCRIPT_NAMES = ("engram", "engram.exe")


def engram_command(db: str | None = None) -> list[str]:
    """The argv that runs this same engram from anywhere: the console script if we were started
    as one, else this interpreter with ``-m engram_cli``; plus ``--db`` when one was given."""
    argv0 = sys.argv[0] if sys.argv else ""
    started_as = Path(argv0).name
    if started_as in _SCRIPT_NAMES and Path(argv0).exists():
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
