"""recall: filter in the store, rank by fused vector + keyword ranks, weigh by importance and decay, and drop
what is probably not relevant (a calibrated probability from the raw evidence, ``memory.relevance``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from engram_cli.errors import InvalidInput
from engram_cli.lang import text as textmod
from engram_cli.lang import timeexpr
from engram_cli.memory import crosslingual
from engram_cli.memory import relevance as relevancemod
from engram_cli.memory.model import IMPORTANCE_BASE, Filters, Memory
from engram_cli.serialize import to_json
from engram_cli.store.db import Store
from engram_cli.store.vectors import MAX_KNN
from engram_cli.timeutil import iso_now, now, to_iso

if TYPE_CHECKING:
    from engram_cli.memory.evidence import EvidenceHit

log = logging.getLogger(__name__)

# Rows scored exactly when KNN with over-sampling cannot fill the candidate list
# because the filters are narrower than what the vector index can filter itself.
EXACT_SCAN_LIMIT = 5000
# The best k x HEAD candidates are the ones that can still be returned: enough to refill the top k after
# near-copies of better hits are moved behind them.
HEAD = 3
# Share of their words two hits must have in common to count as copies of each other.
COPY_OVERLAP = 0.6


@dataclass(frozen=True)
class RecallSettings:
    """How recall ranks. No defaults here: the ``Engram`` facade builds it from the ``recall.*`` settings,
    so a library call and the command line rank alike."""

    candidates: int
    rrf_k: int
    vector_weight: float  # 0 leaves the vector retriever out entirely
    keyword_weight: float  # 0 leaves the keyword retriever out entirely
    # False ranks by relevance alone (the baselines of `engram eval`), without importance x decay.
    weigh: bool
    # Weight of the lists restricted to a time the query names ("last week", 上个月); 0 ignores time words.
    time_weight: float
    # Weight of the cross-language list (the query moved into the other script's region); 0 leaves it out.
    cross_weight: float
    # A hit this close (cosine, same model) to a better one is a near-copy: it goes after the rest.
    # None turns the check off.
    diversity: float | None
    # Hits whose calibrated relevance (the chance they are relevant) is lower are dropped; 0 keeps every hit.
    min_relevance: float


@dataclass
class Hit:
    memory: Memory
    score: float  # what ranks: fused ranks x importance x decay
    relevance: float  # the calibrated chance that the memory is relevant to the query, in [0, 1]
    explain: dict[str, Any]
    # Where the memory lives seen from the caller: "project", "global" or "other" (the facade sets it).
    scope: str = "other"

    def json_form(self, *, explain: bool = False, **options: Any) -> dict[str, Any]:
        # The memory's keys, then its score, relevance and scope; the factors only when asked for (`--explain`).
        out: dict[str, Any] = to_json(self.memory, **options)
        out["score"] = round(self.score, 6)
        out["relevance"] = round(self.relevance, 4)
        out["scope"] = self.scope
        if explain:
            out["explain"] = self.explain
        return out

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        """The JSON form, as `recall --json` prints it (with ``explain``: every factor of the score)."""
        return self.json_form(explain=explain)


class Hits(list[Hit]):
    """recall's hits, best first, and what the relevance floor held back.

    The list holds memories only; turns of conversations found after them are in ``evidence``.
    """

    def __init__(
        self,
        hits: Sequence[Hit] = (),
        *,
        floor: float = 0.0,
        below: Sequence[float] = (),
        evidence: Sequence[EvidenceHit] = (),
    ) -> None:
        super().__init__(hits)
        self.floor = floor
        # The relevance of each candidate dropped for being under the floor.
        self.below = list(below)
        # Evidence hits (turns of ingested conversations), best first, shown after the memories.
        self.evidence = list(evidence)

    @property
    def nothing_relevant(self) -> bool:
        """True when there were candidates, but none cleared the floor."""
        return not self and not self.evidence and bool(self.below)


QueryEmbedder = Callable[[str, str], np.ndarray]  # (model_id, query) -> unit vector


def _ask(want: int) -> int:
    return min(MAX_KNN, max(want * 4, 100))


MAX_INDEX_NAMESPACES = 4  # more namespaces than this are checked in SQL rather than by the vector search


def _index_namespaces(filters: Filters) -> list[str] | None:
    """The namespaces the vector search itself keeps to (None: every one, and SQL checks the namespace)."""
    if filters.namespaces and len(filters.namespaces) <= MAX_INDEX_NAMESPACES:
        return filters.namespaces
    return None


def _index_keeps_all(filters: Filters) -> bool:
    """Whether the vector search applies every filter in ``filters`` itself: the vector rows carry each
    memory's namespace, status, type and agent (kept in step by every write; audit's missing_index check
    finds rows where they are not, and --fix rewrites them), so its neighbours need no check in SQL."""
    # An empty list of namespaces keeps nothing; the search is not asked to keep to it (see _index_namespaces).
    namespaces_kept = filters.namespaces is None or _index_namespaces(filters) is not None
    return namespaces_kept and filters.restricts_only("namespaces", "agent", "types", "statuses")


def _nearest(
    store: Store, model_id: str, qvec: np.ndarray, shift: np.ndarray | None, filters: Filters, want: int
) -> list[Any]:
    """The raw KNN lists of the query and, with ``shift``, of the query moved by it (the cross-language list),
    found in one pass over the rows that the index filters keep."""
    return store.vectors.knn_many(
        model_id, [qvec], _ask(want), namespaces=_index_namespaces(filters),
        statuses=filters.statuses or None, types=filters.types or None, agent=filters.agent, shift=shift,
    )  # fmt: skip


def _vector_candidates(
    store: Store, model_id: str, qvec: np.ndarray, filters: Filters, want: int, near: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """Up to ``want`` rows that pass every filter, nearest first, from ``near`` (the query's raw KNN list)."""
    if not near:
        return []
    if _index_keeps_all(filters):
        return near[:want]
    allowed = store.memories.passing([pk for pk, _ in near], filters)
    kept = [(pk, sim) for pk, sim in near if pk in allowed]
    if len(kept) >= want or len(near) < _ask(want):
        return kept[:want]
    # Filters the vector index cannot apply (tags, time) threw most neighbours away:
    # score the rows that pass them exactly instead, when there are few enough.
    pks = store.memories.pks(filters, model=model_id, limit=EXACT_SCAN_LIMIT + 1)
    if len(pks) > EXACT_SCAN_LIMIT:
        log.info("filters too broad for an exact scan; using %d KNN survivors", len(kept))
        return kept[:want]
    return store.vectors.similarities(model_id, qvec, pks)[:want]


def recall(
    store: Store,
    query: str,
    *,
    k: int,
    filters: Filters,
    embed_query: QueryEmbedder,
    settings: RecallSettings,
    bump: bool = True,
    at: datetime | None = None,
) -> Hits:
    """The ``k`` best memories for ``query`` among those that pass ``filters`` and clear the relevance floor.

    Only the hits returned count as accessed (``bump``): a query nothing answers touches nothing.
    """
    query = textmod.normalize(query)
    if not query:
        raise InvalidInput(
            "the query is empty", hint='pass what you want to remember, e.g. engram recall "deploy steps"'
        )
    if k < 1:
        raise InvalidInput(f"k must be at least 1, not {k}")
    if not 0.0 <= settings.min_relevance <= 1.0:
        raise InvalidInput(
            f"`min_relevance` must be between 0 and 1, not {settings.min_relevance:g}",
            hint="it is the least chance of being relevant a hit needs; 0 keeps every hit",
            param="min_relevance",
        )
    when = timeexpr.find_time(query, at or now()) if settings.time_weight > 0 else None
    if when is not None:
        # The time words pick the window; they are not what the memory is about.
        query = timeexpr.strip_time(query, when) or query
    want = max(settings.candidates, k)
    query_script = textmod.script_of(query)
    means: dict[str, dict[str, np.ndarray]] = {}
    for model_id, _ in store.vectors.in_use():
        means[model_id] = crosslingual.script_means(store, model_id)
    with store.read():
        models = store.memories.models(filters)
        vector_lists: dict[str, list[tuple[int, float]]] = {}
        cross_lists: dict[str, tuple[str, list[tuple[int, float]]]] = {}
        # model -> the query's vector; computed even when the vector retriever is off, because the
        # relevance of every hit is judged on its cosine.
        query_vectors: dict[str, np.ndarray] = {}
        moved_vectors: dict[str, tuple[str, np.ndarray]] = {}  # model -> (other script, the moved query)
        near: dict[str, list[Any]] = {}  # model -> the raw KNN lists of the query (and its shift)
        for model_id in models:
            qvec = embed_query(model_id, query)
            query_vectors[model_id] = qvec
            moved = crosslingual.shifted(qvec, query_script, means.get(model_id, {}))
            if moved is not None:
                moved_vectors[model_id] = moved
            if settings.vector_weight <= 0:
                continue
            # The query and its cross-language shift are scored in one pass; the time window's list
            # (same index filters, only filtered further) reuses the query's.
            cross = moved if moved is not None and settings.cross_weight > 0 else None
            step = crosslingual.shift(query_script, means.get(model_id, {})) if cross is not None else None
            near[model_id] = _nearest(store, model_id, qvec, None if step is None else step[1], filters, want)
            vector_lists[model_id] = _vector_candidates(store, model_id, qvec, filters, want, near[model_id][0])
            if cross is not None:
                found = _vector_candidates(store, model_id, cross[1], filters, want, near[model_id][1])
                cross_lists[model_id] = (cross[0], found)
        window = None
        if when is not None:
            window = replace(filters, since=_later(filters.since, when.start), until=_earlier(filters.until, when.end))
        keyword: list[tuple[int, float]] = []
        in_window: list[list[tuple[int, float]]] = []
        if settings.keyword_weight > 0:
            # The time window's list comes from the same ranking of the matches as the query's.
            keyword, *in_window = store.keywords.search_many(
                textmod.query_terms(query), [filters] if window is None else [filters, window], want
            )
        timed: dict[str, list[tuple[int, float]]] = {}
        if window is not None:
            for model_id, qvec in query_vectors.items() if settings.vector_weight > 0 else []:
                timed[f"vector:{model_id}"] = _vector_candidates(store, model_id, qvec, window, want, near[model_id][0])
        if in_window:
            timed["keyword"] = in_window[0]

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
        memories = store.memories.load_many(list(set(fused) | cross_pks))
    wc = 0.0
    for model_id, (other, found) in cross_lists.items():
        # Only what the shift brought in from the other language counts in this list.
        kept = [(pk, sim) for pk, sim in found if pk in memories and textmod.script_of(memories[pk].content) == other]
        for rank, (pk, sim) in enumerate(kept, start=1):
            fused.setdefault(pk, {})["cross"] = {"model": model_id, "rank": rank, "cosine": round(sim, 6)}
        if kept:
            wc = settings.cross_weight
    if not fused:
        return Hits(floor=settings.min_relevance)
    with store.read():
        evidence = _evidence(store, query, query_script, when, memories, list(fused), query_vectors, moved_vectors)
    wv = settings.vector_weight if any(vector_lists.values()) else 0.0
    wk = settings.keyword_weight if keyword else 0.0
    # The window's lists count as one (their best rank), so a time word cannot outweigh the query itself.
    best = (wv + wk + wc + wt) / (settings.rrf_k + 1)

    scored: list[Hit] = []
    below: list[float] = []
    for pk, parts in fused.items():
        memory = memories.get(pk)
        if memory is None:
            continue
        calibration = relevancemod.calibration_for(memory.embedding_model)
        chance = calibration.probability(evidence[pk])
        if chance < settings.min_relevance:
            below.append(chance)
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
        fusion = rrf / best if best else 0.0
        factor = IMPORTANCE_BASE + memory.importance
        score = fusion * factor * memory.decay_score if settings.weigh else fusion
        scored.append(Hit(memory=memory, score=score, relevance=chance, explain={}))
        parts["fusion"], parts["calibration"] = fusion, calibration.model
    scored.sort(key=lambda h: (-h.score, h.memory.created_at))
    # Every factor of a hit's score, for the hits that can still be returned (the top k, and the
    # candidates that replace near-copies moved down): building them for every candidate cost
    # more than a millisecond of each recall.
    for hit in scored[: k * HEAD]:
        parts, memory = fused[hit.memory.pk], hit.memory
        hit.explain.update(
            {
                "vector": parts.get("vector"),
                "keyword": parts.get("keyword"),
                "cross_language": parts.get("cross"),
                "time_window": parts.get("time"),
                "fusion": round(parts["fusion"], 6),
                "importance": round(memory.importance, 6),
                "importance_factor": round(IMPORTANCE_BASE + memory.importance, 6),
                "decay_score": round(memory.decay_score, 6),
                "score": round(hit.score, 6),
                "formula": "fusion x (0.6 + importance) x decay_score; fusion = weighted reciprocal-rank "
                f"fusion (k={settings.rrf_k}) of the vector, keyword, cross-language and time-window ranks, "
                "1.0 = first in every list",
                "relevance": round(hit.relevance, 6),
                "evidence": evidence[memory.pk].json_form(),
                "relevance_model": f"logistic on the evidence, calibrated for {parts['calibration']}; "
                f"hits under {settings.min_relevance:g} are dropped",
            }
        )
    if settings.diversity is not None and len(scored) > 1:
        with store.read():
            scored = _diversify(store, scored, k, settings.diversity)
    top = scored[:k]
    with store.read():
        sources = store.sources.of_many([hit.memory.pk for hit in top])
    for hit in top:
        hit.memory.sources = sources.get(hit.memory.pk, [])
    if bump and top:
        count_access(store, top)
    return Hits(top, floor=settings.min_relevance, below=below)


def _evidence(
    store: Store,
    query: str,
    query_script: str,
    when: timeexpr.TimeRange | None,
    memories: dict[int, Memory],
    pks: list[int],
    query_vectors: dict[str, np.ndarray],
    moved_vectors: dict[str, tuple[str, np.ndarray]],
) -> dict[int, relevancemod.Evidence]:
    """What each candidate has going for it, measured the same way whichever list brought it in."""
    present = [pk for pk in pks if pk in memories]
    by_model: dict[str, list[int]] = {}
    for pk in present:
        model_id = memories[pk].embedding_model
        if model_id in query_vectors:
            by_model.setdefault(model_id, []).append(pk)
    cosines: dict[int, float] = {}
    crosses: dict[int, float] = {}
    scripts = {pk: textmod.script_of(memories[pk].content) for pk in present}
    for model_id, model_pks in by_model.items():
        moved = moved_vectors.get(model_id)
        for pk, vector in store.vectors.lookup(model_id, model_pks).items():
            cosines[pk] = float(np.dot(vector, query_vectors[model_id]))
            if moved is not None and scripts[pk] == moved[0]:
                crosses[pk] = float(np.dot(vector, moved[1]))
    shares = _keyword_shares(store, textmod.query_terms(query), present)
    window = (to_iso(when.start), to_iso(when.end)) if when is not None else None
    return {
        pk: relevancemod.Evidence(
            cosine=cosines.get(pk),
            cross_cosine=crosses.get(pk),
            keyword=shares.get(pk, 0.0),
            time=None if window is None else window[0] <= memories[pk].created_at < window[1],
            query_script=query_script,
            memory_script=scripts[pk],
        )
        for pk in present
    }


def _keyword_shares(store: Store, terms: list[str], pks: list[int]) -> dict[int, float]:
    """pk -> the idf-weighted share of ``terms`` its keyword row holds."""
    if not terms or not pks:
        return {}
    documents = store.keywords.documents()
    counts = store.keywords.term_counts(terms, pks)
    # BM25's idf: rare terms weigh most; never negative, and a term no memory has still counts (its
    # absence is evidence that the answer is not here).
    idf = {t: math.log(1 + (documents - counts.get(t, (0,))[0] + 0.5) / (counts.get(t, (0,))[0] + 0.5)) for t in terms}
    total = sum(idf.values())
    return {pk: sum(idf[t] for t, (_, held) in counts.items() if pk in held) / total for pk in pks}


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
    head = ranked[: k * HEAD]
    by_model: dict[str, list[int]] = {}
    for hit in head:
        if hit.memory.embedding_model:
            by_model.setdefault(hit.memory.embedding_model, []).append(hit.memory.pk)
    vecs: dict[int, np.ndarray] = {}
    for model_id, pks in by_model.items():
        vecs.update(store.vectors.lookup(model_id, pks))
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
    return kept + copies + ranked[k * HEAD :]


def count_access(store: Store, hits: list[Hit]) -> None:
    """Being recalled is being remembered: count the access and restore freshness."""
    now = iso_now()
    with store.write():
        store.memories.record_access([h.memory.pk for h in hits], now)
    for hit in hits:
        hit.memory.access_count += 1
        hit.memory.last_access_at = now
        hit.memory.decay_score = 1.0
