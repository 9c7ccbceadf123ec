"""SQL pieces every repository uses: placeholder lists, IN-list chunks, Filters as a WHERE clause, and which
memories pass them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from engram_cli.memory.model import Filters

if TYPE_CHECKING:
    from engram_cli.store.database import Database

CHUNK = 500  # values per IN (...) list


def marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def chunks(values: Sequence[Any], size: int = CHUNK) -> Iterable[list[Any]]:
    """Big IN (...) lists in pieces SQLite accepts."""
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def where(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """``filters`` as a WHERE clause (without the keyword) over memories aliased as ``alias``, and its parameters."""
    a = alias
    clauses: list[str] = []
    params: list[Any] = []

    def any_of(column: str, values: Sequence[str]) -> None:
        clauses.append(f"{a}.{column} IN ({marks(values)})")
        params.extend(values)

    if filters.namespaces is not None:
        any_of("namespace", filters.namespaces)
    if filters.agent is not None:
        clauses.append(f"{a}.agent_id = ?")
        params.append(filters.agent)
    if filters.types:
        any_of("memory_type", filters.types)
    if filters.statuses:
        any_of("status", filters.statuses)
    for tag in filters.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.memory_pk = {a}.pk AND t.tag = ?)")
        params.append(tag)
    last = f"coalesce({a}.last_access_at, {a}.created_at)"
    for column, op, value in (
        (f"{a}.created_at", ">=", filters.since),
        (f"{a}.created_at", "<=", filters.until),
        (last, ">=", filters.accessed_since),
        (last, "<=", filters.accessed_until),
    ):
        if value is not None:
            clauses.append(f"{column} {op} ?")
            params.append(value)
    if filters.embedding_model is not None:
        clauses.append(f"{a}.embedding_model = ?")
        params.append(filters.embedding_model)
    if filters.session is not None:
        clauses.append(f"{a}.session_id = ?")
        params.append(filters.session)
    return (" AND ".join(clauses) or "1"), params


def passing(db: Database, pks: Sequence[int], filters: Filters) -> set[int]:
    """Which of the memories ``pks`` pass ``filters``."""
    if not pks:
        return set()
    clause, params = where(filters)
    # CROSS JOIN keeps SQLite on the given pks: left to itself it walks the scope index of the whole
    # namespace (tens of thousands of rows) to check a few hundred.
    rows = db.rows(
        f"SELECT m.pk FROM json_each(?) j CROSS JOIN memories m ON m.pk = j.value WHERE {clause}",
        [json.dumps([int(pk) for pk in pks]), *params],
    )
    return {int(r[0]) for r in rows}
