"""Migration 4 (keyed facts and edits) on a database written by the schema before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest

from engram_cli import Engram
from engram_cli.store.db import connect
from engram_cli.store.migrations import MIGRATIONS

SCHEMA_2 = [m for m in MIGRATIONS if m.id <= 2]

EVENTS = [
    (1, "created", "2025-01-02T03:04:05Z", "cli", None, '{"importance":0.5}', None),
    (2, "accessed", "2025-01-03T00:00:00Z", "recall", '{"access_count":0}', '{"access_count":1}', "bumped"),
    (3, "updated", "2025-01-04T00:00:00Z", "remember", '{"content":"CI uses Node 18"}', None, "新的措辞"),
]


def _schema_2_database(path: Path) -> str:
    """A database at schema 2 holding one memory with a history of three events; returns its id."""
    memory_id = "0b6f2c9e-8d1a-4c3b-9e7f-5a4d3c2b1a09"
    store = connect(path, create_dirs=True, migrations=SCHEMA_2)
    try:
        with store.write():
            store.execute(
                "INSERT INTO memories (id, namespace, agent_id, memory_type, content, content_hash, importance, "
                "created_at, updated_at) VALUES (?, 'webshop', 'user', 'semantic', 'CI uses Node 20', 'h1', 0.5, "
                "'2025-01-02T03:04:05Z', '2025-01-04T00:00:00Z')",
                (memory_id,),
            )
            for pk, kind, at, actor, before, after, note in EVENTS:
                store.execute(
                    "INSERT INTO events (pk, memory_id, kind, at, actor, before, after, note) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (pk, memory_id, kind, at, actor, before, after, note),
                )
    finally:
        store.close()
    return memory_id


def _query(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(path))
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_migration_4_keeps_every_event_and_allows_edited(db_path: Path) -> None:
    memory_id = _schema_2_database(db_path)
    with Engram.open(db_path) as mem:
        applied = _query(db_path, "SELECT id FROM schema_migrations ORDER BY id")
        assert (4,) in applied
        assert _query(db_path, "SELECT pk, kind, at, actor, before, after, note FROM events ORDER BY pk") == [
            (pk, kind, at, actor, before, after, note) for pk, kind, at, actor, before, after, note in EVENTS
        ]
        result = mem.edit(memory_id, importance=0.9)
        assert result.memory.version == 2
        _, events = mem.history(memory_id)
        assert [e.kind for e in events] == ["created", "accessed", "updated", "edited"]
        assert (events[-1].before, events[-1].after) == ({"importance": 0.5}, {"importance": 0.9})
    indexes = {name for (name,) in _query(db_path, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"events_by_memory", "events_deleted", "memories_key"} <= indexes
    assert not {"events_by_time", "events_by_kind"} & indexes  # dropped by migration 7


def test_after_migration_4_a_namespace_holds_one_active_memory_per_key(db_path: Path) -> None:
    _schema_2_database(db_path)
    Engram.open(db_path).close()
    insert = (
        "INSERT INTO memories (id, namespace, agent_id, memory_type, content, content_hash, importance, created_at, "
        "updated_at, status, mkey) VALUES (?, 'global', 'user', 'semantic', ?, ?, 0.8, 't', 't', ?, 'user:tz')"
    )
    conn = apsw.Connection(str(db_path))
    try:
        conn.execute(insert, ("a", "Europe/Berlin", "h2", "active"))
        conn.execute(insert, ("b", "Europe/Paris", "h3", "archived"))  # an unset one may stay beside it
        with pytest.raises(apsw.ConstraintError):
            conn.execute(insert, ("c", "Asia/Tokyo", "h4", "active"))
        # Two keys may hold one value: only unkeyed memories are identified by their text.
        conn.execute(insert.replace("'user:tz'", "'team:tz'"), ("d", "Europe/Berlin", "h2", "active"))
        assert conn.execute("SELECT count(*) FROM memories").fetchall() == [(4,)]
    finally:
        conn.close()
