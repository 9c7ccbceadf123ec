"""audit: how healthy the store is. The repairs ``fix`` makes live in :mod:`engram_cli.memory.repair`.

Checks, by severity (``error`` and ``warning`` are problems; ``info`` lists memories to review):

- integrity (error): ``PRAGMA integrity_check`` (``quick_check`` when quick) and ``foreign_key_check``.
- secrets (error): credentials or personal numbers (see :mod:`engram_cli.lang.redact`) in any column that
  holds text, of any table: :data:`SCANNED` lists them, :data:`NOT_SCANNED` says why each other text
  column cannot hold one, :data:`INDEX_TABLES` why the index tables are not read.
- missing_index (error): a memory without a vector in its model's table, without a keyword row, or whose
  vector row carries outdated filter columns (namespace, status, type, agent), which recall filters on.
- orphan_index (error): vector or keyword rows whose memory is gone, or vectors left in another model's table.
- other_model (warning): memories whose vector comes from another model than the active one, or than the
  target of an unfinished reembed: the migration's progress.
- near_duplicates (warning): active pairs of one namespace, agent and model that remember would have merged:
  the same words, or a cosine at the model's merge threshold with no lexical blocker.
- conflicts (warning): active, similar pairs (cosine at the supersede similarity) about the same thing that
  disagree: opposite polarity, or a correction that never replaced what it corrects.
- stale, low_confidence, never_accessed (info).

Similar pairs come from tiled matrix products over the vectors of each namespace and model,
never from one KNN query per memory. Integrity, orphans and the secrets of tables that belong
to no namespace (settings, ingest cursors and items) concern the whole file whatever the
namespaces; everything else is limited to them.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from engram_cli.errors import DatabaseDamaged, InvalidInput
from engram_cli.lang import redact as redactmod
from engram_cli.lang import text as textmod
from engram_cli.memory import repair
from engram_cli.memory.model import Filters
from engram_cli.memory.reembed import TARGET_MODEL_KEY
from engram_cli.memory.remember import MERGE_CANDIDATES, chunked
from engram_cli.memory.repair import JSON, TEXT, Action, Repairs, Work
from engram_cli.memory.similarity import (
    SWAP_OVERLAP,
    Profile,
    change_marker,
    negates,
    profile,
    profile_blockers,
    supersedes,
    topic_overlap,
    topic_terms,
)
from engram_cli.serialize import to_json
from engram_cli.store.database import damaged
from engram_cli.store.db import Store
from engram_cli.store.memories import MemoryRow
from engram_cli.timeutil import now as utcnow
from engram_cli.timeutil import to_iso

INFO, WARNING, ERROR = "info", "warning", "error"
TILE = 2048  # rows and columns per matrix product (16 MB of float32)
# Similar pairs classified at most; a store of near-identical templated texts stops here
# (and says so) instead of listing n² pairs.
MAX_PAIRS = 200_000
EXCERPT = 90

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
        "last_access_at": _TIME, "created_at": _TIME, "updated_at": _TIME,
    },
    "sources": {"created_at": _TIME},
    "events": {"memory_id": _ID, "kind": "one of ten kinds (CHECK constraint)", "at": _TIME},
    "settings": {"key": "a name engram's own code sets (active_model, reembed target, caches)"},
    "ingest_sessions": {"source": _IMPORTER, "namespace": _SCOPE, "updated_at": _TIME},
    "ingest_cursors": {"source": _IMPORTER, "last_at": _TIME, "updated_at": _TIME},
    "ingest_items": {"source": _IMPORTER, "memory_id": _ID, "content_hash": _HASH, "created_at": _TIME},
    "embedding_models": {
        "model_id": _MODEL, "vec_table": "derived from model_id (store.vectors.table_name)", "created_at": _TIME,
    },
    "schema_migrations": {"name": "the name of a migration engram ships", "applied_at": _TIME},
}  # fmt: skip

# Tables the secrets check does not read, and why. Vector tables (one per model, named in
# embedding_models) and their shadow tables are not text either: see :func:`index_table`.
INDEX_TABLES: dict[str, str] = {
    "memory_fts": "the keyword index of memories: terms analysed from the columns above, rebuilt from the "
    "redacted text and merged (``optimize``) so old segments go",
    "sqlite_sequence": "SQLite's own counters: table names and numbers",
}
VECTOR_TABLES = (
    "vectors, and copies of their memory's namespace, status, type and agent for recall's filters "
    "(see NOT_SCANNED for why those are not scanned)"
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
_NAMESPACED = {"ingest_sessions"}


# -- what the report is made of ---------------------------------------------------------------


@dataclass
class Check:
    """One check's result: how many, a few examples, and what to do."""

    name: str
    title: str
    severity: str
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    hint: str | None = None
    found: int | None = None  # before --fix repaired anything
    fixed: int = 0
    skipped: str | None = None

    @property
    def problem(self) -> bool:
        return self.severity != INFO and self.count > 0

    def json_form(self, **options: Any) -> dict[str, Any]:
        # "found" is the count before --fix, whether or not it ran; a hint only for a check that found something.
        return {
            "name": self.name,
            "title": self.title,
            "severity": self.severity,
            "problem": self.problem,
            "count": self.count,
            "found": self.count if self.found is None else self.found,
            "fixed": self.fixed,
            "skipped": self.skipped,
            "hint": self.hint if self.count else None,
            "details": self.details,
            "examples": self.examples,
        }


