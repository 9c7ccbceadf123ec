"""The two scopes a keyed fact is looked up in: the project of the working directory, then the person (global).

The project is the git repository the directory is in (its directory name, the rule ingest and the
hooks use, ``engram_cli.project``), or the namespace the user configured (``namespace`` in
config.toml or ENGRAM_NAMESPACE), which wins. Outside a repository, with nothing configured, there
is no project and only the global scope is searched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engram_cli import config as configmod
from engram_cli.memory.model import normalize_namespace
from engram_cli.project import git_root, project_namespace

GLOBAL_NAMESPACE = "global"


@dataclass(frozen=True)
class Scope:
    project: str | None
    global_ns: str = GLOBAL_NAMESPACE

    def namespaces(self) -> list[str]:
        """Where an unqualified lookup searches, in order: the project, then global."""
        return [n for n in (self.project, self.global_ns) if n is not None]

    def default(self) -> str:
        """Where an unqualified write goes: the project, else global."""
        return self.project or self.global_ns

    def label(self, namespace: str) -> str:
        """What a result calls the scope it was found in."""
        if namespace == self.project:
            return "project"
        return "global" if namespace == self.global_ns else "other"


def resolve(cfg: configmod.Config, cwd: Path | None = None) -> Scope:
    """The scope of ``cwd`` (default: the process's working directory) under this configuration."""
    if "namespace" in cfg.origins:
        return Scope(normalize_namespace(cfg.settings.namespace))
    start = (cwd or Path.cwd()).expanduser().absolute()
    if git_root(start) is None:
        return Scope(None)
    project = project_namespace(start)
    # A repository called "global" must not read and write the person's facts as its own.
    return Scope(f"{project}-project" if project == GLOBAL_NAMESPACE else normalize_namespace(project))


def namespaces_for(scope: Scope, namespace: str | None) -> list[str]:
    """The namespaces a key is looked up in: the one named, or the scope's own."""
    return [normalize_namespace(namespace)] if namespace is not None else scope.namespaces()
