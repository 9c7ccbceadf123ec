"""audit: how healthy the store is. The repairs ``fix`` makes live in :mod:`engram_cli.memory.repair`.

Checks, by severity (``error`` and ``warning`` are problems; ``info`` lists memories to review):

- integrity (error): ``PRAGMA integrity_check`` (``quick_check`` when quick) and ``foreign_key_check``.
- secrets (error): credentials or personal numbers (see :mod:`engram_cli.lang.redact`) in any column that
  holds text, of any table: :data:`SCANNED` lists them, :data:`NOT_SCANNED` says why each other text
  column cannot hold one, :data:`INDEX_TABLES` why the index tables are not read.
- missing_index (error): a memory without a vector in its model's table, without a keyword row, or whose
  vector row carries outdated filter columns (namespace, status, type, agent), which recall filters on.
- orphan_index (error): vector or keyword rows whose memory is gone, or vectors left in another model's table.
- vector_index (error): a vector index file (the cache KNN searches) that does not hold what the vec0 table holds.
- counts (error): the memory counts by namespace and status, kept by triggers, that differ from the memories.
- other_model (warning): memories whose vector comes from another model than the active one, or than the
  target of an unfinished reembed: the migration's progress.
- near_duplicates (warning): active pairs of one namespace, agent and model that remember would have merged:
  the same words, or a cosine at the model's merge threshold with no lexical blocker.
- conflicts (warning): active, similar pairs (cosine at the supersede similarity) about the same thing that
  disagree: opposite polarity, or a correction that never replaced what it corrects.
- stale, low_confidence, never_accessed (info).

Similar pairs come from tiled matrix products over the vectors of each namespace and model,
never from one KNN query per memory. Integrity, orphans, the vector index files, the counts and
the secrets of tables that belong to no namespace (settings, ingest cursors and items) concern the
whole file whatever the namespaces; everything else is limited to them.

One module per family of checks: :mod:`.integrity`, :mod:`.secrets` (with the tables of what it
reads and why the rest is not read), :mod:`.index` (missing and orphan index rows, other models),
:mod:`.pairs` (near-duplicates and conflicts), :mod:`.review` (stale, low confidence, never
accessed); :mod:`.report` holds the check, the report and the settings. The scan and :func:`run`
are below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from engram_cli.errors import DatabaseDamaged, InvalidInput
from engram_cli.memory import repair
from engram_cli.memory.audit.beside import Beside
from engram_cli.memory.audit.index import _index, _other_model
from engram_cli.memory.audit.integrity import _integrity, _unreadable
from engram_cli.memory.audit.pairs import MAX_PAIRS, SIGNATURE_BYTES, _pair_checks
from engram_cli.memory.audit.pairs import _Signals as _Signals  # tests check its screen against the exact overlap
from engram_cli.memory.audit.report import (
    ERROR,
    EXCERPT,
    INFO,
    WARNING,
    AuditReport,
    AuditSettings,
    Check,
    _Scope,
    excerpt,
)
from engram_cli.memory.audit.review import _age_checks
from engram_cli.memory.audit.secrets import INDEX_TABLES, NOT_SCANNED, SCANNED, VECTOR_TABLES, _secrets, index_table
from engram_cli.memory.audit.vector_cache import _counts, _vector_index
from engram_cli.memory.model import Filters
from engram_cli.memory.reembed import TARGET_MODEL_KEY
from engram_cli.memory.repair import Action, Repairs, Work
from engram_cli.store.database import Database
from engram_cli.store.db import Store
from engram_cli.store.maintenance import Maintenance
from engram_cli.store.memories import MemoryRow
from engram_cli.timeutil import now as utcnow
from engram_cli.timeutil import to_iso

__all__ = [
    "ERROR",
    "EXCERPT",
    "INDEX_TABLES",
    "INFO",
    "MAX_PAIRS",
    "NOT_SCANNED",
    "SCANNED",
    "SIGNATURE_BYTES",
    "VECTOR_TABLES",
    "WARNING",
    "AuditReport",
    "AuditSettings",
    "Check",
    "excerpt",
    "index_table",
    "run",
]


# -- reading the store once -------------------------------------------------------------------


@dataclass
class _Scan:
    checks: dict[str, Check]
    work: Work  # what --fix may repair
    damage: DatabaseDamaged | None = None


def _scan(store: Store, settings: AuditSettings, scope: _Scope, moment: datetime) -> _Scan:
    work = Work()
    n = settings.examples
    quick, contact = settings.quick, settings.contact

    def integrity(db: Database) -> tuple[Check, DatabaseDamaged | None]:
        return _integrity(Maintenance(db), store.path, quick, n)

    def secrets(db: Database, rows: list[MemoryRow]) -> tuple[Check, Work]:
        # What it finds to repair goes to a Work of its own, so that a run that failed half way leaves nothing.
        found = Work()
        return _secrets(Maintenance(db), rows, scope, n, found, contact), found

    # The integrity check (SQLite reading every page) and the secrets check (every text column) run in
    # threads of their own, each on a second connection, while this one runs the other checks.
    integrity_beside = Beside(store.path, integrity, "integrity check")
    secrets_beside: Beside[tuple[Check, Work]] | None = None
    with store.read():
        try:
            rows = store.memories.scan(Filters(namespaces=scope.namespaces, statuses=[]))
            secrets_beside = Beside(store.path, lambda db: secrets(db, rows), "secrets check")
            checks = list(_index(store, rows, n, work))
            checks.append(_vector_index(store, n, work))
            checks.append(_counts(store, n, work))
            checks.append(_other_model(rows, settings.active_model, store.setting(TARGET_MODEL_KEY)))
            checks.extend(_pair_checks(store, rows, settings, work))
            checks.extend(_age_checks(rows, settings, moment))
            secrets_check, in_secrets = secrets_beside.result() or secrets(store, rows)
            work.secret_pks, work.secret_event_pks, work.secret_rows = (
                in_secrets.secret_pks, in_secrets.secret_event_pks, in_secrets.secret_rows,
            )  # fmt: skip
        except DatabaseDamaged as exc:
            if secrets_beside is not None:
                secrets_beside.stop()
            integrity_check, _ = integrity_beside.result() or integrity(store)
            _unreadable(integrity_check, exc)
            return _Scan({integrity_check.name: integrity_check}, Work(), exc)
        except BaseException:
            for beside in (integrity_beside, secrets_beside):
                if beside is not None:
                    beside.stop()
            raise
        integrity_check, damage = integrity_beside.result() or integrity(store)
    return _Scan({c.name: c for c in [integrity_check, secrets_check, *checks]}, work, damage)


def run(
    store: Store,
    settings: AuditSettings,
    *,
    namespaces: Sequence[str] | None = None,
    at: datetime | None = None,
    fix: bool = False,
    repairs: Repairs | None = None,
) -> AuditReport:
    """Check the store (the given namespaces, or all); with ``fix``, repair what is safe and check again."""
    if settings.examples < 0:
        raise InvalidInput(f"audit.examples must be 0 or more, not {settings.examples}")
    moment = at or utcnow()
    scope = _Scope(None if namespaces is None else list(namespaces))
    scan = _scan(store, settings, scope, moment)
    actions: list[Action] = []
    if fix and scan.damage is not None:
        # Every repair writes; writing into a damaged file can spread the damage to pages that still read.
        scan.checks["integrity"].examples.append({"detail": "--fix repaired nothing: the file is damaged"})
    elif fix:
        if repairs is None:
            raise InvalidInput("fixing needs the embedding models and the decay settings: pass repairs")
        actions, fixed = repair.run(
            store, scan.work, repairs, active_model=settings.active_model, at=to_iso(moment), columns=SCANNED,
            contact=settings.contact,
        )  # fmt: skip
        before = scan.checks
        scan = _scan(store, settings, scope, moment)
        for name, check in scan.checks.items():
            check.found = before[name].count
            check.fixed = fixed.get(name, 0)
    return AuditReport(
        database=str(store.path),
        now=to_iso(moment),
        namespaces=scope.namespaces,
        fix=fix,
        quick=settings.quick,
        checks=list(scan.checks.values()),
        actions=actions,
        damage=scan.damage,
    )
