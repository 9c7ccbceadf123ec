"""compact: consolidate episodes into facts, fold leftover duplicates, keep the store bounded.

One run, per namespace, in this order:

1. decay is recomputed as of ``now`` (faded memories are archived first, so they are
   not consolidated into something that looks fresh);
2. active episodic memories join an existing consolidated memory they are close to
   (cosine >= the model's cluster threshold): they become supporting evidence of it;
3. the remaining episodes are clustered: oldest first, each episode not yet taken
   becomes a leader and takes every untaken episode within the threshold (and the
   time window, if one is set); a group of at least ``min_cluster`` becomes ONE new
   semantic memory, written extractively (or by ``summarizer.command``);
4. episodes left over are offered once more to the memories made in step 3;
5. active near-duplicates (cosine >= the merge threshold, and no merge blocker such
   as different numbers or polarity) are folded into the more important one;
6. a hard cap archives the lowest importance x decay beyond ``compact.max_active``.

Nothing is deleted: a consolidated or folded memory is archived with
``consolidated_into`` pointing at the memory that now carries it, and keeps its
text, sources and events. Every step is planned from the same snapshot and applied
one group per transaction, re-checking each row's version, so writers that run at
the same time are never overwritten: a row they changed is simply left for the
next run. The plan is a fixed point: a second run right after the first finds
nothing to do.

Similar pairs come from :mod:`engram_cli.memory.neighbours`: every pair of a group up to
``neighbours.EXACT_ROWS`` rows (tiled products, only pairs above the threshold leave numpy), and
above that the pairs a cell search finds, near-linear in the rows; such a search misses a few
pairs, which a later run may still find, so on large groups the fixed point is approximate.

A dry run embeds nothing: a new memory's vector, needed to find its twin among the kept facts
(step 3) and the leftover episodes it takes in (step 4), is estimated as the normalised mean of
its episodes' vectors, so those joins are an estimate in a dry run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import numpy as np

from engram_cli import external
from engram_cli.errors import ConflictError, InvalidInput, NotFound
from engram_cli.lang import redact
from engram_cli.lang import text as textmod
from engram_cli.memory import decay as decaymod
from engram_cli.memory import neighbours, records
from engram_cli.memory.model import Filters, Memory, Source
from engram_cli.memory.remember import MAX_CONTENT_CHARS, MERGE_IMPORTANCE_BOOST
from engram_cli.memory.similarity import Profile, merge_decision, profile, stem
from engram_cli.serialize import to_json
from engram_cli.store.db import Store
from engram_cli.timeutil import from_iso, now, to_iso

log = logging.getLogger(__name__)

EmbedFn = Callable[[Sequence[str]], np.ndarray]
Progress = Callable[[int, int], None]

# Summary vectors compared with the kept facts at once: 256 x 100k float32 is 100 MB.
BLOCK = 256
SUMMARY_SENTENCES = 4
SUMMARY_CHARS = 480
# Decay differences below this are not worth a write during compact.
DECAY_STEP = 0.001
# Marks a memory as made by compact (and therefore one that later episodes may join).
META_KEY = "consolidated"


@dataclass(frozen=True)
class Thresholds:
    """Cluster thresholds of one model by the scripts of the two texts compared.

    Multilingual models put unrelated Chinese texts closer together than unrelated
    English ones, and texts across languages further apart, so one number cannot
    serve all three (see scripts/calibrate_compact.py).
    """

    latin: float
    cjk: float
    cross: float

    @classmethod
    def uniform(cls, value: float) -> Thresholds:
        return cls(value, value, value)

    def matrix(self) -> np.ndarray:
        """Indexed by script code (0 latin, 1 cjk) of leader and member."""
        return np.array([[self.latin, self.cross], [self.cross, self.cjk]], dtype=np.float32)


def script_codes(texts: Sequence[str]) -> np.ndarray:
    return np.array([textmod.SCRIPTS.index(textmod.script_of(t)) for t in texts], dtype=np.int8)


@dataclass(frozen=True)
class Settings:
    """What compact needs from the configuration; the ``Engram`` facade builds it from the settings
    (``compact.*``, ``summarizer.*``, ``decay.*``), which hold the defaults."""

    cluster_threshold: dict[str, Thresholds]  # per embedding model
    merge_threshold: dict[str, float]  # per embedding model
    half_lives: dict[str, float]
    min_cluster: int
    max_cluster: int
    window_days: float  # 0: no time window
    min_age_days: float
    max_active: int  # 0: no cap
    summarizer_command: str
    summarizer_timeout_s: float

    def __post_init__(self) -> None:
        if self.min_cluster < 2:
            raise InvalidInput("compact.min_cluster must be at least 2")
        if self.max_cluster < self.min_cluster:
            raise InvalidInput("compact.max_cluster must be at least compact.min_cluster")
        if self.max_active < 0 or self.window_days < 0 or self.min_age_days < 0:
            raise InvalidInput("compact.max_active, window_days and min_age_days cannot be negative")


# -- the plan ------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    """What planning needs of one active memory."""

    pk: int
    id: str
    type: str
    content: str
    created_at: str
    importance: float
    decay_score: float
    version: int
    consolidated: bool


@dataclass
class Cluster:
    """Episodes that become one new semantic memory."""

    namespace: str
    agent: str
    model: str
    members: list[Row]
    content: str = ""
    method: str = "extractive"
    vector: np.ndarray | None = None
    memory_id: str | None = None  # set when written (or, dry run, left None)
    promoted: bool = False  # the summary was one episode's own words: that episode became the fact

    def json_form(self, **options: Any) -> dict[str, Any]:
        # The episodes as a person checks them (id, text, date); the vector and the model stay inside.
        return {
            "namespace": self.namespace,
            "agent": self.agent,
            "episodes": [{"id": m.id, "content": m.content, "created_at": m.created_at} for m in self.members],
            "content": self.content,
            "method": self.method,
            "memory_id": self.memory_id,
            "promoted": self.promoted,
        }


@dataclass
class Fold:
    """One memory folded into another: an episode into a consolidated memory, or a near duplicate."""

    kind: str  # "joined" (episode -> consolidated memory) or "duplicate"
    namespace: str
    loser: Row
    winner_id: str
    winner_pk: int
    similarity: float

    def json_form(self, **options: Any) -> dict[str, Any]:
        # The folded memory by id and text, and the id it went into (row keys stay inside).
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "id": self.loser.id,
            "content": self.loser.content,
            "into": self.winner_id,
            "similarity": round(self.similarity, 6),
        }


@dataclass
class CompactReport:
    now: str
    dry_run: bool
    scanned: int = 0
    decay: decaymod.DecayReport | None = None
    clusters: list[Cluster] = field(default_factory=list)
    folds: list[Fold] = field(default_factory=list)
    capped: list[Row] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def consolidated(self) -> int:
        """Episodes archived into a consolidated memory (new or existing)."""
        return sum(len(c.members) for c in self.clusters) + sum(1 for f in self.folds if f.kind == "joined")

    @property
    def changed(self) -> bool:
        return bool(self.clusters or self.folds or self.capped or (self.decay and self.decay.changes))

    def json_form(self, **options: Any) -> dict[str, Any]:
        # Counts first, for scripts and cron mail; then the clusters and folds; capped rows by id only.
        return {
            "now": self.now,
            "dry_run": self.dry_run,
            "scanned": self.scanned,
            "created": len(self.clusters),
            "consolidated": self.consolidated,
            "joined": sum(1 for f in self.folds if f.kind == "joined"),
            "duplicates_folded": sum(1 for f in self.folds if f.kind == "duplicate"),
            "capped": len(self.capped),
            "decayed": len(self.decay.changes) if self.decay else 0,
            "archived_by_decay": self.decay.archived if self.decay else 0,
            "clusters": to_json(self.clusters, **options),
            "folds": to_json(self.folds, **options),
            "capped_ids": [r.id for r in self.capped],
            "skipped": self.skipped,
            "errors": self.errors,
        }


# -- extractive summaries -------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and len(s.strip()) > 1]


def _content_terms(text: str) -> set[str]:
    return {stem(t) for t in textmod.analyze(text) if t not in textmod.STOPWORDS and len(t) > 1}


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(" ,;:") + "…"


def extractive_summary(
    texts: Sequence[str], *, max_sentences: int = SUMMARY_SENTENCES, max_chars: int = SUMMARY_CHARS
) -> str:
    """The fewest sentences that cover what the texts have in common, in their original order.

    The first sentence is the one whose words the most texts share (the subject of the
    cluster, not one episode's detail). Further sentences are added only while they
    bring at least two more shared words, so details found in a single episode stay in
    the episodes (which remain searchable through the new memory's sources).
    Deterministic and language-neutral: CJK is scored on character bigrams.
    """
    docs = [_content_terms(t) for t in texts]
    df: dict[str, int] = {}
    for terms in docs:
        for term in terms:
            df[term] = df.get(term, 0) + 1
    shared = {t for t, n in df.items() if n >= 2}
    candidates: list[tuple[float, int, str, set[str]]] = []
    for position, sentence in enumerate(s for t in texts for s in _sentences(t)):
        terms = _content_terms(sentence)
        if terms:
            candidates.append((sum(df[t] for t in terms) / len(terms) ** 0.5, position, sentence, terms))
    if not candidates:
        return _clip(" ".join(t.strip() for t in texts if t.strip()), max_chars)
    candidates.sort(key=lambda c: (-c[0], c[1]))
    chosen = [candidates[0]]
    covered = set(candidates[0][3])
    used = len(candidates[0][2])
    while len(chosen) < max_sentences:
        best: tuple[int, tuple[float, int, str, set[str]]] | None = None
        for cand in candidates:
            gain = len((cand[3] & shared) - covered)
            fits = used + 1 + len(cand[2]) <= max_chars
            if gain >= 2 and fits and (best is None or gain > best[0]):
                best = (gain, cand)
        if best is None:
            break
        chosen.append(best[1])
        covered |= best[1][3]
        used += 1 + len(best[1][2])
    chosen.sort(key=lambda c: c[1])
    return _clip(" ".join(c[2] for c in chosen), max_chars)


def run_summarizer(command: str, cluster: Cluster, timeout: float) -> str:
    """Hand the cluster to the user's summariser as JSON on stdin; its stdout is the new memory's text."""
    payload = {
        "namespace": cluster.namespace,
        "agent": cluster.agent,
        "episodes": [
            {"id": m.id, "content": m.content, "created_at": m.created_at, "importance": m.importance}
            for m in cluster.members
        ],
        "extractive": cluster.content,
    }
    output = external.run_json(command, payload, setting="summarizer.command", timeout=timeout)
    # The program may echo what it was given or add text of its own: redact before clipping, so no cut
    # secret slips past the patterns.
    summary, _ = redact.redact(textmod.normalize(output))
    if not summary:
        raise InvalidInput("summarizer.command printed nothing")
    return summary[:MAX_CONTENT_CHARS]


# -- planning -----------------------------------------------------------------------


def _load_rows(store: Store, namespaces: Sequence[str] | None) -> dict[tuple[str, str, str], list[Row]]:
    groups: dict[tuple[str, str, str], list[Row]] = {}
    # Keyed facts are left out: one changes only through its key (`engram set`, `unset`), never by compaction.
    planned = store.memories.planning_rows(
        Filters(namespaces=None if namespaces is None else list(namespaces)), marked_by=META_KEY
    )
    for ns, agent, model, pk, mid, mtype, content, created, importance, decay, version, marked in planned:
        row = Row(pk, mid, mtype, content, created, importance, decay, version, bool(marked))
        groups.setdefault((ns, agent, str(model)), []).append(row)
    return groups


def _matrix(store: Store, model: str, namespace: str, rows: list[Row]) -> tuple[list[Row], np.ndarray]:
    """The rows that have a vector, and their vectors as one matrix (row order kept)."""
    found, matrix = store.vectors.matrix_of(model, [r.pk for r in rows], namespace=namespace)
    if not len(found):
        return [], np.zeros((0, 0), dtype=np.float32)
    have = set(found.tolist())
    return [r for r in rows if r.pk in have], matrix


@dataclass
class _Group:
    namespace: str
    agent: str
    model: str
    rows: list[Row]
    matrix: np.ndarray
    taken: np.ndarray  # rows claimed by a cluster or fold in this plan
    scripts: np.ndarray  # script code of each row's text (see Thresholds)


def _eligible(group: _Group, cutoff: str) -> np.ndarray:
    return np.array(
        [r.type == "episodic" and not r.consolidated and r.created_at <= cutoff for r in group.rows], dtype=bool
    )


def _join_anchors(
    group: _Group, anchors: np.ndarray, anchor_rows: list[Row], eligible: np.ndarray, thresholds: np.ndarray
) -> list[Fold]:
    """Eligible, untaken episodes close to a consolidated memory become its evidence (the closest one wins)."""
    folds: list[Fold] = []
    if not len(anchor_rows):
        return folds
    anchor_scripts = script_codes([r.content for r in anchor_rows])
    candidates = np.flatnonzero(eligible & ~group.taken)
    for start in range(0, len(candidates), 4096):
        idx = candidates[start : start + 4096]
        sims = group.matrix[idx] @ anchors.T
        passing = np.where(sims >= thresholds[group.scripts[idx]][:, anchor_scripts], sims, -np.inf)
        best = passing.argmax(axis=1)
        for k, i in enumerate(idx):
            score = float(passing[k, best[k]])
            if score > -np.inf:
                group.taken[i] = True
                anchor = anchor_rows[int(best[k])]
                folds.append(Fold("joined", group.namespace, group.rows[int(i)], anchor.id, anchor.pk, score))
    return folds


def _leader_clusters(group: _Group, eligible: np.ndarray, settings: Settings, thresholds: np.ndarray) -> list[Cluster]:
    """Oldest untaken episode first; it takes its untaken neighbours within the threshold (and window)."""
    clusters: list[Cluster] = []
    episodes = np.flatnonzero(eligible)
    if len(episodes) < settings.min_cluster:
        return clusters
    scripts = group.scripts[episodes]
    # The pairs above the lowest threshold, then each held to the threshold of its two scripts
    # (the matrix is symmetric, so it does not matter which side leads).
    # Above neighbours.EXACT_ROWS the pairs come from a cell search, each episode keeping its closest:
    # twice a cluster's room, so a leader still fills its cluster when some are taken.
    pairs = neighbours.near_pairs(group.matrix[episodes], float(thresholds.min()), per_row=2 * settings.max_cluster)
    pairs = pairs.take(pairs.score >= thresholds[scripts[pairs.left], scripts[pairs.right]])
    near = neighbours.Neighbours.of(len(episodes), pairs)
    times = None
    if settings.window_days:
        times = np.array([from_iso(group.rows[i].created_at).timestamp() for i in episodes])
    window = settings.window_days * 86400
    for offset, leader in enumerate(episodes.tolist()):
        if group.taken[leader] or near.count(offset) + 1 < settings.min_cluster:
            continue
        # Closest first (ties: the older episode), so a capped cluster keeps its core.
        candidates, _ = near.of_row(offset)
        members = [j for j in candidates if not group.taken[episodes[j]]]
        if times is not None:
            t0 = times[offset]
            members = [j for j in members if abs(times[j] - t0) <= window]
        if len(members) + 1 < settings.min_cluster:
            continue
        members = members[: settings.max_cluster - 1]
        chosen = sorted([leader, *(int(episodes[j]) for j in members)])
        group.taken[chosen] = True
        rows = [group.rows[i] for i in chosen]
        clusters.append(Cluster(group.namespace, group.agent, group.model, rows))
    return clusters


def _fold_duplicates(group: _Group, threshold: float) -> list[Fold]:
    """Near duplicates among the untaken rows fold into the most important of them.

    Rows are taken as survivors in order of importance (then age); each survivor takes
    every untaken row within the merge threshold that no merge blocker keeps apart. A
    survivor is never folded later, so the result does not depend on pair order and a
    second run finds nothing new.
    """
    folds: list[Fold] = []
    free = np.flatnonzero(~group.taken)
    if len(free) < 2:
        return folds
    pairs = neighbours.near_pairs(group.matrix[free], threshold, per_row=neighbours.CLOSEST)
    near = neighbours.Neighbours.of(len(free), pairs)
    # Only rows with a neighbour can fold or be folded (pairs are symmetric); in order of importance, then age.
    paired = np.flatnonzero(np.diff(near.starts) > 0)
    rows = [group.rows[int(free[k])] for k in paired]
    order = paired[
        np.lexsort((
            np.array([r.pk for r in rows], dtype=np.int64),
            np.array([r.created_at for r in rows], dtype=str),
            -np.array([r.importance for r in rows], dtype=np.float64),
        ))
    ].tolist() if len(paired) else []  # fmt: skip
    done = group.taken.copy()
    profiles: dict[int, Profile] = {}

    def prof(i: int) -> Profile:
        if i not in profiles:
            profiles[i] = profile(group.rows[i].content)
        return profiles[i]

    for k in order:
        i = int(free[k])
        if done[i]:
            continue
        done[i] = True
        survivor = group.rows[i]
        for j, similarity in zip(*near.of_row(k), strict=True):
            other = int(free[j])
            if done[other]:
                continue
            if merge_decision(prof(i), prof(other), similarity, threshold)[0]:
                done[other] = group.taken[other] = True
                folds.append(
                    Fold("duplicate", group.namespace, group.rows[other], survivor.id, survivor.pk, similarity)
                )
    return folds


# -- applying ----------------------------------------------------------------------------


def _fresh(store: Store, rows: Sequence[Row]) -> dict[int, Memory]:
    """The rows as they are now, keeping only those nobody changed since planning."""
    current = store.memories.load_many([r.pk for r in rows])
    return {
        r.pk: current[r.pk]
        for r in rows
        if r.pk in current and current[r.pk].status == "active" and current[r.pk].version == r.version
    }


def _archive_into(store: Store, memory: Memory, into_id: str, stamp: str, note: str) -> None:
    store.memories.set_status(memory, "archived", stamp, consolidated_into=into_id)
    store.events.add(
        memory.id, "archived", stamp,
        before={"status": "active"}, after={"status": "archived", "consolidated_into": into_id},
        note=note, actor="compact",
    )  # fmt: skip


def _write_cluster(store: Store, cluster: Cluster, settings: Settings, at: datetime, stamp: str) -> bool:
    """Write the new semantic memory and archive its episodes; False if the cluster fell apart meanwhile."""
    current = _fresh(store, cluster.members)
    members = [current[r.pk] for r in cluster.members if r.pk in current]
    if len(members) < settings.min_cluster:
        return False
    assert cluster.vector is not None
    content_hash = textmod.content_hash(cluster.content)
    same = store.memories.duplicate_of(cluster.namespace, cluster.agent, content_hash)
    host = next((m for m in members if m.pk == same), None)
    if same is not None and host is None:
        # Word for word a memory outside the cluster: leave the episodes to a person.
        return False
    # Decay goes on from the freshest member: when it was last used, or learned if never.
    last = max(m.decay_start for m in members)
    importance = min(1.0, max(m.importance for m in members) + MERGE_IMPORTANCE_BOOST)
    days = (at - from_iso(last)).total_seconds() / 86400
    score = decaymod.decay_score(importance, days, settings.half_lives["semantic"])
    first = min(m.created_at for m in members)
    latest = max(m.created_at for m in members)
    meta = {META_KEY: {"episodes": len(members), "first": first, "last": latest, "method": cluster.method}}
    summary = f"consolidated from {len(members)} episodes, {first[:10]} to {latest[:10]}"
    confidence = sum(m.confidence for m in members) / len(members)
    if host is not None:
        # The summary is one episode's own words (a one-sentence subject): that episode
        # becomes the fact, keeping its id and history, and the others fold into it.
        before = {"type": host.type, "importance": host.importance, "access_count": host.access_count}
        changes: dict[str, Any] = {
            "memory_type": "semantic", "summary": summary, "importance": importance, "confidence": confidence,
            "decay_score": score, "access_count": sum(m.access_count for m in members), "last_access_at": last,
            "metadata": {**host.metadata, **meta},
        }  # fmt: skip
        store.memories.update(host, stamp, **changes)
        store.vectors.set_type(cluster.model, host.pk, "semantic")
        store.events.add(
            host.id, "updated", stamp,
            before=before,
            after={"type": "semantic", "importance": importance, "access_count": changes["access_count"]},
            note=f"became the fact consolidating {len(members)} episodes", actor="compact",
        )  # fmt: skip
        memory_id, pk = host.id, host.pk
        members = [m for m in members if m.pk != host.pk]
        cluster.promoted = True
    else:
        fact = Memory(
            pk=0, id=records.new_id(), namespace=cluster.namespace, agent=cluster.agent, session=None,
            type="semantic", content=cluster.content, summary=summary, content_hash=content_hash,
            embedding_model=cluster.model, importance=importance, confidence=confidence, decay_score=score,
            access_count=sum(m.access_count for m in members), last_access_at=last, created_at=stamp,
            updated_at=stamp, status="active", version=1, superseded_by=None, consolidated_into=None, metadata=meta,
            # What it says was learned with its newest episode, not today: compaction is no new knowledge.
            learned_at=max(m.learned_at for m in members),
        )  # fmt: skip
        memory_id, pk = fact.id, store.memories.insert(fact)
        store.vectors.put(
            cluster.model, pk, cluster.vector,
            namespace=cluster.namespace, status="active", memory_type="semantic", agent=cluster.agent,
        )  # fmt: skip
    store.memories.add_tags(pk, sorted({t for m in members for t in m.tags}))
    for m in members:
        # The episode's words stay searchable through the fact that now carries them.
        store.sources.add(pk, Source(kind="compact", ref=m.id, session=m.session, content=m.content), stamp)
        store.evidence.copy_links(m.pk, pk)  # the fact was made from what its episodes were made from
        _archive_into(store, m, memory_id, stamp, f"consolidated into {memory_id[:8]}")
    records.reindex(store, pk)
    if host is None:
        store.events.add(
            memory_id, "created", stamp,
            after={"importance": importance, "type": "semantic", "namespace": cluster.namespace,
                   "agent": cluster.agent, "source": "compact", "episodes": [m.id for m in members]},
            note=f"consolidated {len(members)} episodes ({cluster.method})", actor="compact",
        )  # fmt: skip
    cluster.memory_id = memory_id
    return True


def _write_fold(store: Store, fold: Fold, stamp: str, rows: dict[int, Row]) -> bool:
    """Fold one memory into another; ``rows`` (the plan's rows) learn the winner's new version."""
    current = _fresh(store, [fold.loser])
    if fold.loser.pk not in current:
        return False
    loser = current[fold.loser.pk]
    try:
        winner = store.memories.load(fold.winner_pk, with_sources=False)
    except NotFound:  # the winner was purged meanwhile
        return False
    if winner.status != "active":
        return False
    before = {"importance": winner.importance, "access_count": winner.access_count}
    changes: dict[str, Any] = {"access_count": winner.access_count + loser.access_count}
    if fold.kind == "duplicate":
        changes["importance"] = min(1.0, max(winner.importance, loser.importance) + MERGE_IMPORTANCE_BOOST)
    stamps = [x for x in (winner.last_access_at, loser.last_access_at) if x]
    last = max(stamps) if stamps else None
    if last and last != winner.last_access_at:
        changes["last_access_at"] = last
    if fold.kind == "joined":
        meta = dict(winner.metadata)
        info = dict(meta.get(META_KEY) or {})
        info["episodes"] = int(info.get("episodes", 0)) + 1
        info["last"] = max(str(info.get("last", "")), loser.created_at)
        meta[META_KEY] = info
        changes["metadata"] = meta
    store.memories.update(winner, stamp, **changes)
    if winner.pk in rows:
        # Our own change: the winner may still be folded later in this run.
        rows[winner.pk].version = winner.version
    store.memories.add_tags(winner.pk, loser.tags)
    kind = "compact" if fold.kind == "joined" else "merged"
    store.sources.add(winner.pk, Source(kind=kind, ref=loser.id, session=loser.session, content=loser.content), stamp)
    store.evidence.copy_links(loser.pk, winner.pk)
    records.reindex(store, winner.pk)
    note = (
        f"episode {loser.id[:8]} joined, cosine {fold.similarity:.4f}"
        if fold.kind == "joined"
        else f"near duplicate {loser.id[:8]} folded in by compact, cosine {fold.similarity:.4f}"
    )
    store.events.add(
        winner.id, "merged", stamp,
        before=before, after={k: v for k, v in changes.items() if k != "metadata"}, note=note, actor="compact",
    )  # fmt: skip
    _archive_into(store, loser, winner.id, stamp, ("consolidated into " if fold.kind == "joined" else "duplicate of ")
                  + winner.id[:8])  # fmt: skip
    return True


def _cap(store: Store, settings: Settings, namespaces: Sequence[str] | None, report: CompactReport) -> list[Row]:
    """The active memories beyond the cap, per namespace: lowest importance x decay first."""
    if not settings.max_active:
        return []
    gone = {r.pk for c in report.clusters for r in c.members} | {f.loser.pk for f in report.folds}
    gone |= {int(pk) for pk in _archived_by_decay(store, report)}
    over: list[Row] = []
    # Only a namespace holding more than the cap can be over it once the gone rows are taken out.
    counts = store.memories.planning_counts(Filters(namespaces=None if namespaces is None else list(namespaces)))
    crowded = sorted(ns for ns, n in counts.items() if n > settings.max_active)
    if not crowded:
        return over
    groups = _load_rows(store, crowded)
    per_ns: dict[str, list[Row]] = {}
    for (namespace, _, _), rows in groups.items():
        per_ns.setdefault(namespace, []).extend(r for r in rows if r.pk not in gone)
    for namespace in sorted(per_ns):
        rows = per_ns[namespace]
        extra = len(rows) - settings.max_active
        if extra > 0:
            rows.sort(key=lambda r: (r.importance * r.decay_score, r.importance, r.created_at, r.pk))
            over.extend(rows[:extra])
    return over


def _archived_by_decay(store: Store, report: CompactReport) -> list[int]:
    if report.decay is None or not report.dry_run:
        return []
    return store.memories.pks_of([c.id for c in report.decay.changes if c.archived])


def _write_cap(store: Store, row: Row, stamp: str, cap: int) -> bool:
    current = _fresh(store, [row])
    if row.pk not in current:
        return False
    memory = current[row.pk]
    store.memories.set_status(memory, "archived", stamp)
    store.events.add(
        memory.id, "archived", stamp,
        before={"status": "active"}, after={"status": "archived"},
        note=f"over the cap of {cap} active memories (lowest importance x decay)", actor="compact",
    )  # fmt: skip
    return True


def _transaction(store: Store, action: Callable[[], bool]) -> bool:
    try:
        with store.write():
            return action()
    except ConflictError:
        # A writer got there first between our re-read and our update: next run.
        return False


def run(
    store: Store,
    settings: Settings,
    embed_for: Callable[[str], EmbedFn],
    *,
    at: datetime | None = None,
    namespaces: Sequence[str] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> CompactReport:
    """Plan and (unless ``dry_run``) apply one compaction of ``namespaces`` (default: all)."""
    moment = at or now()
    stamp = to_iso(moment)
    report = CompactReport(now=stamp, dry_run=dry_run)
    tick = progress or (lambda done, total: None)
    report.decay = decaymod.run(
        store, settings.half_lives, at=moment, namespaces=list(namespaces) if namespaces else None,
        dry_run=dry_run, min_change=DECAY_STEP,
    )  # fmt: skip
    faded = set(_archived_by_decay(store, report))
    cutoff = to_iso(moment - timedelta(days=settings.min_age_days))
    with store.read():
        groups = _load_rows(store, namespaces)
        loaded: list[_Group] = []
        for (namespace, agent, model), rows in sorted(groups.items()):
            rows = [r for r in rows if r.pk not in faded]
            report.scanned += len(rows)
            kept, matrix = _matrix(store, model, namespace, rows)
            if len(kept) < len(rows):
                report.skipped.append(
                    f"{len(rows) - len(kept)} memories in {namespace} have no vector (run `engram audit --fix`)"
                )
            if kept:
                taken = np.zeros(len(kept), dtype=bool)
                loaded.append(
                    _Group(namespace, agent, model, kept, matrix, taken, script_codes([r.content for r in kept]))
                )
    total = len(loaded)
    for done, group in enumerate(loaded):
        tick(done, total)
        if group.model not in settings.cluster_threshold:
            report.skipped.append(f"no cluster threshold for model {group.model}; its memories were not clustered")
            continue
        _plan_group(store, group, settings, cutoff, embed_for, report, dry_run, moment, stamp)
    tick(total, total)
    for row in _cap(store, settings, namespaces, report):
        if dry_run or _transaction(store, partial(_write_cap, store, row, stamp, settings.max_active)):
            report.capped.append(row)
    return report


def _plan_group(
    store: Store,
    group: _Group,
    settings: Settings,
    cutoff: str,
    embed_for: Callable[[str], EmbedFn],
    report: CompactReport,
    dry_run: bool,
    moment: datetime,
    stamp: str,
) -> None:
    threshold = settings.cluster_threshold[group.model].matrix()
    eligible = _eligible(group, cutoff)
    anchor_idx = [i for i, r in enumerate(group.rows) if r.consolidated and r.type == "semantic"]
    anchors = group.matrix[anchor_idx] if anchor_idx else np.zeros((0, group.matrix.shape[1]), dtype=np.float32)
    folds = _join_anchors(group, anchors, [group.rows[i] for i in anchor_idx], eligible, threshold)
    clusters = _leader_clusters(group, eligible, settings, threshold)
    position = {r.pk: i for i, r in enumerate(group.rows)}
    ready: list[Cluster] = []
    for cluster in clusters:
        cluster.content = extractive_summary([m.content for m in cluster.members])
        if settings.summarizer_command and not dry_run:
            try:
                cluster.content = run_summarizer(settings.summarizer_command, cluster, settings.summarizer_timeout_s)
                cluster.method = "command"
            except InvalidInput as exc:
                report.errors.append(f"{group.namespace}: a cluster of {len(cluster.members)} was left: {exc.message}")
                group.taken[[position[m.pk] for m in cluster.members]] = False
                continue
        ready.append(cluster)
    if ready:
        if dry_run:
            # A plan is not worth an embedding: each summary is placed at its episodes' mean.
            for cluster in ready:
                cluster.vector = _estimate(group, [position[m.pk] for m in cluster.members])
        else:
            matrix = embed_for(group.model)([c.content for c in ready])
            for cluster, vector in zip(ready, matrix, strict=True):
                cluster.vector = np.asarray(vector, dtype=np.float32)
        ready = _existing_twins(group, ready, settings, folds)
    made: list[Cluster] = []
    for cluster in ready:
        if dry_run or _transaction(store, partial(_write_cluster, store, cluster, settings, moment, stamp)):
            made.append(cluster)
        else:
            report.skipped.append(f"{group.namespace}: a cluster changed while compacting; left for the next run")
            group.taken[[position[m.pk] for m in cluster.members]] = False
    report.clusters.extend(made)
    if made:
        # The new memories take the episodes close to them that no leader took, so
        # that the next run (which sees them as consolidated memories) finds nothing.
        anchor_rows = [
            Row(pk=_pk_of(store, c.memory_id), id=c.memory_id or "(new)", type="semantic", content=c.content,
                created_at=stamp, importance=0.0, decay_score=1.0, version=1, consolidated=True)
            for c in made
        ]  # fmt: skip
        new_vectors = np.stack([c.vector for c in made if c.vector is not None])
        folds += _join_anchors(group, new_vectors, anchor_rows, eligible, threshold)
    folds += _fold_duplicates(group, settings.merge_threshold.get(group.model, 1.01))
    by_pk = {r.pk: r for r in group.rows}
    for fold in folds:
        if dry_run or _transaction(store, partial(_write_fold, store, fold, stamp, by_pk)):
            report.folds.append(fold)


def _estimate(group: _Group, members: list[int]) -> np.ndarray:
    """Where a summary of these rows is expected to embed (dry run): their normalised mean vector."""
    mean: np.ndarray = group.matrix[members].mean(axis=0)
    return np.asarray(mean / max(float(np.linalg.norm(mean)), 1e-12), dtype=np.float32)


def _existing_twins(group: _Group, ready: list[Cluster], settings: Settings, folds: list[Fold]) -> list[Cluster]:
    """Clusters whose summary would be a near duplicate of a fact already kept join that fact instead."""
    threshold = settings.merge_threshold.get(group.model, 1.01)
    facts = np.flatnonzero(~group.taken & np.array([r.type != "episodic" for r in group.rows], dtype=bool))
    if not len(facts):
        return ready
    fmat = group.matrix[facts]
    vectors = np.stack([c.vector for c in ready if c.vector is not None])
    keep: list[Cluster] = []
    for start in range(0, len(ready), BLOCK):
        sims = vectors[start : start + BLOCK] @ fmat.T
        best = sims.argmax(axis=1)
        for k, cluster in enumerate(ready[start : start + BLOCK]):
            twin = group.rows[int(facts[best[k]])]
            score = float(sims[k, best[k]])
            if score >= threshold and merge_decision(twin.content, cluster.content, score, threshold)[0]:
                folds.extend(Fold("joined", group.namespace, m, twin.id, twin.pk, score) for m in cluster.members)
            else:
                keep.append(cluster)
    return keep


def _pk_of(store: Store, memory_id: str | None) -> int:
    if memory_id is None:
        return 0
    pk = store.memories.pk_of(memory_id)
    return 0 if pk is None else pk
