"""The Python API, and the only door the CLI goes through: ``from engram_cli.api import Engram``.

``Engram`` is an open store with every verb that works on one. The module-level operations need
no database: hooks and cron (:mod:`engram_cli.api.hooks`), doctor, the bundled models and eval's
queries (:mod:`engram_cli.api.system`). :mod:`engram_cli.api.lookup` reads a keyed fact with
the store alone (no model, no numpy); like ``Engram``, it is imported where it is used.
:mod:`engram_cli.api.results` names what commands produce when the engine's own answer does not
say it alone.

Every name here is imported on first use, so that a command pays only for what it uses: `engram
get` neither numpy nor the hook installers, `engram --help` not SQLite.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engram_cli._version import __version__

if TYPE_CHECKING:
    from engram_cli.api import hooks, system
    from engram_cli.api.engram import Criteria, Engram
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


# Where each lazy name lives: a module of this package, or the module holding a class of that name.
_RESULTS = (
    "ConfigChange", "ConfigListing", "EvalRun", "Forgotten", "History", "Inspection", "NamespaceListing", "Page",
    "Recalled", "SessionContext", "SourceListing", "Touched",
)  # fmt: skip
_LAZY = {
    "hooks": "engram_cli.api.hooks",
    "system": "engram_cli.api.system",
    "Engram": "engram_cli.api.engram",
    "Criteria": "engram_cli.api.engram",
    "Filters": "engram_cli.memory.model",
    **dict.fromkeys(_RESULTS, "engram_cli.api.results"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(where)
    value = module if where == f"{__name__}.{name}" else getattr(module, name)
    globals()[name] = value
    return value
