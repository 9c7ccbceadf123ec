"""Similar pairs: near-duplicates that remember would have merged, and conflicts that were never resolved.

Pairs come from the vectors of each namespace and model (:mod:`engram_cli.memory.neighbours`):
every pair of a group up to ``neighbours.EXACT_ROWS`` memories, and above that the pairs a cell
search finds, each memory keeping its ``neighbours.CLOSEST`` closest (remember itself only ever
compares a new memory with its few nearest). They are screened in numpy, so only pairs that could
matter reach Python; never from one KNN query per memory.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from engram_cli.lang import text as textmod
from engram_cli.memory import neighbours
from engram_cli.memory.audit.report import WARNING, AuditSettings, Check, excerpt
from engram_cli.memory.remember import MERGE_CANDIDATES
from engram_cli.memory.repair import Work
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
from engram_cli.store.db import Store
from engram_cli.store.memories import MemoryRow

# Similar pairs classified at most; a store of near-identical templated texts stops here
# (and says so) instead of listing n² pairs.
MAX_PAIRS = 200_000
SCREEN_BATCH = 65_536  # pairs screened in numpy at once


@dataclass
class _Pairs:
    duplicates: list[tuple[float, MemoryRow, MemoryRow, bool]] = field(default_factory=list)  # cosine, a, b, exact
    conflicts: list[tuple[float, MemoryRow, MemoryRow, str]] = field(default_factory=list)  # cosine, a, b, reason
    truncated: bool = False
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)


# Popcounts of every byte value, for overlap bounds on topic signatures.
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int32)
SIGNATURE_BYTES = 32


@lru_cache(maxsize=1 << 16)
def _term_bit(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % (SIGNATURE_BYTES * 8)


@dataclass
class _Signals:
    """Per-text signals computed once per group, so pairs can be screened in numpy."""

    negates: np.ndarray  # bool
    changes: np.ndarray  # bool
    words: np.ndarray  # int64 hash of the analysed words: equal for texts with the same words
    topic: np.ndarray  # uint8 bit signature (256 bits) of the topic terms
    sizes: np.ndarray  # how many topic terms

    @classmethod
    def of(cls, texts: Sequence[str], rows: np.ndarray | None = None, n: int | None = None) -> _Signals:
        """The signals of ``texts``; with ``rows``, those are rows of a group of ``n`` and only they get
        signals (every other row reads as no negation, no change, words of its own, no topic)."""
        neg: list[bool] = []
        chg: list[bool] = []
        keys: list[bytes] = []
        sizes: list[int] = []
        owners: list[int] = []  # (text, bit) of every topic term, set in one numpy call below
        bits: list[int] = []
        for i, text in enumerate(texts):
            words = textmod.analyze(text)
            neg.append(negates(text))
            chg.append(change_marker(text) is not None)
            keys.append(hashlib.blake2b("\x1f".join(words).encode("utf-8"), digest_size=8).digest())
            topic = topic_terms(words)
            sizes.append(len(topic))
            owners.extend([i] * len(topic))
            bits.extend(_term_bit(term) for term in topic)
        sig = np.zeros((len(texts), SIGNATURE_BYTES), dtype=np.uint8)
        bit = np.array(bits, dtype=np.int64)
        np.bitwise_or.at(sig, (np.array(owners, dtype=np.int64), bit // 8), (1 << (bit % 8)).astype(np.uint8))
        key = np.frombuffer(b"".join(keys), dtype="<i8").astype(np.int64) if keys else np.zeros(0, dtype=np.int64)
        part = cls(np.array(neg, dtype=bool), np.array(chg, dtype=bool), key, sig, np.array(sizes, dtype=np.int64))
        if rows is None:
            return part
        size = len(texts) if n is None else n
        whole = cls(
            np.zeros(size, dtype=bool),
            np.zeros(size, dtype=bool),
            -np.arange(1, size + 1, dtype=np.int64),  # words of its own: equal to no other row's
            np.zeros((size, SIGNATURE_BYTES), dtype=np.uint8),
            np.zeros(size, dtype=np.int64),
        )
        whole.negates[rows], whole.changes[rows], whole.words[rows] = part.negates, part.changes, part.words
        whole.topic[rows], whole.sizes[rows] = part.topic, part.sizes
        return whole

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
        # A keyed fact changes only through its key (`engram set`): two keys may hold one value on purpose.
        if row.status == "active" and row.model in models and row.key is None:
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
        found = store.vectors.current(model_id, [r.pk for r in members])
        members = [r for r in members if r.pk in found]
        if len(members) < 2:
            continue
        matrix = np.stack([found[r.pk] for r in members]).astype(np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        found_pairs = neighbours.near_pairs(matrix, low, per_row=neighbours.CLOSEST)
        # Only the texts of a pair are read: in a large store most memories have no close neighbour.
        involved = np.unique(np.concatenate([found_pairs.left, found_pairs.right]))
        signals = _Signals.of([members[i].content for i in involved.tolist()], involved, len(members))
        neg, key = signals.negates, signals.words
        for start in range(0, len(found_pairs), SCREEN_BATCH):
            tile = found_pairs.take(slice(start, start + SCREEN_BATCH))
            # Below the merge threshold a pair is only worth a look when it has the same words,
            # or opposite polarity about the same topic.
            a, b = tile.left, tile.right
            keep = (tile.score >= merge_at) | (key[a] == key[b])
            maybe = np.flatnonzero(~keep & (neg[a] != neg[b]))
            on_topic = maybe[signals.topic_may_overlap(a[maybe], b[maybe], SWAP_OVERLAP)]
            ai = np.concatenate([a[keep], a[on_topic]])
            bi = np.concatenate([b[keep], b[on_topic]])
            if len(ai) > budget:
                out.truncated = True
                ai, bi = ai[:budget], bi[:budget]
            budget -= len(ai)
            for i, j in zip(ai.tolist(), bi.tolist(), strict=True):
                _classify(members[i], members[j], float(matrix[i] @ matrix[j]), merge_at, supersede_at, prof, out)
            if out.truncated:
                return
        _unapplied_corrections(members, found_pairs, signals.changes, supersede_at, out)


def _unapplied_corrections(
    members: list[MemoryRow], pairs: neighbours.Pairs, changes: np.ndarray, supersede_at: float, out: _Pairs
) -> None:
    """Corrections that never replaced what they correct: what remember would have superseded.

    remember looks at the few nearest older memories of the same agent when a text with a change
    marker arrives; a correction that came in by import or with supersession off is judged here
    the same way, among its pairs (every memory within the supersede threshold, in a large group
    its closest ones).
    """
    order = sorted(range(len(members)), key=lambda i: (members[i].created_at, members[i].pk))
    rank = np.empty(len(members), dtype=np.int64)
    rank[order] = np.arange(len(members))
    agents: dict[str, int] = {}
    agent = np.array([agents.setdefault(r.agent, len(agents)) for r in members])
    listed = {frozenset((a.pk, b.pk)) for _, a, b, _ in out.conflicts}
    # remember never lets an episode supersede or be superseded by itself: neither does this check.
    facts = np.array([r.type != "episodic" for r in members], dtype=bool)
    # Both directions of each pair: (the correction, an older memory it may correct).
    new = np.concatenate([pairs.left, pairs.right])
    old = np.concatenate([pairs.right, pairs.left])
    score = np.concatenate([pairs.score, pairs.score])
    take = (
        changes[new] & facts[new] & facts[old] & (rank[old] < rank[new]) & (agent[old] == agent[new])
        & (score >= supersede_at)
    )  # fmt: skip
    new, old, score = new[take], old[take], score[take]
    by = np.lexsort((rank[old], -score, new))  # per correction, closest first
    new, old, score = new[by], old[by], score[by]
    starts = np.searchsorted(new, new, side="left")
    first = np.arange(len(new)) - starts < MERGE_CANDIDATES
    settled = -1  # the last correction found to correct something: its farther candidates are not read
    for i, j, cosine in zip(new[first].tolist(), old[first].tolist(), score[first].tolist(), strict=True):
        if i == settled:
            continue
        older, newer = members[j], members[i]
        reason = supersedes(older.content, newer.content, cosine, supersede_at)
        if reason is None:
            continue
        settled = i
        if frozenset((older.pk, newer.pk)) not in listed:  # not already an opposite-polarity pair
            out.conflicts.append(
                (cosine, older, newer, f"a correction that did not replace the older memory: {reason}")
            )


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
