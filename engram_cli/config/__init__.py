"""Configuration: defaults in code -> config.toml -> ENGRAM_* environment variables.

``settings.py`` holds the one typed tree of settings with their defaults and descriptions;
``schema`` reads it as dotted keys; ``loading`` builds the effective ``Config``; ``editing``
changes config.toml for `engram config set/unset`; ``paths`` says where everything lives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_cli.config.loading import ENV_OVERRIDES, Config, load, read_file
from engram_cli.config.paths import APP_NAME, DB_FILENAME, Paths
from engram_cli.config.schema import KEYS, coerce, docs, flat
from engram_cli.config.settings import Settings

if TYPE_CHECKING:
    from engram_cli.config.editing import set_value, unset_value

__all__ = [
    "APP_NAME",
    "DB_FILENAME",
    "ENV_OVERRIDES",
    "KEYS",
    "Config",
    "Paths",
    "Settings",
    "coerce",
    "docs",
    "flat",
    "load",
    "read_file",
    "set_value",
    "unset_value",
]


def __getattr__(name: str) -> Any:
    # Only `config set` and `config unset` edit the file: every other command reads it.
    if name in ("set_value", "unset_value"):
        from engram_cli.config import editing

        return getattr(editing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
