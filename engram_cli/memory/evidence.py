"""The conversation as evidence: storing the kept turns of ingested sessions, finding them, keeping them bounded.

A turn is evidence, never a memory: it has no type, importance or status, is not in cards or in
`list`, and recall reaches it only after the memories (to fill the places they left, or when asked).
Each is embedded with the ends of its neighbouring turns as context (:func:`passage`), keyword-indexed
like a memory, and linked to the memories made from it. Its weight in recall fades like an episode's
(the episodic half-life, counted from when engram learned it); ``evidence.max_age_days`` and
``evidence.max_per_namespace`` bound how much is kept.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from engram_cli.lang import text as textmod
from engram_cli.memory import relevance as relevancemod
from engram_cli.memory.decay import decay_score
from engram_cli.memory.model import Filters, Turn
from engram_cli.store.db import Store
from engram_cli.timeutil import from_iso, now, to_iso

if TYPE_CHECKING:
    import numpy as np  # imported by search(): `engram inspect` lists a memory's turns without it

# How much of each neighbouring turn goes into a turn's passage (its vector), for context.
CONTEXT_CHARS = 240
# What a turn counts as when it fades: below "high importance", so it fades to the low floor like an
# ordinary episode (see decay.decay_score).
TURN_IMPORTANCE = 0.3


def passage(before: str, content: str, after: str) -> str:
    """The text a turn's vector is made from: the turn, with the ends of its neighbours as context."""
    head = before[-CONTEXT_CHARS:].strip()
    tail = after[:CONTEXT_CHARS].strip()
    return "\n".join(part for part in (head, content, tail) if part)


def passage_of(store: Store, turn: Turn) -> str:
    """A stored turn's passage, its neighbours read from the store."""
    before, after = store.evidence.neighbours(turn)
    return passage(before, turn.content, after)


@dataclass(frozen=True)
class Bounds:
    """How much evidence is kept (from the ``evidence.*`` settings)."""

    max_per_namespace: int  # 0: no cap
    max_age_days: float  # 0: no age limit


def prune(
    store: Store, bounds: Bounds, *, namespaces: Sequence[str] | None = None, at: datetime | None = None,
    dry_run: bool = False,
) -> int:  # fmt: skip
    """Delete the turns learned longer ago than the age limit, then the oldest past each namespace's cap.

    Within the caller's transaction if there is one. Turns no memory was made from go before those
    some memory was. Returns how many turns went (``dry_run``: would go, and nothing is deleted).
    """
    with store.write() if not dry_run else store.read():
        doomed: set[int] = set()
        if bounds.max_age_days > 0:
            cutoff = to_iso((at or now()) - timedelta(days=bounds.max_age_days))
            doomed.update(store.evidence.learned_before(cutoff, namespaces))
        if bounds.max_per_namespace > 0:
            for namespace, count in sorted(store.evidence.counts_by_namespace(namespaces).items()):
                if count > bounds.max_per_namespace:
                    doomed.update(store.evidence.oldest_beyond(namespace, bounds.max_per_namespace))
        if not dry_run and doomed:
            store.evidence.delete(sorted(doomed))
    return len(doomed)


def of_memory(store: Store, memory_pk: int) -> list[Turn]:
    with store.read():
        return store.evidence.of_memory(memory_pk)


def purge_for(store: Store, memory_pk: int, content: str) -> int:
    """Within a purge (`forget --hard`): the memory's turns no other memory was made from, and every turn
    that says its text word for word. Returns how many turns went.

    A session's digest (what ingest keeps between reads of a log: the task, what the assistant said
    before its first change …) may quote a purged turn: such a quote is blanked too, so the words
    leave the file with the turn.
    """
    linked = [t.pk for t in store.evidence.of_memory(memory_pk)]
    shared = store.evidence.linked_elsewhere(linked, memory_pk)
    doomed = {pk for pk in linked if pk not in shared}
    if content.strip():
        doomed.update(store.evidence.containing(content.strip()))
    turns = list(store.evidence.load_many(sorted(doomed)).values())
    _blank_quotes(store, [(t.source, t.session) for t in turns], [t.content for t in turns] + [content])
    return store.evidence.delete(sorted(doomed))


