"""Which project a directory belongs to, and the two scopes a command works in: the person's and the project's.

The rule is shared by ingest, the assistant hooks and every command that defaults to "this project".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# The person's scope: what is true of them in every project (how they want answers, the tools they
# use everywhere). The name is reserved: a project directory called "global" gets GLOBAL_PROJECT.
GLOBAL_NAMESPACE = "global"
GLOBAL_PROJECT = "global-project"
# Where engram wrote before there were scopes; migration 3 moved it to the global scope.
OLD_DEFAULT_NAMESPACE = "default"

ScopeName = Literal["project", "global", "other"]


def git_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding ``.git`` (a linked worktree's is a file)."""
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_name(name: str) -> str:
    """A project directory's name as a namespace: itself, unless it would be taken for the global scope."""
    return GLOBAL_PROJECT if name == GLOBAL_NAMESPACE else name


def project_namespace(directory: Path) -> str:
    """The namespace of the project at ``directory``: its git repository's directory name, else its own."""
    start = directory.expanduser().absolute()
    root = git_root(start)
    return project_name((root or start).name)


@dataclass(frozen=True)
class Scope:
    """Where a command works when it is not told: ``project`` (None outside one) and the global scope.

    ``add`` writes to :attr:`default`; ``recall`` searches :attr:`namespaces` (the project and the
    global scope together).
    """

    project: str | None
    global_ns: str = GLOBAL_NAMESPACE

    @property
    def default(self) -> str:
        """The namespace a write goes to: the project's, else the global one."""
        return self.project or self.global_ns

    @property
    def namespaces(self) -> list[str]:
        """What a read searches by default: the project first, then the global scope."""
        return [self.project, self.global_ns] if self.project else [self.global_ns]

    def of(self, namespace: str) -> ScopeName:
        """Which scope a memory of ``namespace`` belongs to, seen from here."""
        if namespace == self.global_ns:
            return "global"
        return "project" if namespace == self.project else "other"

    @classmethod
    def resolve(cls, configured: str | None, cwd: Path | None = None) -> Scope:
        """The scope of a command run in ``cwd`` (default: the current directory).

        A configured namespace (config.toml, ENGRAM_NAMESPACE) names the project wherever engram
        runs; otherwise it is the git repository around ``cwd``, and outside one there is only the
        global scope. ``configured`` must already be normalised.
        """
        if configured is not None:
            return cls(None if configured == GLOBAL_NAMESPACE else configured)
        try:
            start = (cwd or Path.cwd()).expanduser().absolute()
        except OSError:  # the current directory was deleted under us
            return cls(None)
        root = git_root(start)
        return cls(None if root is None else project_name(root.name))