@dataclass
class AuditReport:
    database: str
    now: str
    namespaces: list[str] | None
    fix: bool
    quick: bool
    checks: list[Check]
    actions: list[Action] = field(default_factory=list)
    # Set when the file is damaged: the integrity check says what was found, and the caller
    # should fail with this error once the report is shown.
    damage: DatabaseDamaged | None = None

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.problem]

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def left_for_a_person(self) -> list[Check]:
        """What is still there after any fixes: problems first, then memories to review."""
        remaining = [c for c in self.checks if c.count]
        return sorted(remaining, key=lambda c: (not c.problem, self.checks.index(c)))

    def json_form(self, **options: Any) -> dict[str, Any]:
        # A verdict (ok, the names of the problems) before the checks; what is left, with its hints, last.
        return {
            "database": self.database,
            "now": self.now,
            "namespaces": self.namespaces,
            "fix": self.fix,
            "quick": self.quick,
            "ok": not self.problems,
            "problems": [c.name for c in self.problems],
            "checks": to_json(self.checks, **options),
            "actions": to_json(self.actions, **options),
            "left_for_a_person": [
                {"check": c.name, "count": c.count, "problem": c.problem, "hint": c.hint}
                for c in self.left_for_a_person()
            ],
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, as `audit --json` prints it."""
        return self.json_form()


@dataclass(frozen=True)
class AuditSettings:
    """Thresholds (config ``audit.*``, whose defaults live in the settings) and what the engine needs
    to know about models."""

    active_model: str
    # model id -> (merge threshold, supersede min similarity)
    thresholds: Callable[[str], tuple[float, float]]
    stale_days: float
    stale_decay: float
    low_confidence: float
    never_accessed_days: float
    examples: int
    quick: bool
    contact: bool  # also e-mail addresses and phone numbers (redact.contact_details)


# -- reading the store once -------------------------------------------------------------------


@dataclass
class _Scope:
    namespaces: list[str] | None


@dataclass
class _Scan:
    checks: dict[str, Check]
    work: Work  # what --fix may repair
    damage: DatabaseDamaged | None = None


def excerpt(text: str, width: int = EXCERPT) -> str:
    """A one-line excerpt that never shows a secret: redacted, and centred on the first marker if any."""
    redacted, _ = redactmod.redact(text)
    flat = " ".join(redacted.split())
    if len(flat) <= width:
        return flat
    first = redactmod.MARKER_RE.search(flat)
    start = 0 if first is None else max(0, min(first.start() - width // 3, len(flat) - width))
    clipped = flat[start : start + width - 2]
    return ("…" if start else "") + clipped + ("…" if start + width - 2 < len(flat) else "")


def _example(row: MemoryRow, **extra: Any) -> dict[str, Any]:
    return {"id": row.id[:8], "text": excerpt(row.content), **extra}


# -- the checks -------------------------------------------------------------------------------


def _integrity(store: Store, quick: bool, limit: int) -> tuple[Check, DatabaseDamaged | None]:
    """The integrity check, and the error to fail with when it found the file damaged."""
    mode = "quick_check" if quick else "integrity_check"
    messages = store.maintenance.integrity_problems(quick)
    damage = damaged(store.path, f"{mode} found {len(messages)} problems") if messages else None
    try:
        for table, rowid, parent in store.maintenance.foreign_key_problems():
            messages.append(f"{table} row {rowid} points at a missing row of {parent}")
    except DatabaseDamaged as exc:
        messages.append(f"the foreign key check stopped: {exc.message}")
        damage = exc
    check = Check(
        "integrity",
        "SQLite integrity and foreign keys",
        ERROR,
        count=len(messages),
        examples=[{"detail": m} for m in messages[:limit]],
        details={"mode": mode},
        hint="the file is damaged: `engram recover` copies what can still be read into a new database; "
        "or restore a backup",
    )
    if damage is not None:
        check.details["damaged"] = True
    return check, damage


def _unreadable(check: Check, exc: DatabaseDamaged) -> None:
    """The integrity check after the other checks could not read what they need."""
    check.count += 1
    check.examples.append({"detail": f"the other checks were skipped: {exc.message}"})
    check.details["damaged"] = True


def _secrets(
    store: Store, rows: list[MemoryRow], scope: _Scope, limit: int, work: Work, contact: bool = False
) -> Check:
    # Found per memory id (the tombstones of purged memories included), or per row of a table that
    # belongs to no memory: the places, the table.column names, an excerpt.
    by_id = {r.id: r for r in rows}
    places: dict[tuple[str, str], set[str]] = defaultdict(set)
    columns: dict[tuple[str, str], set[str]] = defaultdict(set)
    excerpts: dict[tuple[str, str], str] = {}
    labels: dict[tuple[str, str], str] = {}
    kinds: Counter[str] = Counter()
    per_column: Counter[str] = Counter()

    def note(key: tuple[str, str], table: str, values: Sequence[Any]) -> bool:
        hit = False
        for (column, kind), raw in zip(SCANNED[table].items(), values, strict=True):
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

    text = store.maintenance
    for table in _MEMORY_TABLES:
        if table == "events":
            for memory_id, event_pk, *values in text.event_text(list(SCANNED[table]), scope.namespaces):
                if note(("memory", str(memory_id)), table, values):
                    work.secret_event_pks.append(int(event_pk))
            continue
        for memory_id, *values in text.memory_text(table, list(SCANNED[table]), scope.namespaces):
            note(("memory", str(memory_id)), table, values)
    for table in SCANNED:
        if table in _MEMORY_TABLES:
            continue
        keys = text.key_columns(table)
        namespaces = scope.namespaces if table in _NAMESPACED else None
        for rowid, *values in text.table_text(table, [*keys, *SCANNED[table]], namespaces):
            key = (table, str(rowid))
            if note(key, table, values[len(keys) :]):
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


def _index(store: Store, rows: list[MemoryRow], limit: int, work: Work) -> tuple[Check, Check]:
    vector_rows = {model_id: store.vectors.filters_of(model_id) for model_id, _ in store.vectors.in_use()}
    fts_ids = store.keywords.pks()

    missing: list[tuple[MemoryRow, list[str]]] = []
    for row in rows:
        gaps: list[str] = []
        held = vector_rows.get(row.model or "")
        if held is None or row.pk not in held:
            gaps.append("vector")
            work.missing_vectors.append(row.pk)
        elif held[row.pk] != (row.namespace, row.status, row.type, row.agent):
            gaps.append("outdated vector filters")
            work.outdated_vectors.append(row.pk)
        if row.pk not in fts_ids:
            gaps.append("keyword row")
            work.missing_fts.append(row.pk)
        if gaps:
            missing.append((row, gaps))
    missing_check = Check(
        "missing_index",
        "memories missing their vector or keyword row",
        ERROR,
        count=len(missing),
        examples=[_example(row, missing=gaps) for row, gaps in missing[:limit]],
        details={
            "vectors": len(work.missing_vectors),
            "keyword_rows": len(work.missing_fts),
            "outdated_vector_filters": len(work.outdated_vectors),
        },
        hint="`engram audit --fix` rebuilds them",
    )

    # Orphans are a property of the file, whatever namespaces are audited.
    model_of = store.memories.models_by_pk()
    orphan_examples: list[dict[str, Any]] = []
    for model_id, held in vector_rows.items():
        stray = sorted(pk for pk in held if pk not in model_of or model_of[pk] != model_id)
        if stray:
            work.orphan_vectors[model_id] = stray
            orphan_examples.extend({"index": f"vectors of {model_id}", "rowid": pk} for pk in stray)
    work.orphan_fts = sorted(pk for pk in fts_ids if pk not in model_of)
    orphan_examples.extend({"index": "keyword", "rowid": pk} for pk in work.orphan_fts)
    vector_orphans = sum(len(v) for v in work.orphan_vectors.values())
    orphan_check = Check(
        "orphan_index",
        "index rows whose memory is gone",
        ERROR,
        count=vector_orphans + len(work.orphan_fts),
        examples=orphan_examples[:limit],
        details={"vectors": vector_orphans, "keyword_rows": len(work.orphan_fts)},
        hint="`engram audit --fix` removes them",
    )
    return missing_check, orphan_check


def _other_model(rows: list[MemoryRow], active: str, target: str | None) -> Check:
    # While a reembed is unfinished the old model stays active; progress is towards its target.
    goal = target or active
    counts = Counter(r.model for r in rows if r.model is not None)
    total = sum(counts.values())
    done = counts.get(goal, 0)
    details: dict[str, Any] = {
        "active_model": active,
        "target_model": goal,
        "models": dict(sorted(counts.items())),
        "migrated": done,
        "total": total,
        "percent_migrated": round(100.0 * done / total, 1) if total else 100.0,
    }
    return Check(
        "other_model",
        "memories whose vector comes from another model than the one in use or being migrated to",
        WARNING,
        count=total - done,
        examples=[{"model": m, "count": n} for m, n in sorted(counts.items()) if m != goal],
        details=details,
        hint=f"`engram reembed --model {goal}` finishes the migration",
    )


def _age_checks(rows: list[MemoryRow], settings: AuditSettings, moment: datetime) -> list[Check]:
    stale_before = to_iso(moment - timedelta(days=settings.stale_days))
    never_before = to_iso(moment - timedelta(days=settings.never_accessed_days))
    active = [r for r in rows if r.status == "active"]
    stale = sorted(
        (
            r
            for r in active
            if (r.last_access_at or r.created_at) < stale_before and r.decay_score < settings.stale_decay
        ),
        key=lambda r: (r.last_access_at or r.created_at, r.pk),
    )
    low = sorted((r for r in active if r.confidence < settings.low_confidence), key=lambda r: (r.confidence, r.pk))
    never = sorted(
        (r for r in active if r.access_count == 0 and r.created_at < never_before), key=lambda r: (r.created_at, r.pk)
    )
    n = settings.examples
    return [
        Check(
            "stale",
            f"active memories not accessed for {settings.stale_days:g} days that decayed below "
            f"{settings.stale_decay:g}",
            INFO,
            count=len(stale),
            examples=[
                _example(r, last_access=r.last_access_at or r.created_at, decay_score=round(r.decay_score, 3))
                for r in stale[:n]
            ],
            details={"days": settings.stale_days, "decay_below": settings.stale_decay},
            hint="`engram touch ID` keeps what still matters, `engram forget ID` drops the rest; "
            "decay archives them in time",
        ),
        Check(
            "low_confidence",
            f"active memories with confidence below {settings.low_confidence:g}",
            INFO,
            count=len(low),
            examples=[_example(r, confidence=round(r.confidence, 3)) for r in low[:n]],
            details={"below": settings.low_confidence},
            hint="confirm them with `engram touch ID` or drop them with `engram forget ID`",
        ),
        Check(
            "never_accessed",
            f"active memories never recalled in the {settings.never_accessed_days:g} days since they were added",
            INFO,
            count=len(never),
            examples=[_example(r, created_at=r.created_at) for r in never[:n]],
            details={"days": settings.never_accessed_days},
            hint="for review only: nothing is wrong with them",
        ),
    ]


# -- similar pairs ----------------------------------------------------------------------------


@dataclass
class _Pairs:
    duplicates: list[tuple[float, MemoryRow, MemoryRow, bool]] = field(default_factory=list)  # cosine, a, b, exact
    conflicts: list[tuple[float, MemoryRow, MemoryRow, str]] = field(default_factory=list)  # cosine, a, b, reason
    truncated: bool = False
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)


# Popcounts of every byte value, for overlap bounds on topic signatures.
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int32)
SIGNATURE_BYTES = 32


@dataclass
class _Signals:
    """Per-text signals computed once per group, so pairs can be screened in numpy."""

    negates: np.ndarray  # bool
    changes: np.ndarray  # bool
    words: np.ndarray  # int64 hash of the analysed words: equal for texts with the same words
    topic: np.ndarray  # uint8 bit signature (256 bits) of the topic terms
    sizes: np.ndarray  # how many topic terms

    @classmethod
    def of(cls, texts: Sequence[str]) -> _Signals:
        neg = np.zeros(len(texts), dtype=bool)
        chg = np.zeros(len(texts), dtype=bool)
        key = np.zeros(len(texts), dtype=np.int64)
        sig = np.zeros((len(texts), SIGNATURE_BYTES), dtype=np.uint8)
        sizes = np.zeros(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            words = textmod.analyze(text)
            neg[i] = negates(text)
            chg[i] = change_marker(text) is not None
            digest = hashlib.blake2b("\x1f".join(words).encode("utf-8"), digest_size=8).digest()
            key[i] = int.from_bytes(digest, "little", signed=True)
            topic = topic_terms(words)
            sizes[i] = len(topic)
            for term in topic:
                bit = zlib.crc32(term.encode("utf-8")) % (SIGNATURE_BYTES * 8)
                sig[i, bit // 8] |= 1 << (bit % 8)
        return cls(neg, chg, key, sig, sizes)

    def topic_may_overlap(self, a: np.ndarray, b: np.ndarray, share: float) -> np.ndarray:
        """False where pairs (a[k], b[k]) surely share less than ``share`` of their topic terms (Jaccard).

        A term whose bit is missing from the other signature cannot be shared, so each text's
        term count minus its bits the other lacks bounds the shared terms from above; the
        Jaccard of that bound is never below the exact one, so no pair the exact check keeps
        is dropped, hash collisions or not.
        """
        ta, tb = self.topic[a], self.topic[b]
        only_a = _POPCOUNT[ta & ~tb].sum(axis=1)
        only_b = _POPCOUNT[tb & ~ta].sum(axis=1)
        shared = np.minimum(self.sizes[a] - only_a, self.sizes[b] - only_b)
        union = self.sizes[a] + self.sizes[b] - shared
        return np.asarray(shared >= share * np.maximum(union, 1), dtype=bool)


def _similar_pairs(store: Store, rows: list[MemoryRow], settings: AuditSettings, out: _Pairs) -> None:
    """Tiled cosine products per (namespace, model) group; only pairs that could matter reach Python."""
    models = {model_id for model_id, _ in store.vectors.in_use()}
    groups: dict[tuple[str, str], list[MemoryRow]] = defaultdict(list)
    for row in rows:
        if row.status == "active" and row.model in models:
            groups[(row.namespace, row.model)].append(row)
    profiles: dict[int, Profile] = {}

    def prof(row: MemoryRow) -> Profile:
        if row.pk not in profiles:
            profiles[row.pk] = profile(row.content)
        return profiles[row.pk]

    budget = MAX_PAIRS
    for (_, model_id), members in sorted(groups.items()):
        if len(members) < 2:
            continue
        merge_at, supersede_at = settings.thresholds(model_id)
        low = min(merge_at, supersede_at)
        out.thresholds[model_id] = {"merge": round(merge_at, 6), "supersede": round(supersede_at, 6)}
        found = store.vectors.get(model_id, [r.pk for r in members])
        members = [r for r in members if r.pk in found]
        if len(members) < 2:
            continue
        matrix = np.stack([found[r.pk] for r in members]).astype(np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        signals = _Signals.of([r.content for r in members])
        neg, key = signals.negates, signals.words
        for rs, re_, cs, ce in _tiles(len(members)):
            sims = matrix[rs:re_] @ matrix[cs:ce].T
            if rs == cs:
                sims[np.tril_indices(re_ - rs)] = -2.0  # each pair once: right of the diagonal only
            # Below the merge threshold a pair is only worth a look when it has the same words,
            # or opposite polarity about the same topic.
            above = sims >= low
            keep = (sims >= merge_at) | (above & (key[rs:re_, None] == key[None, cs:ce]))
            ai, bi = np.nonzero(keep)
            pi, pj = np.nonzero(above & ~keep & (neg[rs:re_, None] != neg[None, cs:ce]))
            on_topic = signals.topic_may_overlap(pi + rs, pj + cs, SWAP_OVERLAP)
            ai = np.concatenate([ai, pi[on_topic]]) + rs
            bi = np.concatenate([bi, pj[on_topic]]) + cs
            if len(ai) > budget:
                out.truncated = True
                ai, bi = ai[:budget], bi[:budget]
            budget -= len(ai)
            for i, j in zip(ai.tolist(), bi.tolist(), strict=True):
                _classify(members[i], members[j], float(matrix[i] @ matrix[j]), merge_at, supersede_at, prof, out)
            if out.truncated:
                return
        _unapplied_corrections(members, matrix, signals.changes, supersede_at, out)


def _unapplied_corrections(
    members: list[MemoryRow], matrix: np.ndarray, changes: np.ndarray, supersede_at: float, out: _Pairs
) -> None:
    """Corrections that never replaced what they correct: what remember would have superseded.

    remember looks at the few nearest older memories of the same agent when a text with a change
    marker arrives; a correction that came in by import or with supersession off is judged here
    the same way.
    """
    order = sorted(range(len(members)), key=lambda i: (members[i].created_at, members[i].pk))
    rank = np.empty(len(members), dtype=np.int64)
    rank[order] = np.arange(len(members))
    agents: dict[str, int] = {}
    agent = np.array([agents.setdefault(r.agent, len(agents)) for r in members])
    listed = {frozenset((a.pk, b.pk)) for _, a, b, _ in out.conflicts}
    # remember never lets an episode supersede or be superseded by itself: neither does this check.
    facts = np.array([r.type != "episodic" for r in members], dtype=bool)
    marked = np.flatnonzero(changes & facts)
    for chunk in chunked(marked.tolist(), TILE):
        sims = matrix[chunk] @ matrix.T
        for row, i in enumerate(chunk):
            eligible = (rank < rank[i]) & (agent == agent[i]) & facts
            scores = np.where(eligible, sims[row], -2.0)
            k = min(MERGE_CANDIDATES, len(members))
            nearest = np.argpartition(-scores, k - 1)[:k]
            for j in sorted(nearest.tolist(), key=lambda j: -scores[j]):
                if scores[j] < supersede_at:
                    break
                old, new = members[j], members[i]
                reason = supersedes(old.content, new.content, float(scores[j]), supersede_at)
                if reason is None:
                    continue
                if frozenset((old.pk, new.pk)) not in listed:  # not already an opposite-polarity pair
                    out.conflicts.append(
                        (float(scores[j]), old, new, f"a correction that did not replace the older memory: {reason}")
                    )
                break


def _tiles(n: int, size: int = TILE) -> Iterable[tuple[int, int, int, int]]:
    """Square tiles on and above the diagonal of an n x n similarity matrix: bounded memory at any n."""
    for rs in range(0, n, size):
        for cs in range(rs, n, size):
            yield rs, min(n, rs + size), cs, min(n, cs + size)


def _classify(
    a: MemoryRow,
    b: MemoryRow,
    cosine: float,
    merge_at: float,
    supersede_at: float,
    prof: Callable[[MemoryRow], Profile],
    out: _Pairs,
) -> None:
    pa, pb = prof(a), prof(b)
    if a.agent == b.agent:
        if pa.words == pb.words:
            out.duplicates.append((cosine, a, b, True))
            return
        if cosine >= merge_at and not profile_blockers(pa, pb):
            out.duplicates.append((cosine, a, b, False))
            return
    if cosine < supersede_at or a.superseded_by == b.id or b.superseded_by == a.id:
        return
    if a.type == "episodic" or b.type == "episodic":
        return  # episodes are history: "the build failed" and later "the build did not fail" both happened
    if pa.negates != pb.negates and topic_overlap(pa, pb) >= SWAP_OVERLAP:
        out.conflicts.append((cosine, a, b, "opposite polarity"))


def _groups_of(pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Connected groups of pks (union-find): a, b and c with the same words are one group."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = defaultdict(list)
    for x in parent:
        groups[root(x)].append(x)
    return sorted(sorted(g) for g in groups.values())


def _pair_checks(store: Store, rows: list[MemoryRow], settings: AuditSettings, work: Work) -> tuple[Check, Check]:
    n = settings.examples
    duplicates = Check(
        "near_duplicates",
        "active pairs that remember would have merged (same namespace, agent and model)",
        WARNING,
        hint="`engram audit --fix` merges the exact ones; for the others keep one (`engram forget ID`), "
        "or leave them if they are different facts",
    )
    conflicts = Check(
        "conflicts",
        "similar active memories that disagree, with no supersession between them",
        WARNING,
        hint='decide which holds: `engram add --supersedes ID "…"` records a correction, `engram forget ID` drops one',
    )
    if settings.quick:
        duplicates.skipped = conflicts.skipped = "--quick skips the pairwise checks"
        return duplicates, conflicts
    pairs = _Pairs()
    _similar_pairs(store, rows, settings, pairs)
    pairs.duplicates.sort(key=lambda p: (-p[0], p[1].pk, p[2].pk))
    pairs.conflicts.sort(key=lambda p: (-p[0], p[1].pk, p[2].pk))
    exact = [(a.pk, b.pk) for _, a, b, is_exact in pairs.duplicates if is_exact]
    work.exact_groups = _groups_of(exact)
    duplicates.count = len(pairs.duplicates)
    duplicates.examples = [
        {
            "id": a.id[:8],
            "other_id": b.id[:8],
            "cosine": round(cos, 4),
            "exact": is_exact,
            "text": excerpt(a.content),
            "other_text": excerpt(b.content),
        }
        for cos, a, b, is_exact in pairs.duplicates[:n]
    ]
    duplicates.details = {
        "exact_pairs": len(exact),
        "exact_groups": len(work.exact_groups),
        "thresholds": pairs.thresholds,
        "truncated": pairs.truncated,
    }
    conflicts.count = len(pairs.conflicts)
    conflicts.examples = [
        {
            "id": a.id[:8],
            "other_id": b.id[:8],
            "cosine": round(cos, 4),
            "reason": reason,
            "text": excerpt(a.content),
            "other_text": excerpt(b.content),
        }
        for cos, a, b, reason in pairs.conflicts[:n]
    ]
    conflicts.details = {"thresholds": pairs.thresholds, "truncated": pairs.truncated}
    return duplicates, conflicts


def _scan(store: Store, settings: AuditSettings, scope: _Scope, moment: datetime) -> _Scan:
    work = Work()
    n = settings.examples
    with store.read():
        integrity, damage = _integrity(store, settings.quick, n)
        try:
            rows = store.memories.scan(Filters(namespaces=scope.namespaces, statuses=[]))
            checks = [integrity, _secrets(store, rows, scope, n, work, settings.contact)]
            checks.extend(_index(store, rows, n, work))
            checks.append(_other_model(rows, settings.active_model, store.setting(TARGET_MODEL_KEY)))
            checks.extend(_pair_checks(store, rows, settings, work))
            checks.extend(_age_checks(rows, settings, moment))
        except DatabaseDamaged as exc:
            _unreadable(integrity, exc)
            return _Scan({integrity.name: integrity}, Work(), exc)
    return _Scan({c.name: c for c in checks}, work, damage)


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
