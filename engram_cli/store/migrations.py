"""Schema migrations, in order. A shipped migration is never edited: add a new one.

Each migration runs in one transaction together with the row that records it, so a
failure leaves the database exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from engram_cli.lang import text as textmod
from engram_cli.timeutil import iso_now

# Where each applied migration is recorded (id, name, when).
MIGRATIONS_TABLE = "schema_migrations"


@dataclass(frozen=True)
class Migration:
    id: int
    name: str
    apply: Callable[[apsw.Connection], None]


def _m0001_initial(conn: apsw.Connection) -> None:
    # memories.pk is an explicit INTEGER PRIMARY KEY because the vector and keyword
    # indexes key on it; an implicit rowid could be renumbered by VACUUM.
    conn.execute(
        """
        CREATE TABLE memories (
            pk              INTEGER PRIMARY KEY,
            id              TEXT NOT NULL UNIQUE,
            namespace       TEXT NOT NULL,
            agent_id        TEXT NOT NULL,
            session_id      TEXT,
            memory_type     TEXT NOT NULL
                            CHECK (memory_type IN ('working', 'episodic', 'semantic', 'procedural')),
            content         TEXT NOT NULL CHECK (length(content) > 0),
            summary         TEXT,
            content_hash    TEXT NOT NULL,
            embedding_model TEXT,
            importance      REAL NOT NULL CHECK (importance BETWEEN 0 AND 1),
            confidence      REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
            decay_score     REAL NOT NULL DEFAULT 1.0 CHECK (decay_score BETWEEN 0 AND 1),
            access_count    INTEGER NOT NULL DEFAULT 0,
            last_access_at  TEXT,
            created_at      TEXT NOT NULL,
            updated_at      TEXT NOT NULL,
            status          TEXT NOT NULL DEFAULT 'active'
                            CHECK (status IN ('active', 'superseded', 'archived')),
            version         INTEGER NOT NULL DEFAULT 1,
            superseded_by   TEXT REFERENCES memories (id) ON DELETE SET NULL,
            consolidated_into TEXT REFERENCES memories (id) ON DELETE SET NULL,
            metadata        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata))
        );
        -- Exact duplicates never make a second row (same text, namespace and agent).
        CREATE UNIQUE INDEX memories_identity ON memories (namespace, agent_id, content_hash);
        CREATE INDEX memories_scope ON memories (namespace, status, memory_type, created_at);
        CREATE INDEX memories_created ON memories (created_at);
        CREATE INDEX memories_model ON memories (embedding_model);

        CREATE TABLE tags (
            memory_pk INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
            tag       TEXT NOT NULL,
            PRIMARY KEY (memory_pk, tag)
        ) WITHOUT ROWID;
        CREATE INDEX tags_by_tag ON tags (tag, memory_pk);

        -- Provenance: every piece of text that reached a memory, with where it came from.
        -- content is NULL when the piece is the memory's own text at creation.
        CREATE TABLE sources (
            pk          INTEGER PRIMARY KEY,
            memory_pk   INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
            kind        TEXT NOT NULL,
            ref         TEXT,
            message_id  TEXT,
            session_id  TEXT,
            content     TEXT,
            metadata    TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
            created_at  TEXT NOT NULL
        );
        CREATE INDEX sources_by_memory ON sources (memory_pk);
        CREATE INDEX sources_by_ref ON sources (kind, ref, message_id);

        -- History of every change. memory_id is not a foreign key on purpose: the
        -- tombstone of a purged memory outlives its row.
        CREATE TABLE events (
            pk         INTEGER PRIMARY KEY,
            memory_id  TEXT NOT NULL,
            kind       TEXT NOT NULL CHECK (kind IN ('created', 'merged', 'updated', 'accessed',
                       'superseded', 'decayed', 'archived', 'restored', 'deleted', 'reembedded')),
            at         TEXT NOT NULL,
            actor      TEXT,
            before     TEXT CHECK (before IS NULL OR json_valid(before)),
            after      TEXT CHECK (after IS NULL OR json_valid(after)),
            note       TEXT
        );
        CREATE INDEX events_by_memory ON events (memory_id, pk);
        CREATE INDEX events_by_time ON events (at);

        -- One vec0 table per embedding model, created when its first vector is stored.
        CREATE TABLE embedding_models (
            model_id   TEXT PRIMARY KEY,
            dim        INTEGER NOT NULL,
            vec_table  TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        );

        CREATE TABLE settings (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );

        -- Keyword index over text analysed in Python (CJK bigrams, split identifiers);
        -- the porter stage stems English words at index and query time alike.
        CREATE VIRTUAL TABLE memory_fts USING fts5(
            terms,
            content = '',
            contentless_delete = 1,
            tokenize = 'porter unicode61 remove_diacritics 2 tokenchars ''_'''
        );
        """
    )


def _m0002_ingest(conn: apsw.Connection) -> None:
    # `engram ingest` remembers, per source file, where reading stopped (cursors); per
    # session, the digest that later parts of a growing log build on; and per extracted
    # item, the memory it became, so a log read twice never yields a memory twice.
    conn.execute(
        """
        CREATE TABLE ingest_cursors (
            path        TEXT PRIMARY KEY,
            source      TEXT NOT NULL,
            inode       INTEGER,
            size        INTEGER NOT NULL DEFAULT 0,
            mtime_ns    INTEGER NOT NULL DEFAULT 0,
            byte_offset INTEGER NOT NULL DEFAULT 0,
            last_id     TEXT,
            last_at     TEXT,
            state       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(state)),
            updated_at  TEXT NOT NULL
        );

        CREATE TABLE ingest_sessions (
            source      TEXT NOT NULL,
            session_key TEXT NOT NULL,
            path        TEXT NOT NULL,
            namespace   TEXT NOT NULL,
            digest      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(digest)),
            updated_at  TEXT NOT NULL,
            PRIMARY KEY (source, session_key)
        );

        CREATE TABLE ingest_items (
            source       TEXT NOT NULL,
            session_key  TEXT NOT NULL,
            item_key     TEXT NOT NULL,
            memory_id    TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            created_at   TEXT NOT NULL,
            PRIMARY KEY (source, session_key, item_key)
        );
        CREATE INDEX ingest_items_by_memory ON ingest_items (memory_id);
        """
    )


# The namespace engram wrote to before there were scopes, and the person's scope that replaces it.
_OLD_DEFAULT = "default"
_GLOBAL = "global"
_WHY_GLOBAL = "the default namespace became the global scope"


def _m0003_scopes_and_learned_time(conn: apsw.Connection) -> None:
    # Two things the first schema ran together. (1) When a memory happened and when engram learned
    # it: created_at is the log's time for ingested memories, and counting decay from it archived a
    # backfilled history the night it was read. learned_at is when the row was stored: the first
    # `created` event says so for existing rows (an ingested memory's event is stamped when it was
    # written), else created_at. (2) Commands wrote to a catch-all `default` namespace that no session
    # card and no project recall ever read. Memories now live in the person's scope (`global`) or a
    # project's; what was in `default` was written by hand or by scripts for every project, so it
    # becomes global. A `default` memory whose text is already in `global` (same agent) is folded into
    # that one, as `audit --fix` folds exact duplicates.
    conn.execute("ALTER TABLE memories ADD COLUMN learned_at TEXT")
    conn.execute(
        "UPDATE memories SET learned_at = coalesce((SELECT e.at FROM events e WHERE e.memory_id = memories.id "
        "AND e.kind = 'created' ORDER BY e.pk LIMIT 1), created_at)"
    )
    at = iso_now()
    tables = [str(r[0]) for r in conn.execute("SELECT vec_table FROM embedding_models ORDER BY model_id")]
    rows: list[tuple[Any, ...]] = list(conn.execute(
        "SELECT pk, id, agent_id, content_hash FROM memories WHERE namespace = ? ORDER BY pk", (_OLD_DEFAULT,)
    ))  # fmt: skip
    for pk, memory_id, agent, content_hash in rows:
        twin = conn.execute(
            "SELECT pk FROM memories WHERE namespace = ? AND agent_id = ? AND content_hash = ?",
            (_GLOBAL, agent, content_hash),
        ).fetchone()
        if twin is None:
            _move_to_global(conn, tables, int(pk), str(memory_id), at)
        else:
            _fold_into(conn, tables, int(pk), int(twin[0]), at)
    conn.execute("UPDATE ingest_sessions SET namespace = ? WHERE namespace = ?", (_GLOBAL, _OLD_DEFAULT))


def _event(conn: apsw.Connection, memory_id: str, kind: str, at: str, note: str, **values: Any) -> None:
    before, after = values.get("before"), values.get("after")
    conn.execute(
        "INSERT INTO events (memory_id, kind, at, actor, before, after, note) VALUES (?, ?, ?, 'migration', ?, ?, ?)",
        (
            memory_id, kind, at, None if before is None else json.dumps(before),
            None if after is None else json.dumps(after), note,
        ),
    )  # fmt: skip


def _move_to_global(conn: apsw.Connection, tables: list[str], pk: int, memory_id: str, at: str) -> None:
    conn.execute(
        "UPDATE memories SET namespace = ?, version = version + 1, updated_at = ? WHERE pk = ?", (_GLOBAL, at, pk)
    )
    # vec0 cannot change a partition key in place: the vector goes out and comes back under the new one.
    for table in tables:
        row = conn.execute(
            f"SELECT embedding, status, memory_type, agent_id FROM {table} WHERE memory_pk = ?", (pk,)
        ).fetchone()
        if row is None:
            continue
        conn.execute(f"DELETE FROM {table} WHERE memory_pk = ?", (pk,))
        conn.execute(
            f"INSERT INTO {table} (memory_pk, embedding, namespace, status, memory_type, agent_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (pk, row[0], _GLOBAL, row[1], row[2], row[3]),
        )
    moved = {"before": {"namespace": _OLD_DEFAULT}, "after": {"namespace": _GLOBAL}}
    _event(conn, memory_id, "updated", at, _WHY_GLOBAL, **moved)


def _fold_into(conn: apsw.Connection, tables: list[str], pk: int, survivor_pk: int, at: str) -> None:
    """The `default` memory ``pk`` joins the global one with the same words, losing nothing (see repair.fold)."""
    columns = "id, content, importance, confidence, decay_score, access_count, last_access_at, learned_at, metadata"
    one = _row(conn, f"SELECT {columns} FROM memories WHERE pk = ?", (pk,))
    two = _row(conn, f"SELECT {columns} FROM memories WHERE pk = ?", (survivor_pk,))
    loser_id, wording = str(one[0]), str(one[1])
    survivor_id = str(two[0])
    metadata = dict(json.loads(two[8] or "{}"))
    for key, value in json.loads(one[8] or "{}").items():
        metadata.setdefault(key, value)
    accessed = [a for a in (one[6], two[6]) if a]
    conn.execute(
        "UPDATE memories SET importance = ?, confidence = ?, decay_score = ?, access_count = ?, last_access_at = ?, "
        "learned_at = ?, metadata = ?, version = version + 1, updated_at = ? WHERE pk = ?",
        (
            max(one[2], two[2]), max(one[3], two[3]), max(one[4], two[4]), int(one[5]) + int(two[5]),
            max(accessed) if accessed else None, min(one[7], two[7]), json.dumps(metadata, ensure_ascii=False),
            at, survivor_pk,
        ),
    )  # fmt: skip
    conn.execute("INSERT OR IGNORE INTO tags (memory_pk, tag) SELECT ?, tag FROM tags WHERE memory_pk = ?",
                 (survivor_pk, pk))  # fmt: skip
    # A source without text stood for its memory's own wording: it keeps the folded memory's words.
    conn.execute("UPDATE sources SET content = ? WHERE memory_pk = ? AND content IS NULL", (wording, pk))
    conn.execute("UPDATE sources SET memory_pk = ? WHERE memory_pk = ?", (survivor_pk, pk))
    for column in ("superseded_by", "consolidated_into"):
        conn.execute(f"UPDATE memories SET {column} = ? WHERE {column} = ?", (survivor_id, loser_id))
    # A log read again must find the memory its item became, not bring the folded one back.
    conn.execute("UPDATE ingest_items SET memory_id = ? WHERE memory_id = ?", (survivor_id, loser_id))
    for table in tables:
        conn.execute(f"DELETE FROM {table} WHERE memory_pk = ?", (pk,))
    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
    conn.execute("DELETE FROM memories WHERE pk = ?", (pk,))
    _reindex(conn, survivor_pk)
    _event(
        conn, survivor_id, "merged", at, f"{loser_id[:8]} folded in: {_WHY_GLOBAL}",
        before={"importance": two[2], "access_count": two[5]},
        after={"importance": max(one[2], two[2]), "access_count": int(one[5]) + int(two[5])},
    )  # fmt: skip
    _event(conn, loser_id, "deleted", at, f"merged into {survivor_id}: {_WHY_GLOBAL}")


def _row(conn: apsw.Connection, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...]:
    """The one row a query about a known row returns."""
    row = conn.execute(sql, params).fetchone()
    assert row is not None, sql
    return tuple(row)


def _reindex(conn: apsw.Connection, pk: int) -> None:
    """The keyword row of a memory from its text, summary, supplements and tags (as records.reindex makes it)."""
    content, summary = _row(conn, "SELECT content, summary FROM memories WHERE pk = ?", (pk,))
    kept = [str(r[0]) for r in conn.execute(
        "SELECT content FROM sources WHERE memory_pk = ? AND content IS NOT NULL ORDER BY pk", (pk,))]  # fmt: skip
    tags = [str(r[0]) for r in conn.execute("SELECT tag FROM tags WHERE memory_pk = ? ORDER BY tag", (pk,))]
    terms = textmod.index_text(str(content), summary or "", *kept, " ".join(tags))
    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
    conn.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)", (pk, terms))


def _m0004_keys_and_edits(conn: apsw.Connection) -> None:
    # `engram edit` records an `edited` event, and SQLite cannot change a CHECK constraint in
    # place: the events table is rebuilt with the new kind allowed (same columns, same pks).
    conn.execute(
        """
        CREATE TABLE events_new (
            pk         INTEGER PRIMARY KEY,
            memory_id  TEXT NOT NULL,
            kind       TEXT NOT NULL CHECK (kind IN ('created', 'merged', 'updated', 'accessed',
                       'superseded', 'decayed', 'archived', 'restored', 'deleted', 'reembedded', 'edited')),
            at         TEXT NOT NULL,
            actor      TEXT,
            before     TEXT CHECK (before IS NULL OR json_valid(before)),
            after      TEXT CHECK (after IS NULL OR json_valid(after)),
            note       TEXT
        );
        INSERT INTO events_new (pk, memory_id, kind, at, actor, before, after, note)
            SELECT pk, memory_id, kind, at, actor, before, after, note FROM events;
        DROP TABLE events;
        ALTER TABLE events_new RENAME TO events;
        CREATE INDEX events_by_memory ON events (memory_id, pk);
        CREATE INDEX events_by_time ON events (at);
        -- Tombstones (the `deleted` events of memories that are gone) are looked up by import and export.
        CREATE INDEX events_by_kind ON events (kind, memory_id);

        -- A keyed fact (`engram set user:tz Europe/Berlin`): one active memory per namespace and key.
        ALTER TABLE memories ADD COLUMN mkey TEXT;
        CREATE UNIQUE INDEX memories_key ON memories (namespace, mkey) WHERE status = 'active' AND mkey IS NOT NULL;
        -- Two keys may hold the same value ("vim" for user:editor and team:editor): only unkeyed
        -- memories are identified by their text.
        DROP INDEX memories_identity;
        CREATE UNIQUE INDEX memories_identity ON memories (namespace, agent_id, content_hash) WHERE mkey IS NULL;
        """
    )


def _m0005_evidence(conn: apsw.Connection) -> None:
    # The conversation itself, not only what was distilled from it: a port, a flag or a reason said in a
    # session could never be found again. One row per substantive turn of an ingested session (redacted
    # before it gets here), keyed so that a log read twice keeps each turn once, and linked to the
    # memories made from it. Its keyword index is a table of its own (recall's keyword evidence counts
    # documents per index), and so are its vectors: a vec0 table per model named after the memories'
    # (store.evidence.evidence_table), so that a memory KNN never wades through turns.
    conn.execute(
        """
        CREATE TABLE evidence (
            pk              INTEGER PRIMARY KEY,
            namespace       TEXT NOT NULL,
            source          TEXT NOT NULL,
            session_key     TEXT NOT NULL,
            turn_key        TEXT NOT NULL,
            seq             INTEGER NOT NULL,
            kind            TEXT NOT NULL CHECK (kind IN ('request', 'answer', 'error', 'change')),
            content         TEXT NOT NULL CHECK (length(content) > 0),
            content_hash    TEXT NOT NULL,
            embedding_model TEXT,
            occurred_at     TEXT,
            learned_at      TEXT NOT NULL,
            UNIQUE (source, session_key, turn_key)
        );
        CREATE INDEX evidence_by_session ON evidence (source, session_key, seq);
        CREATE INDEX evidence_by_namespace ON evidence (namespace, learned_at);
        CREATE INDEX evidence_by_model ON evidence (embedding_model);

        CREATE TABLE evidence_links (
            evidence_pk INTEGER NOT NULL REFERENCES evidence (pk) ON DELETE CASCADE,
            memory_pk   INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
            PRIMARY KEY (evidence_pk, memory_pk)
        ) WITHOUT ROWID;
        CREATE INDEX evidence_links_by_memory ON evidence_links (memory_pk, evidence_pk);

        CREATE VIRTUAL TABLE evidence_fts USING fts5(
            terms,
            content = '',
            contentless_delete = 1,
            tokenize = 'porter unicode61 remove_diacritics 2 tokenchars ''_'''
        );
        """
    )


def _m0006_vector_changes(conn: apsw.Connection) -> None:
    # KNN runs on a copy of each model's vectors kept outside the file (store.vector_index), which
    # must learn what changed since it was written without reading every vector again. Every write
    # to a vec0 table logs the memory's pk here in the same transaction (vec0 tables take no
    # triggers); the token tells a change apart from a different one that got the same sequence
    # number (a database restored from a backup and written again). The epoch names this database,
    # so a copy made for another one is never trusted.
    conn.execute(
        """
        CREATE TABLE vector_changes (
            seq       INTEGER PRIMARY KEY AUTOINCREMENT,
            model_id  TEXT NOT NULL,
            memory_pk INTEGER NOT NULL,
            token     INTEGER NOT NULL
        );
        CREATE TABLE vector_epoch (
            id    INTEGER PRIMARY KEY CHECK (id = 1),
            epoch TEXT NOT NULL
        );
        INSERT INTO vector_epoch (id, epoch) VALUES (1, lower(hex(randomblob(16))));
        """
    )


def _m0007_lean_event_indexes(conn: apsw.Connection) -> None:
    # No query looks events up by time, and the only lookup by kind is of 'deleted' tombstones. The
    # two indexes cost about 100 bytes a memory, and the one keyed by memory id is written at a random
    # place by every new memory. The tombstones keep an index of their own, holding only them.
    conn.execute(
        """
        DROP INDEX IF EXISTS events_by_time;
        DROP INDEX IF EXISTS events_by_kind;
        CREATE INDEX events_deleted ON events (memory_id) WHERE kind = 'deleted';
        """
    )


def _m0008_keyword_changes(conn: apsw.Connection) -> None:
    # A process that searches many times ranks keyword matches itself, from every keyword row's length
    # kept in memory (store.keyword_scorer). Every write to memory_fts logs the memory's pk here in the
    # same transaction (FTS5 tables take no triggers), so those lengths follow other processes' writes.
    # As in vector_changes, the random token tells a change apart from another that got the same
    # sequence number (the file restored from a backup, then written again).
    conn.execute(
        """
        CREATE TABLE keyword_changes (
            seq       INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_pk INTEGER NOT NULL,
            token     INTEGER NOT NULL
        );
        """
    )


def _m0009_memory_counts(conn: apsw.Connection) -> None:
    # How many memories each namespace holds of each status, kept by triggers in the transaction of every
    # write: `engram list` counts what a full page leaves out, and count(*) over the memories read an index
    # of the whole store for it (10 ms at 100k memories, 66 ms at 1M). audit compares it with the memories.
    conn.execute(
        """
        CREATE TABLE memory_counts (
            namespace TEXT NOT NULL,
            status    TEXT NOT NULL,
            n         INTEGER NOT NULL,
            PRIMARY KEY (namespace, status)
        ) WITHOUT ROWID;
        INSERT INTO memory_counts (namespace, status, n)
            SELECT namespace, status, count(*) FROM memories GROUP BY namespace, status;
        CREATE TRIGGER memory_counts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memory_counts (namespace, status, n) VALUES (new.namespace, new.status, 1)
                ON CONFLICT (namespace, status) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER memory_counts_delete AFTER DELETE ON memories BEGIN
            UPDATE memory_counts SET n = n - 1 WHERE namespace = old.namespace AND status = old.status;
        END;
        CREATE TRIGGER memory_counts_update AFTER UPDATE OF namespace, status ON memories
            WHEN old.namespace IS NOT new.namespace OR old.status IS NOT new.status BEGIN
            UPDATE memory_counts SET n = n - 1 WHERE namespace = old.namespace AND status = old.status;
            INSERT INTO memory_counts (namespace, status, n) VALUES (new.namespace, new.status, 1)
                ON CONFLICT (namespace, status) DO UPDATE SET n = n + 1;
        END;
        """
    )


MIGRATIONS: list[Migration] = [
    Migration(1, "initial schema", _m0001_initial),
    Migration(2, "ingest cursors, sessions and items", _m0002_ingest),
    Migration(3, "scopes and learned time", _m0003_scopes_and_learned_time),
    Migration(4, "keyed facts and edits", _m0004_keys_and_edits),
    Migration(5, "the conversation as evidence", _m0005_evidence),
    Migration(6, "a log of vector changes for the vector index", _m0006_vector_changes),
    Migration(7, "event indexes that queries use", _m0007_lean_event_indexes),
    Migration(8, "a log of keyword row changes for the keyword scorer", _m0008_keyword_changes),
    Migration(9, "memory counts by namespace and status", _m0009_memory_counts),
]
