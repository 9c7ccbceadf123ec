"""Which project a directory belongs to: the rule ingest and the assistant hooks share."""

from __future__ import annotations

from pathlib import Path


def git_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding ``.git`` (a linked worktree's is a file)."""
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_namespace(directory: Path) -> str:
    """The namespace of the project at ``directory``: its git repository's directory name, else its own."""
    start = directory.expanduser().absolute()
    root = git_root(start)
    return (root or start).name
