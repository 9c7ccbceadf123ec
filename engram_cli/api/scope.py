"""The scope a command works in when it is not told: the project of a directory, and the person's (global).

The rule itself lives in :mod:`engram_cli.project` (shared with ingest and the hooks); this module
adds what the configuration says: a ``namespace`` set in config.toml or ENGRAM_NAMESPACE names the
project wherever engram runs.
"""

from __future__ import annotations

from pathlib import Path

from engram_cli import config as configmod
from engram_cli.memory.model import normalize_namespace
from engram_cli.project import Scope


def configured(cfg: configmod.Config) -> str | None:
    """The namespace config.toml or ENGRAM_NAMESPACE set, normalised; None leaves it to the directory."""
    value = cfg.settings.namespace
    return None if value is None else normalize_namespace(value)


def resolve(cfg: configmod.Config, cwd: Path | None = None) -> Scope:
    """The scope of ``cwd`` (default: the process's working directory) under this configuration."""
    return Scope.resolve(configured(cfg), cwd)


def namespaces_for(scope: Scope, namespace: str | None) -> list[str]:
    """The namespaces a key is looked up in: the one named, or the scope's own (project, then global)."""
    return [normalize_namespace(namespace)] if namespace is not None else scope.namespaces
