"""The effective configuration: defaults in code -> config.toml -> ENGRAM_* environment variables."""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_cli.config import schema
from engram_cli.config.paths import Paths
from engram_cli.config.settings import Settings
from engram_cli.errors import InvalidInput, UsageError

# Environment variables that override single settings.
ENV_OVERRIDES: dict[str, str] = {
    "ENGRAM_NAMESPACE": "namespace",
    "ENGRAM_AGENT": "agent",
    "ENGRAM_MODEL": "model",
}


@dataclass(frozen=True)
class Config:
    """Effective settings plus the origin of every value that is not a default.

    ``warnings`` lists what was wrong in config.toml (an unknown key, a value of the wrong
    type, a file that is not TOML): each such setting keeps its default, and the CLI shows
    the warnings instead of refusing to run. ``Config()`` is every default and no file.
    To run with other settings, build a new one (``dataclasses.replace``); a Config shared
    by several users is never edited in place.
    """

    settings: Settings = field(default_factory=Settings)
    origins: dict[str, str] = field(default_factory=dict)
    paths: Paths | None = None
    warnings: list[str] = field(default_factory=list)

    def flat(self) -> dict[str, Any]:
        """Every setting's value by dotted key (``recall.k``), in the order of the tree."""
        return schema.flat(self.settings)


def flatten(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """A TOML document's values by dotted key."""
    out: list[tuple[str, Any]] = []
    for name, value in tree.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, dict):
            out.extend(flatten(value, dotted + "."))
        else:
            out.append((dotted, value))
    return out


def read_file(path: Path) -> dict[str, Any]:
    """Read a config.toml; a missing file is an empty config."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInput(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"config file {path} is not valid TOML: {exc}",
            hint="fix it by hand or delete it to return to the defaults",
        ) from exc


def load(paths: Paths | None = None) -> Config:
    """Build the effective configuration.

    Nothing in config.toml can stop engram from starting: a setting it cannot use keeps its
    default, and what was wrong is listed in ``Config.warnings`` (naming the key and the file).
    """
    paths = paths or Paths.resolve()
    changes: dict[str, Any] = {}
    origins: dict[str, str] = {}
    warnings: list[str] = []
    source = paths.config_file
    try:
        data = read_file(source)
    except InvalidInput as exc:
        data = {}
        warnings.append(f"{exc.message}; all of its settings are ignored until it is fixed")
    for name, value in flatten(data):
        try:
            changes[name] = schema.coerce(name, value)
        except UsageError:
            warnings.append(schema.unusable_key(source, name))
            continue
        except InvalidInput as exc:
            default = schema.key(name).default
            shown = "none" if default is None else json.dumps(default, ensure_ascii=False)
            warnings.append(f"{source}: {exc.message}; using the default, {shown}")
            continue
        origins[name] = str(source)
    for env, name in ENV_OVERRIDES.items():
        if os.environ.get(env):
            changes[name] = schema.coerce(name, os.environ[env])
            origins[name] = env
    return Config(settings=schema.with_values(Settings(), changes), origins=origins, paths=paths, warnings=warnings)
