"""Memories: the rows of the memories table with their tags, and every query that selects memories.

Nothing here commits: each method runs inside the caller's transaction (``Store.write`` or
``Store.read``). The engine decides what to change; these methods only know how it is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from engram_cli.errors import ConflictError, NotFound
from engram_cli.memory.model import Filters, Memory
from engram_cli.store.codec import dumps
from engram_cli.store.sql import chunks, marks, passing, where

if TYPE_CHECKING:
    from engram_cli.store.database import Database
    from engram_cli.store.events import Events
    from engram_cli.store.keywords import Keywords
    from engram_cli.store.sources import Sources
    from engram_cli.store.vectors import Vectors

# How many memories each namespace holds of each status, kept by triggers (migration 9).
COUNTS_TABLE = "memory_counts"

# The columns of a Memory, in the order _memory() reads them.
_COLUMNS = (
    "pk, id, namespace, agent_id, session_id, memory_type, content, summary, content_hash, "
    "embedding_model, importance, confidence, decay_score, access_count, last_access_at, "
    "created_at, updated_at, status, version, superseded_by, consolidated_into, metadata, learned_at, mkey"
)
# What update() may change: everything but the row's identity and the columns update() keeps itself.
UPDATABLE = frozenset(
    {
        "session_id", "memory_type", "content", "summary", "content_hash", "embedding_model", "importance",
        "confidence", "decay_score", "access_count", "last_access_at", "status", "superseded_by",
        "consolidated_into", "metadata",
    }
)  # fmt: skip


def _memory(row: Sequence[Any]) -> Memory:
    return Memory(
        pk=row[0],
        id=row[1],
        namespace=row[2],
        agent=row[3],
        session=row[4],
        type=row[5],
        content=row[6],
        summary=row[7],
        content_hash=row[8],
        embedding_model=row[9],
        importance=float(row[10]),
        confidence=float(row[11]),
        decay_score=float(row[12]),
        access_count=int(row[13]),
        last_access_at=row[14],
        created_at=row[15],
        updated_at=row[16],
        status=row[17],
        version=int(row[18]),
        superseded_by=row[19],
        consolidated_into=row[20],
        metadata=json.loads(row[21]) if row[21] else {},
        learned_at=row[22] or row[15],  # NULL only in rows copied by `recover` from an older schema
        key=row[23],
    )


class MemoryRow(NamedTuple):
    """A memory as scans over many rows read it: no tags, sources or metadata (which can be large)."""

    pk: int
    id: str
    namespace: str
    agent: str
    type: str
    status: str
    content: str
    model: str | None
    importance: float
    confidence: float
    decay_score: float
    access_count: int
    last_access_at: str | None
    created_at: str
    superseded_by: str | None
    version: int
    learned_at: str
    key: str | None  # a keyed fact's key
    marked: bool  # the metadata key scan() was asked about is there

    @property
    def decay_start(self) -> str:
        """What decay counts from: the later of when engram learned the memory and its last access."""
        return max(self.learned_at, self.last_access_at or "")


def _memory_row(r: Sequence[Any]) -> MemoryRow:
    return MemoryRow(
        int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]), r[7], float(r[8]), float(r[9]),
        float(r[10]), int(r[11]), r[12], str(r[13]), r[14], int(r[15]), str(r[16] or r[13]), r[17], bool(r[18]),
    )  # fmt: skip


_ROW_COLUMNS = (
    "pk, id, namespace, agent_id, memory_type, status, content, embedding_model, importance, confidence, "
    "decay_score, access_count, last_access_at, created_at, superseded_by, version, learned_at, mkey"
)


# What compact plans with, of one unkeyed memory that has a vector (see Memories.planning_rows): namespace,
# agent, model, pk, id, type, content, created_at, importance, decay_score, version, marked. A plain tuple,
# as SQLite returns it: planning reads a hundred thousand of them.
PlanningRow = tuple[str, str, str, int, str, str, str, str, float, float, int, int]


class IndexParts(NamedTuple):
    """The texts of a memory its keyword row can be made from."""

    content: str
    summary: str | None
    supplements: list[str]  # sources' own texts (a near duplicate's words, a consolidated episode)
    tags: list[str]
    key: str | None


class Memories:
    """The memories table and its tags; loading a memory also reads its sources, purging one clears its index rows."""

    def __init__(
        self, store: Database, *, sources: Sources, events: Events, keywords: Keywords, vectors: Vectors
    ) -> None:
        self.store = store
        self.sources = sources
        self.events = events
        self.keywords = keywords
        self.vectors = vectors

    # -- finding rows --------------------------------------------------------------------

    def with_id_prefix(self, prefix: str, limit: int) -> list[tuple[int, str]]:
        """(pk, id) of up to ``limit`` memories whose id starts with ``prefix``, in id order."""
        rows = self.store.rows(
            "SELECT pk, id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\uffff", limit),
        )
        return [(int(pk), str(memory_id)) for pk, memory_id in rows]

    def pk_of(self, memory_id: str) -> int | None:
        value = self.store.scalar("SELECT pk FROM memories WHERE id = ?", (memory_id,))
        return None if value is None else int(value)

    def pks_of(self, ids: Sequence[str]) -> list[int]:
        """The pks of the memories with these ids (ids of no memory are left out)."""
        out: list[int] = []
        for chunk in chunks(ids):
            out.extend(
                int(r[0]) for r in self.store.rows(f"SELECT pk FROM memories WHERE id IN ({marks(chunk)})", chunk)
            )
        return out

    def exists(self, pk: int) -> bool:
        return self.store.one("SELECT 1 FROM memories WHERE pk = ?", (pk,)) is not None

    def model_of(self, pk: int) -> str | None:
        """The model of a memory's vector; None when it has none, or when the memory is gone."""
        value = self.store.scalar("SELECT embedding_model FROM memories WHERE pk = ?", (pk,))
        return None if value is None else str(value)

    def duplicate_of(
        self, namespace: str, agent: str, content_hash: str, *, other_than: int | None = None
    ) -> int | None:
        """The pk of the unkeyed memory of ``namespace`` and ``agent`` whose text has this hash (apart from
        ``other_than``). A keyed fact is identified by its key, not its text: two keys may hold one value."""
        if other_than is None:
            value = self.store.scalar(
                "SELECT pk FROM memories WHERE namespace = ? AND agent_id = ? AND content_hash = ? AND mkey IS NULL",
                (namespace, agent, content_hash),
            )
        else:
            value = self.store.scalar(
                "SELECT pk FROM memories WHERE namespace = ? AND agent_id = ? AND content_hash = ? AND mkey IS NULL "
                "AND pk != ?",
                (namespace, agent, content_hash, other_than),
            )
        return None if value is None else int(value)

    def known(self, memory_id: str, namespace: str, agent: str, content_hash: str) -> bool:
        """Whether a memory has this id, or this text in this namespace and agent (unkeyed)."""
        row = self.store.one(
            "SELECT 1 FROM memories WHERE id = ? "
            "OR (namespace = ? AND agent_id = ? AND content_hash = ? AND mkey IS NULL)",
            (memory_id, namespace, agent, content_hash),
        )
        return row is not None

    # -- keyed facts -----------------------------------------------------------------------

    def keyed(self, namespace: str, key: str) -> int | None:
        """The pk of the active memory of ``namespace`` holding ``key``."""
        value = self.store.scalar(
            "SELECT pk FROM memories WHERE namespace = ? AND mkey = ? AND status = 'active'", (namespace, key)
        )
        return None if value is None else int(value)

    def dormant_key(self, namespace: str, key: str) -> int | None:
        """The pk of the memory of ``namespace`` that held ``key`` last, when none holds it now (unset, superseded)."""
        value = self.store.scalar(
            "SELECT pk FROM memories WHERE namespace = ? AND mkey = ? AND status != 'active' "
            "ORDER BY updated_at DESC, pk DESC LIMIT 1",
            (namespace, key),
        )
        return None if value is None else int(value)

    def keyed_rows(self, namespaces: Sequence[str] | None, prefix: str = "") -> list[tuple[int, str, str]]:
        """(pk, namespace, key) of the active keyed memories of ``namespaces`` (all when None) whose key
        starts with ``prefix``, by key."""
        sql = "SELECT pk, namespace, mkey FROM memories WHERE mkey IS NOT NULL AND status = 'active'"
        params: list[Any] = []
        if prefix:
            sql += " AND mkey >= ? AND mkey < ?"
            params.extend([prefix, prefix + "\uffff"])
        if namespaces is not None:
            sql += f" AND namespace IN ({marks(namespaces)})"
            params.extend(namespaces)
        rows = self.store.rows(sql + " ORDER BY mkey, namespace", params)
        return [(int(pk), str(ns), str(key)) for pk, ns, key in rows]

    def consolidated_into(self, memory_id: str) -> list[int]:
        """The memories consolidated into this one, in pk order."""
        rows = self.store.rows("SELECT pk FROM memories WHERE consolidated_into = ? ORDER BY pk", (memory_id,))
        return [int(r[0]) for r in rows]

    def with_metadata_containing(self, text: str) -> list[int]:
        """Memories whose stored metadata holds ``text`` verbatim (as JSON writes it)."""
        return [int(r[0]) for r in self.store.rows("SELECT pk FROM memories WHERE instr(metadata, ?) > 0", (text,))]

    # -- reading memories ------------------------------------------------------------------

    def load(self, pk: int, *, with_sources: bool = True) -> Memory:
        row = self.store.one(f"SELECT {_COLUMNS} FROM memories WHERE pk = ?", (pk,))
        if row is None:
            raise NotFound(f"memory {pk} no longer exists")
        memory = _memory(row)
        memory.tags = self.tags_of(pk)
        if with_sources:
            memory.sources = self.sources.of(pk)
        return memory

    def load_many(self, pks: Sequence[int], *, with_sources: bool = False) -> dict[int, Memory]:
        """The memories of ``pks`` that exist, by pk."""
        out: dict[int, Memory] = {}
        for chunk in chunks(pks):
            for row in self.store.rows(f"SELECT {_COLUMNS} FROM memories WHERE pk IN ({marks(chunk)})", chunk):
                memory = _memory(row)
                out[memory.pk] = memory
            for pk, tag in self.store.rows(
                f"SELECT memory_pk, tag FROM tags WHERE memory_pk IN ({marks(chunk)}) ORDER BY tag", chunk
            ):
                if pk in out:
                    out[pk].tags.append(tag)
        if with_sources:
            for pk, sources in self.sources.of_many(list(out)).items():
                out[pk].sources = sources
        return out

    def decay_inputs(self, pks: Sequence[int]) -> list[tuple[int, str, str, float, float, str]]:
        """(pk, status, type, importance, decay_score, decay start) of the memories of ``pks`` that exist.

        What decay needs of every row, without building memories; the decay start is Memory.decay_start:
        the later of learned_at (created_at where it is empty) and the last access.
        """
        out: list[tuple[int, str, str, float, float, str]] = []
        for chunk in chunks(pks):
            rows = self.store.rows(
                "SELECT pk, status, memory_type, importance, decay_score, "
                "max(coalesce(nullif(learned_at, ''), created_at), coalesce(last_access_at, '')) "
                f"FROM memories WHERE pk IN ({marks(chunk)})",
                chunk,
            )
            out.extend((int(r[0]), str(r[1]), str(r[2]), float(r[3]), float(r[4]), str(r[5])) for r in rows)
        return out

    def texts(self, pks: Sequence[int]) -> dict[int, tuple[str, str]]:
        """(id, content) of the memories of ``pks`` that exist, by pk."""
        out: dict[int, tuple[str, str]] = {}
        for chunk in chunks(pks):
            for pk, memory_id, content in self.store.rows(
                f"SELECT pk, id, content FROM memories WHERE pk IN ({marks(chunk)})", chunk
            ):
                out[int(pk)] = (str(memory_id), str(content))
        return out

    def not_on_model(self, model_id: str, limit: int) -> list[Memory]:
        """Up to ``limit`` memories whose vector is not ``model_id``'s (or that have none), in pk order; no tags."""
        rows = self.store.rows(
            f"SELECT {_COLUMNS} FROM memories WHERE embedding_model IS NOT ? OR embedding_model IS NULL "
            "ORDER BY pk LIMIT ?",
            (model_id, limit),
        )
        return [_memory(r) for r in rows]

    def count_not_on_model(self, model_id: str) -> int:
        return int(
            self.store.scalar(
                "SELECT count(*) FROM memories WHERE embedding_model IS NOT ? OR embedding_model IS NULL", (model_id,)
            )
            or 0
        )

    def index_parts(self, pk: int) -> IndexParts | None:
        """What the keyword row of a memory is made from; None when the memory is gone."""
        row = self.store.one("SELECT content, summary, mkey FROM memories WHERE pk = ?", (pk,))
        if row is None:
            return None
        return IndexParts(str(row[0]), row[1], self.sources.supplements(pk), self.tags_of(pk), row[2])

    # -- tags ------------------------------------------------------------------------------

    def tags_of(self, pk: int) -> list[str]:
        return [str(r[0]) for r in self.store.rows("SELECT tag FROM tags WHERE memory_pk = ? ORDER BY tag", (pk,))]

    def add_tags(self, pk: int, tags: Iterable[str]) -> None:
        """Tag a memory; a tag it already has is left as it is."""
        for tag in tags:
            self.store.execute("INSERT OR IGNORE INTO tags (memory_pk, tag) VALUES (?, ?)", (pk, tag))

    def remove_tag(self, pk: int, tag: str) -> None:
        self.store.execute("DELETE FROM tags WHERE memory_pk = ? AND tag = ?", (pk, tag))

    # -- writing ---------------------------------------------------------------------------

    def insert(self, memory: Memory) -> int:
        """Store a new memory's row (not its tags, sources or vector); sets and returns its pk."""
        self.store.execute(
            "INSERT INTO memories (id, namespace, agent_id, session_id, memory_type, content, summary, content_hash, "
            "embedding_model, importance, confidence, decay_score, access_count, last_access_at, created_at, "
            "updated_at, status, version, superseded_by, consolidated_into, metadata, learned_at, mkey) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory.id, memory.namespace, memory.agent, memory.session, memory.type, memory.content,
                memory.summary, memory.content_hash, memory.embedding_model, memory.importance, memory.confidence,
                memory.decay_score, memory.access_count, memory.last_access_at, memory.created_at, memory.updated_at,
                memory.status, memory.version, memory.superseded_by, memory.consolidated_into, dumps(memory.metadata),
                memory.learned_at, memory.key,
            ),
        )  # fmt: skip
        memory.pk = int(self.store.conn.last_insert_rowid())
        return memory.pk

    def overwrite(self, memory: Memory) -> None:
        """Make the row of ``memory.pk`` exactly ``memory``: every column, its version and times included.

        For a newer copy of a memory from another database (import); links are set apart, with ``link``.
        """
        self.store.execute(
            "UPDATE memories SET namespace = ?, agent_id = ?, session_id = ?, memory_type = ?, content = ?, "
            "summary = ?, content_hash = ?, embedding_model = ?, importance = ?, confidence = ?, decay_score = ?, "
            "access_count = ?, last_access_at = ?, created_at = ?, updated_at = ?, status = ?, version = ?, "
            "metadata = ?, mkey = ?, learned_at = ? WHERE pk = ?",
            (
                memory.namespace, memory.agent, memory.session, memory.type, memory.content, memory.summary,
                memory.content_hash, memory.embedding_model, memory.importance, memory.confidence,
                memory.decay_score, memory.access_count, memory.last_access_at, memory.created_at,
                memory.updated_at, memory.status, memory.version, dumps(memory.metadata), memory.key,
                memory.learned_at, memory.pk,
            ),
        )  # fmt: skip

    def set_tags(self, pk: int, tags: Iterable[str]) -> None:
        """A memory's tags become exactly ``tags``."""
        self.store.execute("DELETE FROM tags WHERE memory_pk = ?", (pk,))
        self.add_tags(pk, tags)

    def update(self, memory: Memory, at: str, **columns: Any) -> None:
        """Change columns of one memory if nobody else changed it since it was read.

        The version column is the optimistic lock: a stale ``memory.version`` raises
        ConflictError, and the caller re-reads and retries. ``metadata`` is given decoded.
        """
        if not columns:
            return
        unknown = set(columns) - UPDATABLE
        if unknown:
            raise ValueError(f"not a column update() may change: {', '.join(sorted(unknown))}")
        if "metadata" in columns:
            columns["metadata"] = dumps(columns["metadata"])
        sets = ", ".join(f"{column} = ?" for column in columns)
        self.store.execute(
            f"UPDATE memories SET {sets}, updated_at = ?, version = version + 1 WHERE pk = ? AND version = ?",
            [*columns.values(), at, memory.pk, memory.version],
        )
        if self.store.conn.changes() != 1:
            raise ConflictError(f"memory {memory.id[:8]} was changed by another writer", hint="run the command again")
        memory.version += 1
        memory.updated_at = at

    def move(self, memory: Memory, namespace: str) -> None:
        """Put a memory in another namespace, as part of a change update() or bump() records (which count the version).

        Apart from update() because the namespace is the row's scope: its vector's partition must move
        with it (``vectors.put``), which the caller does in the same transaction.
        """
        self.store.execute("UPDATE memories SET namespace = ? WHERE pk = ?", (namespace, memory.pk))
        memory.namespace = namespace

    def bump(self, memory: Memory, at: str) -> None:
        """Count a change update() does not make (tags, the namespace) as a new version, with the same lock."""
        self.store.execute(
            "UPDATE memories SET updated_at = ?, version = version + 1 WHERE pk = ? AND version = ?",
            (at, memory.pk, memory.version),
        )
        if self.store.conn.changes() != 1:
            raise ConflictError(f"memory {memory.id[:8]} was changed by another writer", hint="run the command again")
        memory.version += 1
        memory.updated_at = at

    def set_status(self, memory: Memory, status: str, at: str, **columns: Any) -> None:
        """update() the status (and ``columns``), and the status its vector is filtered by."""
        self.update(memory, at, status=status, **columns)
        memory.status = status
        if memory.embedding_model:
            self.vectors.set_status(memory.embedding_model, memory.pk, status)

    def move_to_model(self, pk: int, model_id: str, *, at: str | None) -> None:
        """Record that a memory's vector now comes from ``model_id`` (its writer holds the row).

        ``at`` is when, which counts as a change (version + 1); None restores the row as it was
        otherwise (a recovered copy).
        """
        if at is None:
            self.store.execute("UPDATE memories SET embedding_model = ? WHERE pk = ?", (model_id, pk))
        else:
            self.store.execute(
                "UPDATE memories SET embedding_model = ?, version = version + 1, updated_at = ? WHERE pk = ?",
                (model_id, at, pk),
            )

    def record_access(self, pks: Sequence[int], at: str) -> None:
        """Being recalled: access count +1, last access ``at``, decay back to 1.0."""
        for chunk in chunks(pks):
            self.store.execute(
                "UPDATE memories SET access_count = access_count + 1, last_access_at = ?, decay_score = 1.0 "
                f"WHERE pk IN ({marks(chunk)})",
                [at, *chunk],
            )

    def link(self, memory_id: str, superseded_by: str | None, consolidated_into: str | None) -> None:
        """Set a memory's links, each to the memory it names or to nothing when that memory does not exist."""
        self.store.execute(
            "UPDATE memories SET superseded_by = (SELECT id FROM memories WHERE id = ?), "
            "consolidated_into = (SELECT id FROM memories WHERE id = ?) WHERE id = ?",
            (superseded_by, consolidated_into, memory_id),
        )

    def relink(self, old_id: str, new_id: str) -> None:
        """Links to ``old_id`` (superseded by, consolidated into) point at ``new_id`` instead."""
        for column in ("superseded_by", "consolidated_into"):
            self.store.execute(f"UPDATE memories SET {column} = ? WHERE {column} = ?", (new_id, old_id))

    def linked_to(self, memory_id: str) -> list[tuple[str, str]]:
        """(id, link column) of the memories whose superseded_by or consolidated_into is ``memory_id``."""
        out: list[tuple[str, str]] = []
        for column in ("superseded_by", "consolidated_into"):
            rows = self.store.rows(f"SELECT id FROM memories WHERE {column} = ? ORDER BY id", (memory_id,))
            out.extend((str(r[0]), column) for r in rows)
        return out

    def set_link(self, memory_id: str, column: str, target: str | None) -> None:
        """Point one link of a memory at ``target`` (nothing when it does not exist)."""
        if column not in ("superseded_by", "consolidated_into"):
            raise ValueError(f"{column} is not a link")
        self.store.execute(
            f"UPDATE memories SET {column} = (SELECT id FROM memories WHERE id = ?) WHERE id = ?", (target, memory_id)
        )

    def clear_dangling_links(self) -> int:
        """Links to memories that are not there become NULL; returns how many were cleared."""
        cleared = 0
        for column in ("superseded_by", "consolidated_into"):
            self.store.execute(
                f"UPDATE memories SET {column} = NULL WHERE {column} IS NOT NULL "
                f"AND {column} NOT IN (SELECT id FROM memories)"
            )
            cleared += self.store.conn.changes()
        return cleared

    def delete(self, memory: Memory) -> None:
        """Remove a memory's row, vector and keyword row (tags and sources cascade); its history stays."""
        if memory.embedding_model:
            self.vectors.delete(memory.embedding_model, memory.pk)
        self.keywords.delete(memory.pk)
        self.store.execute("DELETE FROM memories WHERE pk = ?", (memory.pk,))

    def purge(self, memory: Memory) -> None:
        """delete() the memory, and blank the values of its history, which may quote its text."""
        self.delete(memory)
        self.events.blank_payloads(memory.id)

    # -- selecting by filters --------------------------------------------------------------

    def pks(
        self,
        filters: Filters,
        *,
        model: str | None = None,
        order: Literal["newest", "oldest", "pk"] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[int]:
        """The pks of the memories that pass ``filters`` (and have vectors of ``model``).

        Newest first, oldest first (by creation, then id: the same order in every database that holds
        them), by pk, or in no particular order; ``limit`` and ``offset`` page through them.
        """
        clause, params = where(filters)
        sql = f"SELECT m.pk FROM memories m WHERE {clause}"
        if model is not None:
            sql += " AND m.embedding_model = ?"
            params.append(model)
        if order == "newest":
            sql += " ORDER BY m.created_at DESC, m.pk DESC"
        elif order == "oldest":
            sql += " ORDER BY m.created_at, m.id"
        elif order == "pk":
            sql += " ORDER BY m.pk"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params.extend([limit, offset])
        return [int(r[0]) for r in self.store.rows(sql, params)]

    def strongest(self, namespace: str, limit: int) -> list[int]:
        """Up to ``limit`` active memories of ``namespace``, by stored importance x decay_score (pks)."""
        rows = self.store.rows(
            "SELECT pk FROM memories WHERE namespace = ? AND status = 'active' "
            "ORDER BY importance * decay_score DESC, pk DESC LIMIT ?",
            (namespace, limit),
        )
        return [int(r[0]) for r in rows]

    def passing(self, pks: Sequence[int], filters: Filters) -> set[int]:
        """Which of ``pks`` pass ``filters``."""
        return passing(self.store, pks, filters)

    def count(self, filters: Filters | None = None) -> int:
        """How many memories pass ``filters``; all of them when there are none.

        Filters of namespace and status only are answered from the counts the triggers of migration 9 keep
        (:data:`COUNTS_TABLE`), without reading the memories; any other filter counts the rows that pass.
        """
        if filters is None or filters.restricts_only("namespaces", "statuses"):
            clause, params = ("1", []) if filters is None else where(filters)
            return int(self.store.scalar(f"SELECT sum(n) FROM {COUNTS_TABLE} m WHERE {clause}", params) or 0)
        clause, params = where(filters)
        return int(self.store.scalar(f"SELECT count(*) FROM memories m WHERE {clause}", params) or 0)

    def namespaces(self) -> dict[str, dict[str, int]]:
        """Every namespace that holds a memory (of any status), by name, with how many it holds of each status."""
        out: dict[str, dict[str, int]] = {}
        for namespace, status, n in self.store.rows(
            f"SELECT namespace, status, n FROM {COUNTS_TABLE} WHERE n > 0 ORDER BY namespace, status"
        ):
            out.setdefault(str(namespace), {})[str(status)] = int(n)
        return out

    def miscounted(self) -> list[tuple[str, str, int, int]]:
        """(namespace, status, counted, held) wherever the kept counts differ from the memories themselves."""
        rows = self.store.rows(
            f"""
            WITH held AS (SELECT namespace, status, count(*) AS n FROM memories GROUP BY namespace, status),
                 counted AS (SELECT namespace, status, n FROM {COUNTS_TABLE} WHERE n != 0)
            SELECT c.namespace, c.status, c.n, coalesce(h.n, 0) FROM counted c
                LEFT JOIN held h ON h.namespace = c.namespace AND h.status = c.status
                WHERE h.n IS NOT c.n
            UNION ALL
            SELECT h.namespace, h.status, 0, h.n FROM held h
                WHERE NOT EXISTS (SELECT 1 FROM counted c WHERE c.namespace = h.namespace AND c.status = h.status)
            ORDER BY 1, 2
            """
        )
        return [(str(ns), str(status), int(counted), int(held)) for ns, status, counted, held in rows]

    def recount(self) -> None:
        """Count the memories again into the kept counts (audit --fix, when they differ)."""
        self.store.execute(f"DELETE FROM {COUNTS_TABLE}")
        self.store.execute(
            f"INSERT INTO {COUNTS_TABLE} (namespace, status, n) "
            "SELECT namespace, status, count(*) FROM memories GROUP BY namespace, status"
        )

    def has_namespace(self, namespace: str) -> bool:
        """Whether any memory, of any status, lives in ``namespace``."""
        return self.store.one("SELECT 1 FROM memories WHERE namespace = ? LIMIT 1", (namespace,)) is not None

    def count_with_vectors(self) -> int:
        return int(self.store.scalar("SELECT count(*) FROM memories WHERE embedding_model IS NOT NULL") or 0)

    def count_by_model(self) -> dict[str, int]:
        """How many memories have vectors of each model."""
        rows = self.store.rows(
            "SELECT embedding_model, count(*) FROM memories WHERE embedding_model IS NOT NULL GROUP BY 1"
        )
        return {str(model): int(n) for model, n in rows}

    def models_by_pk(self) -> dict[int, str | None]:
        """Every memory's pk and the model of its vector (None without one)."""
        return {int(pk): model for pk, model in self.store.rows("SELECT pk, embedding_model FROM memories")}

    def models(self, filters: Filters) -> list[str]:
        """The models that have vectors of at least one memory passing ``filters``."""
        # Asks the (tiny) model registry which models have a row in scope, rather than scanning every row.
        clause, params = where(filters)
        # With namespaces named, their rows are found through the scope index; the model index would walk every
        # row of the model (all of them, usually) to learn that a small or empty namespace has none.
        model = "+m.embedding_model" if filters.namespaces is not None else "m.embedding_model"
        rows = self.store.rows(
            "SELECT e.model_id FROM embedding_models e WHERE EXISTS "
            f"(SELECT 1 FROM memories m WHERE {model} = e.model_id AND {clause})",
            params,
        )
        return [str(r[0]) for r in rows]

    def planning_rows(self, filters: Filters, *, marked_by: str) -> list[PlanningRow]:
        """The unkeyed memories that pass ``filters`` and have a vector, by creation then pk, as PlanningRows.

        Only the columns compact plans with, and no metadata decoded: ``marked`` (1 or 0) reports whether
        the metadata key ``marked_by`` is there.
        """
        clause, params = where(filters)
        sql = (
            "SELECT m.namespace, m.agent_id, m.embedding_model, m.pk, m.id, m.memory_type, m.content, m.created_at, "
            "CAST(m.importance AS REAL), CAST(m.decay_score AS REAL), m.version, "
            f"json_extract(m.metadata, ?) IS NOT NULL FROM memories m WHERE {clause} "
            "AND m.embedding_model IS NOT NULL AND m.mkey IS NULL"
        )
        rows = self.store.rows(sql, ["$." + json.dumps(marked_by), *params])
        # Sorted here rather than by ORDER BY: walking the created_at index reads the table in random
        # order, twice as slow as a scan and a sort. Text order is SQLite's BINARY order.
        rows.sort(key=itemgetter(7, 3))
        return rows

    def planning_counts(self, filters: Filters) -> dict[str, int]:
        """How many rows planning_rows() would return, by namespace."""
        clause, params = where(filters)
        rows = self.store.rows(
            f"SELECT m.namespace, count(*) FROM memories m WHERE {clause} "
            "AND m.embedding_model IS NOT NULL AND m.mkey IS NULL GROUP BY m.namespace",
            params,
        )
        return {str(ns): int(n) for ns, n in rows}

    def scan(
        self,
        filters: Filters,
        *,
        with_vectors: bool = False,
        order: Literal["pk", "created"] = "pk",
        after: int | None = None,
        limit: int | None = None,
        marked_by: str | None = None,
    ) -> list[MemoryRow]:
        """The memories that pass ``filters`` (and have a vector), by pk or by creation, as MemoryRows.

        ``after`` and ``limit`` page through them by pk; ``marked_by`` names the metadata key
        whose presence MemoryRow.marked reports.
        """
        clause, params = where(filters)
        marked = "0"
        if marked_by is not None:
            marked = "json_extract(m.metadata, ?) IS NOT NULL"
            params.insert(0, "$." + json.dumps(marked_by))
        sql = f"SELECT {', '.join('m.' + c for c in _ROW_COLUMNS.split(', '))}, {marked} FROM memories m WHERE {clause}"
        if with_vectors:
            sql += " AND m.embedding_model IS NOT NULL"
        if after is not None:
            sql += " AND m.pk > ?"
            params.append(after)
        sql += " ORDER BY m.pk" if order == "pk" else " ORDER BY m.created_at, m.pk"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_memory_row(r) for r in self.store.rows(sql, params)]