# A digest string shorter than this is a flag or a count, not a quote worth blanking.
_QUOTE_MIN = 12


def _blank_quotes(store: Store, sessions: list[tuple[str, str]], texts: list[str]) -> None:
    """Blank every string of those sessions' digests that is part of one of ``texts`` (or holds one)."""
    said = [t.strip() for t in texts if len(t.strip()) >= _QUOTE_MIN]
    if not said:
        return

    def quotes(value: str) -> bool:
        v = value.strip().rstrip(".…")
        return len(v) >= _QUOTE_MIN and any(v in t or t in value for t in said)

    def blank(value: Any) -> Any:
        if isinstance(value, str):
            return "" if quotes(value) else value
        if isinstance(value, list):
            return [blank(v) for v in value]
        if isinstance(value, dict):
            return {k: blank(v) for k, v in value.items()}
        return value

    for source, key, text in store.ingest.digests_of(sessions):
        try:
            digest = json.loads(text)
        except ValueError:
            continue
        cleaned = blank(digest)
        if cleaned != digest:
            store.ingest.replace_digest(source, key, json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")))


# -- recall -------------------------------------------------------------------------------------


@dataclass
class EvidenceHit:
    """A turn of a conversation that recall found: it says it is evidence, and names its session."""

    turn: Turn
    score: float  # fusion x freshness: ranks evidence among evidence (memories always come first)
    relevance: float  # the calibrated chance that it is relevant, by the same model as a memory's
    explain: dict[str, Any] = field(default_factory=dict)
    scope: str = "other"

    def json_form(self, *, explain: bool = False, **options: Any) -> dict[str, Any]:
        t = self.turn
        out: dict[str, Any] = {
            "evidence": True, "evidence_id": t.pk, "kind": t.kind, "content": t.content, "session": t.session,
            "source": t.source, "namespace": t.namespace, "occurred_at": t.occurred_at, "learned_at": t.learned_at,
            "score": round(self.score, 6), "relevance": round(self.relevance, 4), "scope": self.scope,
        }  # fmt: skip
        if explain:
            out["explain"] = self.explain
        return out

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        return self.json_form(explain=explain)


QueryEmbedder = Callable[[str, str], "np.ndarray"]


def memory_only(filters: Filters) -> list[str]:
    """The filters that only memories have (a turn has no type, tags, agent or access): their names."""
    named = {
        "type": bool(filters.types), "tags": bool(filters.tags), "agent": filters.agent is not None,
        "embedding model": filters.embedding_model is not None,
        "accessed": filters.accessed_since is not None or filters.accessed_until is not None,
    }  # fmt: skip
    return [name for name, on in named.items() if on]


def search(
    store: Store,
    query: str,
    *,
    k: int,
    filters: Filters,
    embed_query: QueryEmbedder,
    candidates: int,
    rrf_k: int,
    vector_weight: float,
    keyword_weight: float,
    min_relevance: float,
    half_life_days: float,
    at: datetime | None = None,
) -> tuple[list[EvidenceHit], list[float]]:
    """The ``k`` best turns for ``query`` in the filters' namespaces (and time and session), and the relevance
    of each candidate the floor dropped. Ranked as memories are: vector and keyword lists fused by
    reciprocal rank, each hit judged by the calibrated relevance model on the same evidence features."""
    import numpy as np

    query = textmod.normalize(query)
    if not query or k < 1:
        return [], []
    want = max(candidates, k)
    namespaces = filters.namespaces
    terms = textmod.query_terms(query)
    script = textmod.script_of(query)
    with store.read():
        query_vectors = {model: embed_query(model, query) for model in store.evidence.models()}
        vector_lists = {
            model: store.evidence.knn(model, qvec, want, namespaces) if vector_weight > 0 else []
            for model, qvec in query_vectors.items()
        }
        keyword = store.evidence.search(terms, namespaces, want) if keyword_weight > 0 else []
        fused: dict[int, dict[str, Any]] = {}
        for model, found in vector_lists.items():
            for rank, (pk, sim) in enumerate(found, start=1):
                fused.setdefault(pk, {})["vector"] = {"model": model, "rank": rank, "cosine": round(sim, 6)}
        for rank, (pk, bm25) in enumerate(keyword, start=1):
            fused.setdefault(pk, {})["keyword"] = {"rank": rank, "bm25": round(bm25, 6)}
        turns = {pk: t for pk, t in store.evidence.load_many(list(fused)).items() if _passes(t, filters)}
        cosines: dict[int, float] = {}
        for model, qvec in query_vectors.items():
            pks = [pk for pk, t in turns.items() if t.embedding_model == model]
            for pk, vector in store.evidence.vectors_of(model, pks).items():
                cosines[pk] = float(np.dot(vector, qvec))
        shares = _keyword_shares(store, terms, list(turns))
    wv = vector_weight if any(vector_lists.values()) else 0.0
    wk = keyword_weight if keyword else 0.0
    best = (wv + wk) / (rrf_k + 1)
    moment = at or now()
    hits: list[EvidenceHit] = []
    below: list[float] = []
    for pk, turn in turns.items():
        parts = fused[pk]
        features = relevancemod.Evidence(
            cosine=cosines.get(pk), cross_cosine=None, keyword=shares.get(pk, 0.0), time=None,
            query_script=script, memory_script=textmod.script_of(turn.content),
        )  # fmt: skip
        calibration = relevancemod.calibration_for(turn.embedding_model)
        chance = calibration.probability(features)
        if chance < min_relevance:
            below.append(chance)
            continue
        rrf = 0.0
        if "vector" in parts:
            rrf += wv / (rrf_k + parts["vector"]["rank"])
        if "keyword" in parts:
            rrf += wk / (rrf_k + parts["keyword"]["rank"])
        fusion = rrf / best if best else 0.0
        days = (moment - from_iso(turn.learned_at)).total_seconds() / 86400
        fresh = decay_score(TURN_IMPORTANCE, days, half_life_days)
        score = fusion * fresh
        explain = {
            "vector": parts.get("vector"), "keyword": parts.get("keyword"), "fusion": round(fusion, 6),
            "freshness": round(fresh, 6), "score": round(score, 6), "relevance": round(chance, 6),
            "evidence": features.json_form(),
            "formula": "fusion x freshness (the episodic half-life from when it was learned); evidence comes after "
            "the memories",
        }  # fmt: skip
        hits.append(EvidenceHit(turn, score, chance, explain))
    hits.sort(key=lambda h: (-h.score, h.turn.pk))
    return hits[:k], below


def _passes(turn: Turn, filters: Filters) -> bool:
    """The filters a turn has a field for: namespace (already applied), when it happened, its session."""
    when = turn.occurred_at or turn.learned_at
    if filters.since is not None and when < filters.since:
        return False
    if filters.until is not None and when > filters.until:
        return False
    return filters.session is None or turn.session == filters.session


def _keyword_shares(store: Store, terms: list[str], pks: list[int]) -> dict[int, float]:
    """pk -> the idf-weighted share of ``terms`` its keyword row holds (as recall measures a memory's)."""
    if not terms or not pks:
        return {}
    documents = store.evidence.documents()
    holders = store.evidence.holders(terms)
    idf = {
        t: math.log(1 + (documents - len(holders.get(t, ())) + 0.5) / (len(holders.get(t, ())) + 0.5)) for t in terms
    }
    total = sum(idf.values())
    return {pk: sum(idf[t] for t, held in holders.items() if pk in held) / total for pk in pks}
