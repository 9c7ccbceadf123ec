"""recall: filter in SQL, rank by fused vector + keyword relevance, weigh by importance and decay."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from engram_cli.errors import InvalidInput
from engram_cli.lang import text as textmod
from engram_cli.lang import timeexpr
from engram_cli.memory import crosslingual, records
from engram_cli.memory.model import MEMORY_TYPES, STATUSES, Memory
from engram_cli.serialize import to_json
from engram_cli.store import vectors
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now, normalize_iso, now, to_iso

log = logging.getLogger(__name__)

# Rows scored exactly when KNN with over-sampling cannot fill the candidate list
# because the filters are narrower than what the vector index can filter itself.
EXACT_SCAN_LIMIT = 5000
IMPORTANCE_BASE = 0.6
# Share of their words two hits must have in common to count as copies of each other.
COPY_OVERLAP = 0.6


@dataclass
class Filters:
    """What recall, list and other reads may restrict to. Empty means no restriction."""

    namespaces: list[str] | None = None  # None: every namespace
    agent: str | None = None
    types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None
    accessed_since: str | None = None
    accessed_until: str | None = None
    statuses: list[str] = field(default_factory=lambda: ["active"])
    embedding_model: str | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        for mtype in self.types:
            if mtype not in MEMORY_TYPES:
                raise InvalidInput(f"unknown memory type {mtype!r}", hint=f"use one of: {', '.join(MEMORY_TYPES)}")
        for status in self.statuses:
            if status not in STATUSES:
                raise InvalidInput(f"unknown status {status!r}", hint=f"use one of: {', '.join(STATUSES)}")
        self.tags = sorted({t.strip().lower() for t in self.tags if t.strip()})
        self.since = normalize_iso(self.since, param="since") if self.since else None
        self.until = normalize_iso(self.until, param="until") if self.until else None
        self.accessed_since = (
            normalize_iso(self.accessed_since, param="accessed_since") if self.accessed_since else None
        )
        self.accessed_until = (
            normalize_iso(self.accessed_until, param="accessed_until") if self.accessed_until else None
        )

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        """A WHERE clause (without the keyword) over memories aliased as ``alias``."""
        a = alias
        clauses: list[str] = []
        params: list[Any] = []

        def any_of(column: str, values: Sequence[str]) -> None:
            clauses.append(f"{a}.{column} IN ({', '.join('?' for _ in values)})")
            params.extend(values)

        if self.namespaces is not None:
            any_of("namespace", self.namespaces)
        if self.agent is not None:
            clauses.append(f"{a}.agent_id = ?")
            params.append(self.agent)
        if self.types:
            any_of("memory_type", self.types)
        if self.statuses:
            any_of("status", self.statuses)
        for tag in self.tags:
            clauses.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.memory_pk = {a}.pk AND t.tag = ?)")
            params.append(tag)
        last = f"coalesce({a}.last_access_at, {a}.created_at)"
        for column, op, value in (
            (f"{a}.created_at", ">=", self.since),
            (f"{a}.created_at", "<=", self.until),
            (last, ">=", self.accessed_since),
            (last, "<=", self.accessed_until),
        ):
            if value is not None:
                clauses.append(f"{column} {op} ?")
                params.append(value)
        if self.embedding_model is not None:
            clauses.append(f"{a}.embedding_model = ?")
            params.append(self.embedding_model)
        if self.session is not None:
            clauses.append(f"{a}.session_id = ?")
            params.append(self.session)
        return (" AND ".join(clauses) or "1"), params


@dataclass(frozen=True)
class RecallSettings:
    candidates: int = 50
    rrf_k: int = 10
    vector_weight: float = 1.0  # 0 leaves the vector retriever out entirely
    keyword_weight: float = 1.0  # 0 leaves the keyword retriever out entirely
    # False ranks by relevance alone (the baselines of `engram eval`), without importance x decay.
    weigh: bool = True
    # Weight of the lists restricted to a time the query names ("last week", 上个月); 0 ignores time words.
    time_weight: float = 1.0
    # Weight of the cross-language list (the query moved into the other script's region); 0 leaves it out.
    cross_weight: float = 1.0
    # A hit this close (cosine, same model) to a better one is a near-copy: it goes after the rest.
    # None turns the check off.
    diversity: float | None = None


@dataclass
class Hit:
    memory: Memory
    score: float
    explain: dict[str, Any]

    def json_form(self, *, explain: bool = False, **options: Any) -> dict[str, Any]:
        # The memory's keys, then its score; the factors only when asked for (`recall --explain`).
        out: dict[str, Any] = to_json(self.memory, **options)
        out["score"] = round(self.score, 6)
        if explain:
            out["explain"] = self.explain
        return out

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        """The JSON form, as `recall --json` prints it (with ``explain``: every factor of the score)."""
        return self.json_form(explain=explain)


QueryEmbedder = Callable[[str, str], np.ndarray]  # (model_id, query) -> unit vector


def _vector_candidates(
    store: Store,
    table: str,
    model_id: str,
    qvec: np.ndarray,
    filters: Filters,
    where: str,
    params: list[Any],
    want: int,
) -> list[tuple[int, float]]:
    """Up to ``want`` rows that pass every filter, nearest first."""
    namespaces = filters.namespaces if filters.namespaces and len(filters.namespaces) <= 4 else None
    ask = min(vectors.MAX_KNN, max(want * 4, 100))
    near = vectors.knn(
        store, table, qvec, ask,
        namespaces=namespaces, statuses=filters.statuses or None, types=filters.types or None, agent=filters.agent,
    )  # fmt: skip
    if not near:
        return []
    allowed = _passing(store, [pk for pk, _ in near], where, params)
    kept = [(pk, sim) for pk, sim in near if pk in allowed]
    if len(kept) >= want or len(near) < ask:
        return kept[:want]
    # Filters the vector index cannot apply (tags, time) threw most neighbours away:
    # score the rows that pass them exactly instead, when there are few enough.
    pks = [
        int(r[0])
        for r in store.rows(
            f"SELECT m.pk FROM memories m WHERE {where} AND m.embedding_model = ? LIMIT ?",
            [*params, model_id, EXACT_SCAN_LIMIT + 1],
        )
    ]
    if len(pks) > EXACT_SCAN_LIMIT:
        log.info("filters too broad for an exact scan; using %d KNN survivors", len(kept))
        return kept[:want]
    return vectors.similarities(store, table, qvec, pks)[:want]


def _passing(store: Store, pks: list[int], where: str, params: list[Any]) -> set[int]:
    out: set[int] = set()
    for start in range(0, len(pks), 500):
        chunk = pks[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        rows = store.rows(f"SELECT m.pk FROM memories m WHERE m.pk IN ({marks}) AND {where}", [*chunk, *params])
        out.update(int(r[0]) for r in rows)
    return out


def _keyword_candidates(store: Store, query: str, where: str, params: list[Any], want: int) -> list[tuple[int, float]]:
    match = textmod.fts_query(query)
    if match is None:
        return []
    # The full-text matches are materialised first, then joined to the filters by primary key. Written as
    # "rowid IN (filtered memories)", SQLite hands every filtered rowid to FTS5 as a separate lookup: 2.8 s
    # per query at 40k memories instead of milliseconds.
    rows = store.rows(
        "WITH hits AS MATERIALIZED (SELECT rowid AS pk, bm25(memory_fts) AS rank FROM memory_fts "
        "WHERE memory_fts MATCH ?) "
        f"SELECT h.pk, h.rank FROM hits h JOIN memories m ON m.pk = h.pk WHERE {where} ORDER BY h.rank LIMIT ?",
        [match, *params, want],
    )
    return [(int(pk), -float(rank)) for pk, rank in rows]


def recall(
    store: Store,
    query: str,
    *,
    k: int,
    filters: Filters,
    embed_query: QueryEmbedder,
    settings: RecallSettings = RecallSettings(),
    bump: bool = True,
    at: datetime | None = None,
) -> list[Hit]:
    """The ``k`` best memories for ``query`` among those that pass ``filters``."""
    query = textmod.normalize(query)
    if not query:
        raise InvalidInput(
            "the query is empty", hint='pass what you want to remember, e.g. engram recall "deploy steps"'
        )
    if k < 1:
        raise InvalidInput(f"k must be at least 1, not {k}")
    when = timeexpr.find_time(query, at or now()) if settings.time_weight > 0 else None
    if when is not None:
        # The time words pick the window; they are not what the memory is about.
        query = timeexpr.strip_time(query, when) or query
    where, params = filters.sql("m")
    want = max(settings.candidates, k)
    query_script = textmod.script_of(query)
    means: dict[str, dict[str, np.ndarray]] = {}
    if settings.cross_weight > 0 and settings.vector_weight > 0:
        for model_id, vec_table in vectors.models_in_use(store):
            means[model_id] = crosslingual.script_means(store, model_id, vec_table)
    with store.read():
        # Ask the (tiny) model registry which models have a row in scope, rather than scanning every row.
        models = [
            str(r[0])
            for r in store.rows(
                "SELECT e.model_id FROM embedding_models e WHERE EXISTS "
                f"(SELECT 1 FROM memories m WHERE m.embedding_model = e.model_id AND {where})",
                params,
            )
        ]
        vector_lists: dict[str, list[tuple[int, float]]] = {}
        cross_lists: dict[str, tuple[str, list[tuple[int, float]]]] = {}
        query_vectors: dict[str, tuple[str, np.ndarray]] = {}  # model -> (its table, the query's vector)
        for model_id in models if settings.vector_weight > 0 else []:
            table = vectors.table_for(store, model_id)
            if table is None:
                continue
            qvec = embed_query(model_id, query)
            query_vectors[model_id] = (table, qvec)
            vector_lists[model_id] = _vector_candidates(store, table, model_id, qvec, filters, where, params, want)
            moved = crosslingual.shifted(qvec, query_script, means.get(model_id, {}))
            if moved is not None:
                other, qvec2 = moved
                found = _vector_candidates(store, table, model_id, qvec2, filters, where, params, want)
                cross_lists[model_id] = (other, found)
        keyword = _keyword_candidates(store, query, where, params, want) if settings.keyword_weight > 0 else []
        timed: dict[str, list[tuple[int, float]]] = {}
        if when is not None:
            window = replace(filters, since=_later(filters.since, when.start), until=_earlier(filters.until, when.end))
            twhere, tparams = window.sql("m")
            for model_id, (table, qvec) in query_vectors.items():
                timed[f"vector:{model_id}"] = _vector_candidates(
                    store, table, model_id, qvec, window, twhere, tparams, want
                )
            if settings.keyword_weight > 0:
                timed["keyword"] = _keyword_candidates(store, query, twhere, tparams, want)

    fused: dict[int, dict[str, Any]] = {}
    for model_id, hits in vector_lists.items():
        for rank, (pk, sim) in enumerate(hits, start=1):
            fused.setdefault(pk, {})["vector"] = {"model": model_id, "rank": rank, "cosine": round(sim, 6)}
    for rank, (pk, bm25) in enumerate(keyword, start=1):
        fused.setdefault(pk, {})["keyword"] = {"rank": rank, "bm25": round(bm25, 6)}
    wt = 0.0
    for name, hits in timed.items():
        for rank, (pk, _) in enumerate(hits, start=1):
            slot = fused.setdefault(pk, {}).setdefault("time", {"window": [when.text] if when else [], "ranks": {}})
            slot["ranks"][name] = rank
        if hits:
            wt = settings.time_weight
    cross_pks = {pk for _, found in cross_lists.values() for pk, _ in found}
    with store.read():
        memories = records.load_many(store, list(set(fused) | cross_pks))
    wc = 0.0
    for model_id, (other, found) in cross_lists.items():
        # Only what the shift brought in from the other language counts in this list.
        kept = [(pk, sim) for pk, sim in found if pk in memories and textmod.script_of(memories[pk].content) == other]
        for rank, (pk, sim) in enumerate(kept, start=1):
            fused.setdefault(pk, {})["cross"] = {"model": model_id, "rank": rank, "cosine": round(sim, 6)}
        if kept:
            wc = settings.cross_weight
    if not fused:
        return []
    wv = settings.vector_weight if any(vector_lists.values()) else 0.0
    wk = settings.keyword_weight if keyword else 0.0
    # The window's lists count as one (their best rank), so a time word cannot outweigh the query itself.
    best = (wv + wk + wc + wt) / (settings.rrf_k + 1)

    scored: list[Hit] = []
    for pk, parts in fused.items():
        memory = memories.get(pk)
        if memory is None:
            continue
        rrf = 0.0
        if "vector" in parts:
            rrf += wv / (settings.rrf_k + parts["vector"]["rank"])
        if "keyword" in parts:
            rrf += wk / (settings.rrf_k + parts["keyword"]["rank"])
        if "cross" in parts:
            rrf += wc / (settings.rrf_k + parts["cross"]["rank"])
        if "time" in parts:
            rrf += wt / (settings.rrf_k + min(parts["time"]["ranks"].values()))
        relevance = rrf / best if best else 0.0
        factor = IMPORTANCE_BASE + memory.importance
        score = relevance * factor * memory.decay_score if settings.weigh else relevance
        explain = {
            "vector": parts.get("vector"),
            "keyword": parts.get("keyword"),
            "cross_language": parts.get("cross"),
            "time_window": parts.get("time"),
            "relevance": round(relevance, 6),
            "importance": round(memory.importance, 6),
            "importance_factor": round(factor, 6),
            "decay_score": round(memory.decay_score, 6),
            "score": round(score, 6),
            "formula": "relevance x (0.6 + importance) x decay_score; relevance = weighted reciprocal-rank "
            f"fusion (k={settings.rrf_k}) of the vector, keyword, cross-language and time-window ranks, "
            "1.0 = first in every list",
        }
        scored.append(Hit(memory=memory, score=score, explain=explain))
    scored.sort(key=lambda h: (-h.score, h.memory.created_at))
    if settings.diversity is not None and len(scored) > 1:
        with store.read():
            scored = _diversify(store, scored, k, settings.diversity)
    top = scored[:k]
    with store.read():
        for hit in top:
            hit.memory.sources = records.sources_of(store, hit.memory.pk)
    if bump and top:
        _bump(store, top)
    return top


def _later(a: str | None, b: datetime) -> str:
    stamp = to_iso(b)
    return stamp if a is None or stamp > a else a


def _earlier(a: str | None, b: datetime) -> str:
    # ``until`` is inclusive in the filters; the window's end is exclusive.
    stamp = to_iso(b - timedelta(microseconds=1))
    return stamp if a is None or stamp < a else a


def _same_wording(a: str, b: str) -> bool:
    """Most words shared: a copy, not two memories that only mean something close (or share context)."""
    ta, tb = set(textmod.query_terms(a)), set(textmod.query_terms(b))
    return bool(ta and tb) and len(ta & tb) / len(ta | tb) >= COPY_OVERLAP


def _diversify(store: Store, ranked: list[Hit], k: int, threshold: float) -> list[Hit]:
    """Keep the order, but move a near-copy of a better hit behind every distinct one."""
    head = ranked[: k * 3]  # enough to refill the top k after moving copies down
    by_model: dict[str, list[int]] = {}
    for hit in head:
        if hit.memory.embedding_model:
            by_model.setdefault(hit.memory.embedding_model, []).append(hit.memory.pk)
    vecs: dict[int, np.ndarray] = {}
    for model_id, pks in by_model.items():
        table = vectors.table_for(store, model_id)
        if table:
            vecs.update(vectors.get(store, table, pks))
    kept: list[Hit] = []
    copies: list[Hit] = []
    for hit in head:
        v = vecs.get(hit.memory.pk)
        twin = v is not None and any(
            other.memory.embedding_model == hit.memory.embedding_model
            and (w := vecs.get(other.memory.pk)) is not None
            and float(np.dot(v, w)) >= threshold
            and _same_wording(hit.memory.content, other.memory.content)
            for other in kept
        )
        if twin:
            hit.explain["near_copy_of_better_hit"] = True
            copies.append(hit)
        else:
            kept.append(hit)
    return kept + copies + ranked[k * 3 :]


def _bump(store: Store, hits: list[Hit]) -> None:
    """Being recalled is being remembered: count the access and restore freshness."""
    now = iso_now()
    pks = [h.memory.pk for h in hits]
    marks = ", ".join("?" for _ in pks)
    with store.write():
        store.execute(
            "UPDATE memories SET access_count = access_count + 1, last_access_at = ?, decay_score = 1.0 "
            f"WHERE pk IN ({marks})",
            [now, *pks],
        )
    for hit in hits:
        hit.memory.access_count += 1
        hit.memory.last_access_at = now
        hit.memory.decay_score = 1.0
