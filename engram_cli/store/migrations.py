"""Schema migrations, in order. A shipped migration is never edited: add a new one.

Each migration runs in one transaction together with the row that records it, so a
failure leaves the database exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import apsw

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


MIGRATIONS: list[Migration] = [
    Migration(1, "initial schema", _m0001_initial),
    Migration(2, "ingest cursors, sessions and items", _m0002_ingest),
    Migration(4, "keyed facts and edits", _m0004_keys_and_edits),
]
