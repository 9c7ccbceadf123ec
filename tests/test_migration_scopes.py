"""Migration 3 on a database of the old schema: `default` becomes global, each row learns when it was learned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_cli import Engram
from engram_cli.embed import load_embedder
from engram_cli.lang import text as textmod
from engram_cli.store import connect
from engram_cli.store.migrations import MIGRATIONS, Migration
from engram_cli.store.vectors import table_name

MODEL = "multilingual-e5-small-q4-v1"
TABLE = table_name(MODEL)
OLD = [m for m in MIGRATIONS if m.id <= 2]

# (id, namespace, content, created_at, first `created` event's time or None, access_count, tags)
ROWS = [
    ("00000000-0000-4000-8000-000000000001", "default", "Answer in British English",
     "2024-03-01T09:00:00.000000Z", "2026-11-20T08:00:00.000000Z", 2, ["style"]),
    ("00000000-0000-4000-8000-000000000002", "default", "The office printer is on floor two",
     "2025-05-05T10:00:00.000000Z", None, 0, []),
    # Already in the global scope with the same words: the `default` copy is folded into it.
    ("00000000-0000-4000-8000-000000000003", "global", "Always use uv for Python projects",
     "2025-01-01T00:00:00.000000Z", "2025-01-01T00:00:00.000000Z", 1, ["python"]),
    ("00000000-0000-4000-8000-000000000004", "default", "always use UV for python projects",
     "2025-02-02T00:00:00.000000Z", "2025-02-02T00:00:00.000000Z", 3, ["tools"]),
    ("00000000-0000-4000-8000-000000000005", "webshop", "Deploys go through make release",
     "2024-06-01T12:00:00.000000Z", "2026-11-21T12:00:00.000000Z", 0, []),
]  # fmt: skip
FOLDED, SURVIVOR = ROWS[3][0], ROWS[2][0]
SUPERSEDED = "Use pip for Python projects"


def _old_database(path: Path) -> None:
    """A database as engram wrote it before scopes: schema 2, rows, vectors, keyword rows, ingest state."""
    texts = [r[2] for r in ROWS] + [SUPERSEDED]
    vectors = np.asarray(load_embedder(MODEL).embed_batch(texts, kind="passage"), dtype=np.float32)
    store = connect(path, migrations=OLD)
    try:
        with store.write():
            store.execute(
                "INSERT INTO embedding_models (model_id, dim, vec_table, created_at) VALUES (?, ?, ?, ?)",
                (MODEL, vectors.shape[1], TABLE, "2024-01-01T00:00:00.000000Z"),
            )
            store.execute(
                f"CREATE VIRTUAL TABLE {TABLE} USING vec0(memory_pk INTEGER PRIMARY KEY, "
                f"embedding float[{vectors.shape[1]}] distance_metric=cosine, namespace TEXT PARTITION KEY, "
                "status TEXT, memory_type TEXT, agent_id TEXT)"
            )
            store.execute("INSERT INTO settings (key, value) VALUES ('active_model', ?)", (MODEL,))
            for pk, (memory_id, namespace, content, created, event_at, accessed, tags) in enumerate(ROWS, start=1):
                store.execute(
                    "INSERT INTO memories (pk, id, namespace, agent_id, memory_type, content, content_hash, "
                    "embedding_model, importance, access_count, last_access_at, created_at, updated_at, metadata) "
                    "VALUES (?, ?, ?, 'user', 'semantic', ?, ?, ?, 0.5, ?, ?, ?, ?, ?)",
                    (
                        pk, memory_id, namespace, content, textmod.content_hash(content), MODEL, accessed,
                        created if accessed else None, created, created, json.dumps({"row": pk}),
                    ),
                )  # fmt: skip
                store.execute(
                    f"INSERT INTO {TABLE} (memory_pk, embedding, namespace, status, memory_type, agent_id) "
                    "VALUES (?, ?, ?, 'active', 'semantic', 'user')",
                    (pk, vectors[pk - 1].tobytes(), namespace),
                )
                store.execute(
                    "INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)",
                    (pk, textmod.index_text(content, "", " ".join(tags))),
                )
                for tag in tags:
                    store.execute("INSERT INTO tags (memory_pk, tag) VALUES (?, ?)", (pk, tag))
                store.execute("INSERT INTO sources (memory_pk, kind, created_at) VALUES (?, 'cli', ?)", (pk, created))
                if event_at:
                    store.execute(
                        "INSERT INTO events (memory_id, kind, at, actor) VALUES (?, 'created', ?, 'cli')",
                        (memory_id, event_at),
                    )
            # Superseded by the memory that is folded: the link must follow it to the survivor.
            store.execute(
                "INSERT INTO memories (pk, id, namespace, agent_id, memory_type, content, content_hash, importance, "
                "embedding_model, created_at, updated_at, superseded_by, status) VALUES (6, ?, 'default', 'user', "
                "'semantic', ?, ?, 0.25, ?, ?, ?, ?, 'superseded')",
                ("00000000-0000-4000-8000-000000000006", SUPERSEDED, textmod.content_hash(SUPERSEDED), MODEL,
                 "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:00.000000Z", FOLDED),
            )  # fmt: skip
            store.execute(
                f"INSERT INTO {TABLE} (memory_pk, embedding, namespace, status, memory_type, agent_id) "
                "VALUES (6, ?, 'default', 'superseded', 'semantic', 'user')",
                (vectors[5].tobytes(),),
            )
            store.execute("INSERT INTO memory_fts (rowid, terms) VALUES (6, ?)", (textmod.index_text(SUPERSEDED),))
            store.execute(
                "INSERT INTO ingest_sessions (source, session_key, path, namespace, updated_at) "
                "VALUES ('claude-code', 's1', '/logs/s1.jsonl', 'default', '2024-03-01T09:00:00.000000Z')"
            )
            store.execute(
                "INSERT INTO ingest_items (source, session_key, item_key, memory_id, content_hash, created_at) "
                "VALUES ('claude-code', 's1', 'pref:1', ?, 'h', '2024-03-01T09:00:00.000000Z')",
                (FOLDED,),
            )
    finally:
        store.close()


@pytest.fixture
def migrated(db_path: Path) -> Path:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    _old_database(db_path)
    connect(db_path).close()  # opening it applies migration 3
    return db_path


def test_default_memories_become_global_with_their_vectors(migrated: Path, rows: Any) -> None:
    assert rows("SELECT id, name FROM schema_migrations WHERE id = 3") == [(3, "scopes and learned time")]
    assert rows("SELECT pk, namespace FROM memories ORDER BY pk") == [
        (1, "global"), (2, "global"), (3, "global"), (5, "webshop"), (6, "global"),
    ]  # fmt: skip
    # The vector's partition moved too: recall's nearest-neighbour search filters by it.
    assert rows(f"SELECT memory_pk, namespace, status FROM {TABLE} ORDER BY memory_pk") == [
        (1, "global", "active"), (2, "global", "active"), (3, "global", "active"), (5, "webshop", "active"),
        (6, "global", "superseded"),
    ]  # fmt: skip
    assert rows("SELECT namespace FROM ingest_sessions") == [("global",)]
    moved = rows("SELECT kind, actor, before, after FROM events WHERE memory_id = ? ORDER BY pk", (ROWS[0][0],))
    assert moved[-1] == ("updated", "migration", '{"namespace": "default"}', '{"namespace": "global"}')
    assert rows("SELECT version FROM memories WHERE pk = 1") == [(2,)]  # an import of an older export loses


def test_learned_at_is_the_first_created_event_else_created_at(migrated: Path, rows: Any) -> None:
    learned = dict(rows("SELECT pk, learned_at FROM memories"))
    assert learned[1] == "2026-11-20T08:00:00.000000Z"  # ingested in November, said in March 2024
    assert learned[2] == "2025-05-05T10:00:00.000000Z"  # no event: its creation time
    assert learned[5] == "2026-11-21T12:00:00.000000Z"
    assert learned[3] == "2025-01-01T00:00:00.000000Z"  # the fold keeps the earlier of the two


def test_a_default_memory_already_in_global_is_folded_into_it(migrated: Path, rows: Any) -> None:
    assert rows("SELECT count(*) FROM memories WHERE id = ?", (FOLDED,)) == [(0,)]
    (survivor,) = rows("SELECT access_count, metadata, version FROM memories WHERE id = ?", (SURVIVOR,))
    assert survivor[0] == 4 and json.loads(survivor[1]) == {"row": 3} and survivor[2] == 2
    assert rows("SELECT tag FROM tags WHERE memory_pk = 3 ORDER BY tag") == [("python",), ("tools",)]
    # Its sources moved over, the one that stood for its own words now holds them.
    assert rows("SELECT content FROM sources WHERE memory_pk = 3 ORDER BY pk") == [
        (None,), ("always use UV for python projects",),
    ]  # fmt: skip
    assert rows("SELECT superseded_by FROM memories WHERE pk = 6") == [(SURVIVOR,)]
    assert rows("SELECT memory_id FROM ingest_items") == [(SURVIVOR,)]
    assert rows(f"SELECT count(*) FROM {TABLE} WHERE memory_pk = 4") == [(0,)]
    assert rows("SELECT count(*) FROM memory_fts_docsize WHERE id = 4") == [(0,)]
    merged = rows("SELECT kind, note FROM events WHERE memory_id = ? ORDER BY pk", (SURVIVOR,))[-1]
    assert merged[0] == "merged" and FOLDED[:8] in merged[1]
    deleted = rows("SELECT kind, note FROM events WHERE memory_id = ? ORDER BY pk", (FOLDED,))[-1]
    assert deleted == ("deleted", f"merged into {SURVIVOR}: the default namespace became the global scope")


def test_the_migrated_store_is_healthy_and_recalls_by_scope(migrated: Path, tmp_path: Path) -> None:
    with Engram.open(cwd=tmp_path) as mem:
        report = mem.audit(quick=True)
        problems = {c.name: c.count for c in report.checks if c.severity in ("error", "warning") and c.count}
        assert problems == {}
        hits = mem.recall("which spelling should answers use", k=2, bump=False)
        assert hits[0].memory.id == ROWS[0][0] and hits[0].scope == "global"
        # The tag the folded memory brought is in the survivor's keyword row.
        assert [h.memory.id for h in mem.recall("tools", k=1, tags=["tools"], bump=False)] == [SURVIVOR]
        memory = mem.get(ROWS[0][0])
        assert memory.occurred_at == "2024-03-01T09:00:00.000000Z"
        assert memory.learned_at == "2026-11-20T08:00:00.000000Z"


def _old_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    store = connect(path, migrations=OLD)  # read without migrating
    try:
        return [tuple(r) for r in store.rows(sql)]
    finally:
        store.close()


def test_a_failing_migration_leaves_the_old_database_as_it_was(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    _old_database(db_path)
    query = "SELECT pk, namespace, version FROM memories ORDER BY pk"
    before = _old_rows(db_path, query)
    assert ("default",) in {(r[1],) for r in before}

    def broken(conn: Any) -> None:
        MIGRATIONS[2].apply(conn)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        connect(db_path, migrations=[*OLD, Migration(3, "scopes and learned time", broken)]).close()
    assert _old_rows(db_path, query) == before
    assert "learned_at" not in {r[1] for r in _old_rows(db_path, "PRAGMA table_info(memories)")}
    assert _old_rows(db_path, "SELECT max(id) FROM schema_migrations") == [(2,)]
