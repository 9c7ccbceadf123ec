"""Everything a person or a script sees. One entry point shows any result: :func:`result`.

With ``json=True`` a result is one JSON document on stdout, its form given by
``engram_cli.serialize.to_json``; otherwise the function registered for its type below prints it
for a person (results on stdout, remarks on stderr). Errors, notes and progress bars go to stderr
(``console``); export's JSON Lines and the error envelope are in ``json``.

Each module holds one family: ``memories`` (add, edit, list, inspect, history, forget, touch, import),
``keys`` (get, keys, unset),
``recall`` (table, cards, Markdown, a session's context), ``maintenance`` (decay, compact, reembed,
recover), ``audit``, ``ingest``, ``evaluation``, ``system`` (models, doctor, config), ``hooks``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engram_cli.render.console import (
    config_warnings,
    internal_error,
    interrupted,
    note,
    out,
    progress,
    warning,
)

if TYPE_CHECKING:
    from engram_cli.errors import EngramError
    from engram_cli.render.json import export
    from engram_cli.render.recall import CARD_FOOTER, CARD_HEADER, cards

__all__ = [
    "CARD_FOOTER",
    "CARD_HEADER",
    "cards",
    "config_warnings",
    "error",
    "error_document",
    "export",
    "internal_error",
    "interrupted",
    "note",
    "out",
    "progress",
    "result",
    "warning",
]


# Result types by module and class name, so that dispatching imports no engine module (numpy,
# SQLite) for commands that never open a store; tests/test_render.py checks that each name exists.
# Each maps to its renderer, "module.function" under render/ (the text for a person), and, for a few,
# remarks said on stderr whether or not the result is JSON. A renderer's module is imported when
# it is used.
_SHOWN: dict[str, tuple[str, str | None]] = {
    "engram_cli.memory.model.AddResult": ("memories.added", None),
    "engram_cli.memory.edit.EditResult": ("memories.edited", None),
    "engram_cli.memory.keys.KeyValue": ("keys.value", None),
    "engram_cli.memory.keys.KeyListing": ("keys.listing", None),
    "engram_cli.memory.keys.KeyUnset": ("keys.unset", None),
    "engram_cli.api.results.Recalled": ("recall.recalled", "recall.read_only"),
    "engram_cli.api.results.Page": ("memories.page", "memories.more"),
    "engram_cli.api.results.Inspection": ("memories.inspection", None),
    "engram_cli.api.results.NamespaceListing": ("memories.namespace_list", None),
    "engram_cli.api.results.History": ("memories.history", None),
    "engram_cli.api.results.Forgotten": ("memories.forgotten", None),
    "engram_cli.api.results.Touched": ("memories.touched", None),
    "engram_cli.memory.transfer.ImportReport": ("memories.imported", None),
    "engram_cli.memory.decay.DecayReport": ("maintenance.decay", None),
    "engram_cli.memory.compact.CompactReport": ("maintenance.compact", None),
    "engram_cli.memory.reembed.ReembedReport": ("maintenance.reembed", None),
    "engram_cli.memory.recover.RecoverReport": ("maintenance.recover", None),
    "engram_cli.memory.audit.report.AuditReport": ("audit.audit", None),
    "engram_cli.ingest.report.IngestReport": ("ingest.ingested", None),
    "engram_cli.api.results.SourceListing": ("ingest.sources", None),
    "engram_cli.api.results.EvalRun": ("evaluation.evaluated", None),
    "engram_cli.memory.harvest_eval.HarvestReport": ("evaluation.harvested", None),
    "engram_cli.doctor.ModelListing": ("system.models", None),
    "engram_cli.doctor.DoctorReport": ("system.doctor", None),
    "engram_cli.api.results.ConfigListing": ("system.settings", None),
    "engram_cli.api.results.ConfigChange": ("system.setting_changed", None),
    "pathlib.PurePath": ("system.path", None),
    "engram_cli.integrations.git.GitHookChange": ("hooks.git_hook", None),
    "engram_cli.integrations.assistants.SettingsChange": ("hooks.settings", None),
    "engram_cli.integrations.schedule.Schedule": ("hooks.schedule", None),
    "engram_cli.api.results.SessionContext": ("recall.session_context", None),
}

# Names this package exports from its modules, imported on first use.
_LAZY = {"export": "json", "CARD_FOOTER": "recall", "CARD_HEADER": "recall", "cards": "recall"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


def renderer(where: str) -> Any:
    """The function ``"module.function"`` of a module under render/."""
    module, _, function = where.rpartition(".")
    return getattr(importlib.import_module(f"{__name__}.{module}"), function)


def result(value: Any, json: bool = False, **options: Any) -> None:
    """Show ``value``: its JSON form on stdout, or the text for a person; ``options`` go to the type's renderer.

    The options are the ones the result's type takes: recall's ``fmt``, ``explain`` and ``budget``,
    ingest's ``quiet`` and ``verbose``, eval's ``per_query``.
    """
    human, remarks = _shown(value)
    if remarks is not None:
        renderer(remarks)(value)
    if json:
        from engram_cli.render import json as json_output

        json_output.document(value, **options)
    else:
        renderer(human)(value, **options)


def _shown(value: Any) -> tuple[str, str | None]:
    for cls in type(value).__mro__:
        found = _SHOWN.get(f"{cls.__module__}.{cls.__qualname__}")
        if found is not None:
            return found
    raise TypeError(f"render has no way to show a {type(value).__module__}.{type(value).__qualname__}")


def error(exc: EngramError, json: bool = False) -> None:
    """``Error: …`` and ``Hint: …`` on stderr; with ``json``, also the error envelope on stdout."""
    from engram_cli.render import console
    from engram_cli.render import json as json_output

    console.error(exc)
    if json:
        json_output.error(type(exc).__name__, exc.message, exc.hint, exc.exit_code)


def error_document(kind: str, message: str, hint: str | None, exit_code: int) -> None:
    """The error envelope alone, for failures that are not engram's own errors (usage, interruption, a bug)."""
    from engram_cli.render import json as json_output

    json_output.error(kind, message, hint, exit_code)
