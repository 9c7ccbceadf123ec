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

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engram_cli.render import audit, console, evaluation, hooks, ingest, keys, maintenance, memories, recall, system
from engram_cli.render import json as json_output
from engram_cli.render.console import (
    config_warnings,
    internal_error,
    interrupted,
    note,
    out,
    progress,
    warning,
)
from engram_cli.render.json import export
from engram_cli.render.recall import CARD_FOOTER, CARD_HEADER, cards

if TYPE_CHECKING:
    from engram_cli.errors import EngramError

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


@dataclass(frozen=True)
class _Shown:
    human: Callable[..., None]  # the text for a person
    remarks: Callable[[Any], None] | None = None  # said on stderr whether or not the result is JSON


# Result types by module and class name, so that dispatching imports no engine module (numpy,
# SQLite) for commands that never open a store; tests/test_render.py checks that each name exists.
_SHOWN: dict[str, _Shown] = {
    "engram_cli.memory.model.AddResult": _Shown(memories.added),
    "engram_cli.memory.edit.EditResult": _Shown(memories.edited),
    "engram_cli.memory.keys.KeyValue": _Shown(keys.value),
    "engram_cli.memory.keys.KeyListing": _Shown(keys.listing),
    "engram_cli.memory.keys.KeyUnset": _Shown(keys.unset),
    "engram_cli.api.results.Recalled": _Shown(recall.recalled, remarks=recall.read_only),
    "engram_cli.api.results.Page": _Shown(memories.page, remarks=memories.more),
    "engram_cli.api.results.Inspection": _Shown(memories.inspection),
    "engram_cli.api.results.NamespaceListing": _Shown(memories.namespace_list),
    "engram_cli.api.results.History": _Shown(memories.history),
    "engram_cli.api.results.Forgotten": _Shown(memories.forgotten),
    "engram_cli.api.results.Touched": _Shown(memories.touched),
    "engram_cli.memory.transfer.ImportReport": _Shown(memories.imported),
    "engram_cli.memory.decay.DecayReport": _Shown(maintenance.decay),
    "engram_cli.memory.compact.CompactReport": _Shown(maintenance.compact),
    "engram_cli.memory.reembed.ReembedReport": _Shown(maintenance.reembed),
    "engram_cli.memory.recover.RecoverReport": _Shown(maintenance.recover),
    "engram_cli.memory.audit.report.AuditReport": _Shown(audit.audit),
    "engram_cli.ingest.report.IngestReport": _Shown(ingest.ingested),
    "engram_cli.api.results.SourceListing": _Shown(ingest.sources),
    "engram_cli.api.results.EvalRun": _Shown(evaluation.evaluated),
    "engram_cli.memory.harvest_eval.HarvestReport": _Shown(evaluation.harvested),
    "engram_cli.doctor.ModelListing": _Shown(system.models),
    "engram_cli.doctor.DoctorReport": _Shown(system.doctor),
    "engram_cli.api.results.ConfigListing": _Shown(system.settings),
    "engram_cli.api.results.ConfigChange": _Shown(system.setting_changed),
    "pathlib.PurePath": _Shown(system.path),
    "engram_cli.integrations.git.GitHookChange": _Shown(hooks.git_hook),
    "engram_cli.integrations.assistants.SettingsChange": _Shown(hooks.settings),
    "engram_cli.integrations.schedule.Schedule": _Shown(hooks.schedule),
    "engram_cli.api.results.SessionContext": _Shown(recall.session_context),
}


def result(value: Any, json: bool = False, **options: Any) -> None:
    """Show ``value``: its JSON form on stdout, or the text for a person; ``options`` go to the type's renderer.

    The options are the ones the result's type takes: recall's ``fmt``, ``explain`` and ``budget``,
    ingest's ``quiet`` and ``verbose``, eval's ``per_query``.
    """
    shown = _shown(value)
    if shown.remarks is not None:
        shown.remarks(value)
    if json:
        json_output.document(value, **options)
    else:
        shown.human(value, **options)


def _shown(value: Any) -> _Shown:
    for cls in type(value).__mro__:
        found = _SHOWN.get(f"{cls.__module__}.{cls.__qualname__}")
        if found is not None:
            return found
    raise TypeError(f"render has no way to show a {type(value).__module__}.{type(value).__qualname__}")


def error(exc: EngramError, json: bool = False) -> None:
    """``Error: …`` and ``Hint: …`` on stderr; with ``json``, also the error envelope on stdout."""
    console.error(exc)
    if json:
        json_output.error(type(exc).__name__, exc.message, exc.hint, exc.exit_code)


def error_document(kind: str, message: str, hint: str | None, exit_code: int) -> None:
    """The error envelope alone, for failures that are not engram's own errors (usage, interruption, a bug)."""
    json_output.error(kind, message, hint, exit_code)
