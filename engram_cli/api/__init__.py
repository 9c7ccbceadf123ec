"""The Python API, and the only door the CLI goes through: ``from engram_cli.api import Engram``.

``Engram`` is an open store with every verb that works on one. The module-level operations need
no database: hooks and cron (:mod:`engram_cli.api.hooks`), doctor, the bundled models and eval's
queries (:mod:`engram_cli.api.system`). :mod:`engram_cli.api.lookup` reads a keyed fact with
the store alone (no model, no numpy); like ``Engram``, it is imported where it is used.
:mod:`engram_cli.api.results` names what commands produce when the engine's own answer does not
say it alone.

``Engram`` is imported on first use, so that `engram --help` and the hook commands do not pay
for numpy and SQLite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_cli._version import __version__
from engram_cli.api import hooks, system
from engram_cli.api.results import (
    ConfigChange,
    ConfigListing,
    EvalRun,
    Forgotten,
    History,
    Inspection,
    NamespaceListing,
    Page,
    Recalled,
    SessionContext,
    SourceListing,
    Touched,
)

if TYPE_CHECKING:
    from engram_cli.api.engram import Criteria, Engram
    from engram_cli.memory.model import Filters

__all__ = [
    "ConfigChange",
    "ConfigListing",
    "Criteria",
    "Engram",
    "EvalRun",
    "Filters",
    "Forgotten",
    "History",
    "Inspection",
    "NamespaceListing",
    "Page",
    "Recalled",
    "SessionContext",
    "SourceListing",
    "Touched",
    "__version__",
    "hooks",
    "system",
]


def __getattr__(name: str) -> Any:
    if name in ("Engram", "Criteria"):
        from engram_cli.api import engram

        return getattr(engram, name)
    if name == "Filters":
        from engram_cli.memory.model import Filters

        return Filters
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
