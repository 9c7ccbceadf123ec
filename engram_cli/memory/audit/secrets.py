"""The secrets check: credentials and personal numbers in any column that holds text, of any table.

:data:`SCANNED` lists the columns it reads and how, :data:`NOT_SCANNED` says why each other text
column cannot hold a secret, and :data:`INDEX_TABLES` why the index tables are not read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from engram_cli.lang import redact as redactmod
from engram_cli.memory import repair
from engram_cli.memory.audit.report import ERROR, Check, _Scope, excerpt
from engram_cli.memory.repair import JSON, TEXT, Work
from engram_cli.store.maintenance import Maintenance
from engram_cli.store.memories import MemoryRow

# -- where text is stored ------------------------------------------------------------------

# Every column that holds text, by table, and how the secrets check reads it. A migration that
# adds a table or a text column must add it here or to NOT_SCANNED: tests/test_audit.py reads the
# schema of a new database and fails on any text column found in neither.
SCANNED: dict[str, dict[str, str]] = {
    "memories": {"content": TEXT, "summary": TEXT, "metadata": JSON, "session_id": TEXT},
    "tags": {"tag": TEXT},
    "sources": {
        "kind": TEXT, "ref": TEXT, "message_id": TEXT, "session_id": TEXT, "content": TEXT, "metadata": JSON,
    },
    "events": {"actor": TEXT, "before": JSON, "after": JSON, "note": TEXT},
    "settings": {"value": TEXT},
    "ingest_sessions": {"session_key": TEXT, "path": TEXT, "digest": JSON},
    "ingest_cursors": {"path": TEXT, "last_id": TEXT, "state": JSON},
    "ingest_items": {"session_key": TEXT, "item_key": TEXT},
    "evidence": {"session_key": TEXT, "turn_key": TEXT, "content": TEXT},
}  # fmt: skip

_ID = "an id engram makes (a UUID)"
_TIME = "a timestamp engram writes"
_HASH = "a SHA-256 of the text, in hex"
_IMPORTER = "the name of an importer engram ships"
_SCOPE = (
    "a name that scopes memories (a project directory's name, or one the caller chose): vec0 partitions and "
    "filters on it, so rewriting it would move memories out of their scope"
)
_MODEL = "the name of a model directory engram loaded vectors from (embed/manifest refuses any other)"
NOT_SCANNED: dict[str, dict[str, str]] = {
    "memories": {
        "id": _ID, "superseded_by": _ID, "consolidated_into": _ID, "namespace": _SCOPE, "agent_id": _SCOPE,
        "memory_type": "one of four types (CHECK constraint)", "status": "one of three statuses (CHECK constraint)",
        "content_hash": _HASH, "embedding_model": _MODEL,
        "last_access_at": _TIME, "created_at": _TIME, "updated_at": _TIME, "learned_at": _TIME,
        "mkey": "a keyed fact's key: lower-case letters, digits and _.:/- only (memory.keys checks every write); "
        "it names what the fact is about, and rewriting it would change which fact `engram get` finds",
    },
    "sources": {"created_at": _TIME},
    "events": {"memory_id": _ID, "kind": "one of eleven kinds (CHECK constraint)", "at": _TIME},
    "settings": {"key": "a name engram's own code sets (active_model, reembed target, caches)"},
    "ingest_sessions": {"source": _IMPORTER, "namespace": _SCOPE, "updated_at": _TIME},
    "ingest_cursors": {"source": _IMPORTER, "last_at": _TIME, "updated_at": _TIME},
    "ingest_items": {"source": _IMPORTER, "memory_id": _ID, "content_hash": _HASH, "created_at": _TIME},
    "embedding_models": {
        "model_id": _MODEL, "vec_table": "derived from model_id (store.vectors.table_name)", "created_at": _TIME,
    },
    "schema_migrations": {"name": "the name of a migration engram ships", "applied_at": _TIME},
    "vector_changes": {"model_id": _MODEL},
    "vector_epoch": {"epoch": "random hex engram makes (names the database for the vector index)"},
    "memory_counts": {
        "namespace": "copies of memories.namespace (kept by triggers)", "status": "one of three statuses",
    },
    "evidence": {
        "namespace": _SCOPE, "source": _IMPORTER, "kind": "one of four kinds of turn (CHECK constraint)",
        "content_hash": _HASH, "embedding_model": _MODEL, "occurred_at": _TIME, "learned_at": _TIME,
    },
}  # fmt: skip

# Tables the secrets check does not read, and why. Vector tables (one per model, named in
# embedding_models) and their shadow tables are not text either: see :func:`index_table`.
INDEX_TABLES: dict[str, str] = {
    "memory_fts": "the keyword index of memories: terms analysed from the columns above, rebuilt from the "
    "redacted text and merged (``optimize``) so old segments go",
    "evidence_fts": "the keyword index of evidence: terms analysed from evidence.content, rebuilt from the redacted "
    "text and merged (``optimize``) so old segments go",
    "sqlite_sequence": "SQLite's own counters: table names and numbers",
}
VECTOR_TABLES = (
    "vectors, and copies of their memory's namespace, status, type and agent (or their evidence turn's "
    "namespace and kind) for recall's filters (see NOT_SCANNED for why those are not scanned)"
)


def index_table(name: str, vector_tables: Iterable[str]) -> str | None:
    """Why ``name`` is not read for secrets, if it is an index table or one of their shadow tables."""
    for base in INDEX_TABLES:
        if name == base or name.startswith(base + "_"):
            return INDEX_TABLES[base]
    for base in vector_tables:
        if name == base or name.startswith(base + "_"):
            return VECTOR_TABLES
    return None


# How the secrets check reads each table: the tables of a memory report per memory (its id),
# the others per row; ingest sessions carry their namespace, the rest belong to the whole file.
_MEMORY_TABLES = ("memories", "tags", "sources", "events")
_NAMESPACED = {"ingest_sessions", "evidence"}


# -- the check ------------------------------------------------------------------------------


def _may_hold(raw: Any, kind: str, contact: bool) -> bool:
    """False when the column value surely holds nothing to redact (most values), without decoding it.

    JSON written without escapes holds every key and string verbatim, and a string under a secret
    name is found by that name, which the screen knows as a label; with a backslash anywhere
    (``\\u5bc6``, ``:\\/\\/``) the text is not what the patterns read, so it is decoded and scanned.
    """
    if not raw:
        return False
    if not isinstance(raw, str):
        return True
    if kind == JSON and "\\" in raw:
        return True
    return redactmod.may_hold(raw, contact=contact)


def _may_hold_column(values: Sequence[Any], kind: str, contact: bool) -> list[bool]:
    """:func:`_may_hold` of each value of a column, the text screened in one batch."""
    verdicts = [bool(raw) and (not isinstance(raw, str) or (kind == JSON and "\\" in raw)) for raw in values]
    screened = [i for i, raw in enumerate(values) if raw and not verdicts[i]]
    texts = [values[i] for i in screened]
    for i in np.flatnonzero(redactmod.may_hold_many(texts, contact=contact)).tolist():
        verdicts[screened[i]] = True
    return verdicts


# How many rows the secrets check screens at once.
_BATCH = 4096


def _screened(
    rows: Sequence[Sequence[Any]], skip: int, kinds: Sequence[str], contact: bool
) -> Iterator[tuple[Sequence[Any], list[bool]]]:
    """The rows that hold any value worth scanning, in order, with :func:`_may_hold` of each value.

    A row's first ``skip`` values are its keys, the rest are of ``kinds``.
    """
    for first in range(0, len(rows), _BATCH):
        batch = rows[first : first + _BATCH]
        columns = [_may_hold_column([row[skip + c] for row in batch], kind, contact) for c, kind in enumerate(kinds)]
        for row, maybe in zip(batch, zip(*columns, strict=True), strict=True):
            if any(maybe):
                yield row, list(maybe)


def _secrets(
    text: Maintenance, rows: list[MemoryRow], scope: _Scope, limit: int, work: Work, contact: bool = False
) -> Check:
    """Secrets in every text column of every table, read through ``text`` (any connection to the file);
    the memories of ``rows`` name what is found in their tables."""
    # Found per memory id (the tombstones of purged memories included), or per row of a table that
    # belongs to no memory: the places, the table.column names, an excerpt.
    by_id = {r.id: r for r in rows}
    places: dict[tuple[str, str], set[str]] = defaultdict(set)
    columns: dict[tuple[str, str], set[str]] = defaultdict(set)
    excerpts: dict[tuple[str, str], str] = {}
    labels: dict[tuple[str, str], str] = {}
    kinds: Counter[str] = Counter()
    per_column: Counter[str] = Counter()

    def note(key: tuple[str, str], table: str, values: Sequence[Any], maybe: Sequence[bool]) -> bool:
        hit = False
        for (column, kind), raw, scan in zip(SCANNED[table].items(), values, maybe, strict=True):
            if not scan:
                continue
            redacted, found = repair.redact_value(raw, kind, contact=contact)
            if not found:
                continue
            hit = True
            kinds.update(found)
            per_column[f"{table}.{column}"] += 1
            columns[key].add(f"{table}.{column}")
            places[key].add(column if table == "memories" else table)
            if key not in excerpts and redacted:
                excerpts[key] = excerpt(redacted)
        return hit

    for table in _MEMORY_TABLES:
        column_kinds = list(SCANNED[table].values())
        if table == "events":
            events = text.event_text(list(SCANNED[table]), scope.namespaces)
            for (memory_id, event_pk, *values), maybe in _screened(events, 2, column_kinds, contact):
                if note(("memory", str(memory_id)), table, values, maybe):
                    work.secret_event_pks.append(int(event_pk))
            continue
        table_rows = text.memory_text(table, list(SCANNED[table]), scope.namespaces)
        for (memory_id, *values), maybe in _screened(table_rows, 1, column_kinds, contact):
            note(("memory", str(memory_id)), table, values, maybe)
    for table in SCANNED:
        if table in _MEMORY_TABLES:
            continue
        keys = text.key_columns(table)
        namespaces = scope.namespaces if table in _NAMESPACED else None
        table_rows = text.table_text(table, [*keys, *SCANNED[table]], namespaces)
        for (rowid, *values), maybe in _screened(table_rows, 1 + len(keys), list(SCANNED[table].values()), contact):
            key = (table, str(rowid))
            if note(key, table, values[len(keys) :], maybe):
                work.secret_rows.setdefault(table, []).append(int(rowid))
                labels[key] = " ".join(excerpt(str(v), 40) for v in values[: len(keys)])
    memory_keys = [k for k in places if k[0] == "memory"]
    work.secret_pks = sorted(by_id[m].pk for _, m in memory_keys if m in by_id and places[("memory", m)] - {"events"})
    memory_keys.sort(key=lambda k: (k[1] not in by_id, by_id[k[1]].pk if k[1] in by_id else 0, k[1]))
    row_keys = sorted((k for k in places if k[0] != "memory"), key=lambda k: (list(SCANNED).index(k[0]), int(k[1])))
    examples: list[dict[str, Any]] = []
    for key in [*memory_keys, *row_keys][:limit]:
        found_in = sorted(columns[key])
        if key[0] == "memory":
            m = key[1]
            examples.append(
                {
                    "id": m[:8],
                    "where": sorted(places[key]),
                    "columns": found_in,
                    # The memory's own text (redacted) says which memory it is, wherever the secret sits.
                    "text": excerpt(by_id[m].content) if m in by_id else excerpts.get(key, ""),
                    "purged": m not in by_id,
                }
            )
        else:
            examples.append({"table": key[0], "row": labels[key], "columns": found_in, "text": excerpts[key]})
    categories = Counter(redactmod.category(kind) for kind in kinds.elements())
    return Check(
        "secrets",
        "secrets and personal data stored in any table",
        ERROR,
        count=len(places),
        examples=examples,
        details={
            "kinds": dict(sorted(kinds.items())),
            "categories": dict(sorted(categories.items())),
            "columns": dict(sorted(per_column.items())),
        },
        hint="`engram audit --fix` redacts them in place, history included",
    )
