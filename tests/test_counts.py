"""The memory counts by namespace and status: kept by triggers through every kind of write, answered by
`list` and `namespaces` without reading the memories, checked and recounted by audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from engram_cli import Engram
from engram_cli.memory.model import Filters
from engram_cli.store import connect


def _held(store: Any) -> dict[tuple[str, str], int]:
    rows = store.rows("SELECT namespace, status, count(*) FROM memories GROUP BY 1, 2")
    return {(str(ns), str(status)): int(n) for ns, status, n in rows}


def _agrees(store: Any) -> None:
    assert store.memories.miscounted() == []
    held = _held(store)
    namespaces = sorted({ns for ns, _ in held})
    for chosen in ([], namespaces[:1], namespaces):
        for statuses in ([], ["active"], ["archived", "superseded"]):
            filters = Filters(namespaces=chosen or None, statuses=statuses)
            expected = sum(n for (ns, st), n in held.items() if (not chosen or ns in chosen)
                           and (not statuses or st in statuses))  # fmt: skip
            assert store.memories.count(filters) == expected, filters
    assert store.memories.count() == sum(held.values())
    shown = {(ns, st): n for ns, by in store.memories.namespaces().items() for st, n in by.items()}
    assert shown == {key: n for key, n in held.items() if n}


def test_every_kind_of_write_keeps_the_counts(engram: Engram) -> None:
    store = engram.store
    first = engram.add("The staging database listens on port 5433", namespace="ops").memory
    engram.add("The staging database listens on port 5433", namespace="ops")  # merged: no new row
    engram.add("Releases are cut from the main branch every Tuesday", namespace="web")
    engram.add("Use pnpm, not npm, in the web workspace", namespace="web")
    engram.add("From now on the staging database listens on port 6543 instead of 5433", namespace="ops")
    _agrees(store)
    engram.forget(first.id, namespace="ops")  # archived
    _agrees(store)
    other = engram.add("Deploy previews expire after seven days", namespace="web").memory
    engram.forget(other.id, hard=True, namespace="web")  # purged: the row is deleted
    _agrees(store)
    with store.write():  # a namespace and a status changed together, by hand
        store.execute("UPDATE memories SET namespace = 'moved', status = 'archived' WHERE namespace = 'web'")
    _agrees(store)
    filters = Filters(namespaces=["ops"], types=["semantic"])  # a filter the counts do not hold: rows counted
    assert store.memories.count(filters) == store.scalar(
        "SELECT count(*) FROM memories WHERE namespace = 'ops' AND memory_type = 'semantic' AND status = 'active'"
    )


def test_a_database_from_before_the_counts_gets_them_on_opening(engram_home: Path) -> None:
    with Engram.open() as mem:
        for text, ns in [("Port 5433 is staging", "a"), ("Port 5432 is production", "a"), ("Use ruff", "b")]:
            mem.add(text, namespace=ns)
        path = mem.store.path
    # Back to schema 8: no counts table, no triggers, migration 9 not applied.
    conn = apsw.Connection(str(path))
    try:
        with conn:
            for name in ("memory_counts_insert", "memory_counts_delete", "memory_counts_update"):
                conn.execute(f"DROP TRIGGER {name}")
            conn.execute("DROP TABLE memory_counts")
            conn.execute("DELETE FROM schema_migrations WHERE id = 9")
            conn.execute("UPDATE memories SET status = 'archived' WHERE content = 'Use ruff'")
    finally:
        conn.close()
    store = connect(path)
    try:
        assert store.memories.namespaces() == {"a": {"active": 2}, "b": {"archived": 1}}
        _agrees(store)
    finally:
        store.close()


def test_audit_finds_counts_that_differ_and_fix_counts_again(engram: Engram) -> None:
    engram.add("The build cache lives in ~/.cache/bazel", namespace="ops")
    engram.add("The nightly job rotates the logs at 02:00", namespace="ops")
    assert engram.audit().check("counts").count == 0
    with engram.store.write():
        engram.store.execute("UPDATE memory_counts SET n = n + 3 WHERE namespace = 'ops'")
        engram.store.execute("INSERT INTO memory_counts (namespace, status, n) VALUES ('ghost', 'active', 2)")
    report = engram.audit()
    check = report.check("counts")
    assert check.count == 2 and {e["namespace"] for e in check.examples} == {"ops", "ghost"}
    assert engram.store.memories.count(Filters(namespaces=["ops"])) == 5  # what list would have said
    fixed = engram.audit(fix=True)
    assert fixed.check("counts").count == 0 and fixed.check("counts").fixed == 2
    _agrees(engram.store)
