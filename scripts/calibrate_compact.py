#!/usr/bin/env python3
"""Calibrate the per-model cluster thresholds used to compact episodic memories.

``engram compact`` groups the episodic memories of a namespace that are about
the same thing and consolidates each group into one semantic memory. Grouping
is greedy leader clustering (``_leader_clusters`` in engram_cli/memory/compact.py):
oldest first, an episode not yet taken becomes a leader and takes every untaken
episode whose cosine to it reaches the threshold for the pair; a leader with
fewer than ``min_cluster - 1`` such neighbours takes nobody and stays free.

The threshold depends on the scripts of the two texts (``engram_cli.lang.text.script_of``:
``latin`` or ``cjk``): ``latin`` when leader and member are both Latin, ``cjk``
when both are CJK, ``cross`` otherwise. One number cannot serve all three on a
multilingual model: multilingual-e5 vectors are anisotropic, unrelated Chinese
episodes already sit at cosines of 0.89-0.93 while English episodes of one
topic sit near 0.88, and pairs across languages score lower again. So each
model gets three thresholds, calibrated on ``tests/data/compact_episodes.jsonl``.

The data: episodes of ongoing pieces of work, labelled by ``topic``. A topic
has 3-6 episodes written days apart with different wording and details; some
topics are close neighbours (two bugs in the same module, the same problem in
two stacks) and must stay apart; some topics mix English and Chinese episodes;
singleton topics are hard distractors that share the project's vocabulary but
are about something else. The file order is the chronological order (oldest
first). Which threshold applies to a pair is decided by ``script_of`` on the two
texts, exactly as the engine decides it, never by the file's ``lang`` field
(``lang`` only selects the episodes a model is given and labels the
per-language report).

Method, for every shipped model:
  1. embed each text on its own (see ``embed_texts`` for why not in batches);
  2. pair view: every pair of episodes is a "same topic" positive or a negative,
     and is of type latin, cjk or cross. For T in 0.300, 0.305, ..., 0.990
     report the precision and recall of "cosine >= T", overall and for each
     pair type over the pairs of that type only. The grid starts well below
     e5's range because all-MiniLM-L6-v2 puts episodes of one topic at cosines
     of 0.3-0.8;
  3. per pair type, choose the lowest T at which that type's precision is
     >= 0.95 and from which it stays >= 0.95 at every higher T of the grid (a
     T at which no pair of the type reaches it counts as holding; one at which
     only different-topic pairs reach it does not). Precision is not monotonic
     in T on a small set, and the lowest T that merely touches the bar is a
     fragile pick: the report names it and the higher Ts at which the bar is
     lost again. A type with fewer than 10 same-topic pairs cannot be judged,
     a pick that fewer than 3 same-topic pairs clear is too thin to trust,
     and a type that never holds the bar has no answer: in each case it takes
     the highest of the other two types' thresholds, and the report says so;
  4. English-only models (``languages == ["en"]`` in the manifest, e.g.
     all-MiniLM-L6-v2) are calibrated on the English episodes, for ``latin``
     only. Their ``cjk`` and ``cross`` thresholds are 1.01, i.e. never cluster:
     a Chinese text read by an English-only tokenizer is mostly unknown
     tokens, so any cosine that involves it is noise, not topic similarity;
  5. simulate the whole compaction clustering on every episode the model is
     given (both languages for e5) with the engine's own ``_leader_clusters``
     and the three thresholds, for the minimum cluster size of
     ``--min-cluster-size`` (default 2) and for 3. Report purity (share of
     clustered episodes whose topic is their cluster's majority topic), the
     consolidated share (share of the episodes of multi-episode topics that end
     up in a cluster) overall and per language, how many of those sit with
     their own topic, wrong merges (per cluster, distinct topics beyond the
     first, summed), distractors absorbed, clusters that span both scripts and
     what became of each mixed-language topic;
  6. purity must be >= 0.95 at every simulated size: a wrong consolidation
     fuses two different things into one memory, while a missed one only
     leaves episodes as they were. While it is not, the pair type that admitted
     the most wrong members (leader-member pairs of different topics) is raised
     by one grid step, and the raises are reported.

For comparison, the report also gives the best single threshold, the same T
for every pair: the lowest T from which overall pair precision and purity (at
``--min-cluster-size``) hold at every higher T, as the previous version of this
script recorded in ``criteria_hold_from``.

Rows of the table identical to the row above (apart from T) are left out and
counted.

Outputs:
  * a table and the simulation on stdout;
  * scripts/compact_thresholds.json  {model_id: {cluster_thresholds, threshold,
    pair_types, raised_for_purity, simulation, single_threshold, ...}};
  * in models/<id>/manifest.json (unless --no-manifests): ``cluster_thresholds``
    {latin, cjk, cross}, which engram uses when all three are present, and the
    scalar ``cluster_threshold`` = the highest of the three, a conservative
    fallback for code that reads only the scalar (1.01 for an English-only
    model, so such code never clusters with it).

Usage (from the repository root):
  python scripts/calibrate_compact.py [--models ID ...] [--no-manifests] [--errors]
         [--min-cluster-size N] [--grid-start T]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
for entry in (REPO_ROOT, REPO_ROOT / "scripts"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

# The manifest reader and the English-only rule are the merge calibration's own.
from calibrate_merge import is_english_only, model_ids, read_manifest, save_results, update_manifest  # noqa: E402

from engram_cli.config import Settings  # noqa: E402
from engram_cli.lang.text import SCRIPTS, script_of  # noqa: E402
from engram_cli.memory import compact as compactmod  # noqa: E402

DEFAULT_EPISODES = REPO_ROOT / "tests" / "data" / "compact_episodes.jsonl"
DEFAULT_OUT = REPO_ROOT / "scripts" / "compact_thresholds.json"
DEFAULT_MODELS_DIR = REPO_ROOT / "models"
MANIFEST_KEY = "cluster_threshold"
MANIFEST_KEYS = "cluster_thresholds"

GRID_STEP = 0.005
GRID_END = 0.99
DEFAULT_GRID_START = 0.30
MIN_PRECISION = 0.95
MIN_PURITY = 0.95
DEFAULT_MIN_CLUSTER_SIZE = 2
# The cluster size whose numbers are always reported as well (the engine's min_cluster default so far).
ALSO_REPORTED_SIZE = 3
DEFAULTS = Settings()
MAX_CLUSTER_SIZE = DEFAULTS.compact.max_cluster
# A pair type with fewer same-topic pairs than this cannot be judged on its own.
MIN_SAME_TOPIC_PAIRS = 10
# Same-topic pairs that must clear a pick for it to count as calibrated.
MIN_SUPPORT = 3
# A threshold that fewer same-topic pairs than this reach is flagged as thinly supported (not rejected).
THIN_SUPPORT = 3
# Above every cosine: the pair is never clustered.
NEVER = 1.01

# Models whose tokenizer/training covers English only (a manifest may also say
# so through its "languages" list).
LANGS = ("en", "zh")
# Pair types, named as the fields of compactmod.Thresholds.
PAIR_TYPES = ("latin", "cjk", "cross")


@dataclass(frozen=True)
class Episode:
    text: str
    topic: str
    lang: str


@dataclass(frozen=True)
class PairScores:
    threshold: float
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        # Vacuously 1.0 when no pair reaches T; recall is then 0.
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if self.tp else 0.0


@dataclass
class PairChoice:
    """How the threshold of one pair type was chosen."""

    pair_type: str
    pairs: int
    same_topic_pairs: int
    first_reach: float | None = None  # lowest T with precision >= the bar (may be lost again above)
    holds_from: float | None = None  # lowest T from which precision >= the bar at every higher T
    fails_above: list[float] = field(default_factory=list)  # Ts above first_reach where the bar is lost
    threshold: float = NEVER
    how: str = ""  # "calibrated", "fallback" or "never"
    note: str = ""
    calibrated: float | None = None  # before any raise for purity

    def to_dict(self, final: PairScores | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "threshold": self.threshold,
            "chosen_by": self.how,
            "pairs": self.pairs,
            "same_topic_pairs": self.same_topic_pairs,
            "first_reaches_precision": self.first_reach,
            "precision_holds_from": self.holds_from,
            "precision_lost_again_at": self.fails_above,
        }
        if self.note:
            out["note"] = self.note
        if self.calibrated is not None and self.calibrated != self.threshold:
            out["before_purity_raise"] = self.calibrated
        if final is not None:
            out["pair_precision"] = round(final.precision, 4)
            out["pair_recall"] = round(final.recall, 4)
            out["tp"], out["fp"], out["fn"] = final.tp, final.fp, final.fn
        return out


@dataclass(frozen=True)
class SimScores:
    """The engine's leader clustering of all episodes with given thresholds and minimum cluster size."""

    min_size: int
    clusters: int
    clustered: int  # episodes in clusters
    pure: int  # clustered episodes whose topic is their cluster's majority topic
    wrong_merges: int  # per cluster: distinct topics beyond the first, summed
    absorbed: int  # singleton-topic (distractor) episodes that ended up in a cluster
    cross_script_clusters: int  # clusters with both Latin and CJK members
    consolidated: dict[str, int]  # per lang: episodes of multi-episode topics in a cluster
    with_own_topic: dict[str, int]  # per lang: ... in a cluster whose majority topic is theirs
    consolidatable: dict[str, int]  # per lang: episodes of multi-episode topics
    wrong_by_type: dict[str, int]  # leader-member pairs of different topics, by pair type
    mixed_topics: dict[str, dict[str, int]]  # per mixed-language topic: episodes, clusters, left_out

    @property
    def purity(self) -> float:
        return self.pure / self.clustered if self.clustered else 1.0

    @property
    def consolidated_share(self) -> float:
        total = sum(self.consolidatable.values())
        return sum(self.consolidated.values()) / total if total else 0.0

    def share(self, lang: str) -> float:
        total = self.consolidatable.get(lang, 0)
        return self.consolidated.get(lang, 0) / total if total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_cluster_size": self.min_size,
            "purity": round(self.purity, 4),
            "clusters": self.clusters,
            "clustered": self.clustered,
            "consolidated_share": round(self.consolidated_share, 4),
            "consolidated_share_by_language": {lang: round(self.share(lang), 4) for lang in self.consolidatable},
            "consolidated": {
                lang: f"{self.consolidated[lang]}/{self.consolidatable[lang]}" for lang in self.consolidatable
            },
            "with_own_topic": {
                lang: f"{self.with_own_topic[lang]}/{self.consolidatable[lang]}" for lang in self.consolidatable
            },
            "wrong_merges": self.wrong_merges,
            "wrong_members_by_pair_type": self.wrong_by_type,
            "distractors_absorbed": self.absorbed,
            "cross_script_clusters": self.cross_script_clusters,
            "mixed_language_topics": self.mixed_topics,
        }


# --------------------------------------------------------------------------- data


def load_episodes(path: Path = DEFAULT_EPISODES) -> list[Episode]:
    episodes: list[Episode] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            try:
                ep = Episode(str(obj["text"]), str(obj["topic"]), str(obj["lang"]))
            except KeyError as exc:
                raise ValueError(f"{path}:{lineno}: missing field {exc}") from None
            if ep.lang not in LANGS:
                raise ValueError(f"{path}:{lineno}: bad lang {ep.lang!r}")
            if not ep.text.strip() or not ep.topic:
                raise ValueError(f"{path}:{lineno}: empty text or topic")
            episodes.append(ep)
    texts = [e.text for e in episodes]
    if len(set(texts)) != len(texts):
        dup = next(t for t, n in Counter(texts).items() if n > 1)
        raise ValueError(f"{path}: duplicate text {dup!r}")
    return episodes


def write_manifest_thresholds(
    model_id: str, thresholds: Mapping[str, float], models_dir: Path = DEFAULT_MODELS_DIR
) -> Path | None:
    """Set ``cluster_thresholds`` and the scalar ``cluster_threshold`` (their maximum) in the model's manifest."""
    values = {
        MANIFEST_KEYS: {k: thresholds[k] for k in PAIR_TYPES},
        MANIFEST_KEY: max(thresholds[k] for k in PAIR_TYPES),
    }
    return update_manifest(model_id, values, models_dir)


def calibration_langs(model_id: str, manifest: dict[str, Any] | None) -> tuple[str, ...]:
    """Languages of the episodes a model is calibrated on."""
    return ("en",) if is_english_only(model_id, manifest) else LANGS


# ---------------------------------------------------------------------- embedding


def embed_texts(model_id: str, texts: Sequence[str]) -> np.ndarray:
    """Passage vectors of ``texts`` under ``model_id``, one float32 row per text (L2-normalised).

    Each text is embedded on its own, as a memory is when it is written: an int8
    build whose activation quantisation range is taken over a whole batch makes a
    vector depend on its batch neighbours (see calibrate_merge.py), and one text
    per call keeps every cosine independent of the rest of the file.
    """
    from engram_cli.embed import load_embedder

    embedder = load_embedder(model_id)
    rows: list[np.ndarray] = []
    for text in texts:
        out = np.asarray(embedder.embed_batch([text], kind="passage"), dtype=np.float32)
        if out.shape[0] != 1:
            raise RuntimeError(f"{model_id}: embed_batch returned {out.shape[0]} rows for 1 text")
        rows.append(out[0])
    return np.vstack(rows).astype(np.float32, copy=False)


def cosine_matrix(vecs: np.ndarray) -> np.ndarray:
    """All pair cosines (vectors are unit length, so cosine = dot), rounded to 6 places so a
    comparison with a threshold on the 0.005 grid cannot flip on float noise."""
    return np.round(vecs.astype(np.float64) @ vecs.astype(np.float64).T, 6)


def pair_type_matrix(scripts: Sequence[str]) -> np.ndarray:
    """Pair type of every (i, j): latin, cjk (both texts of that script) or cross."""
    s = np.array(scripts)
    return np.where(s[:, None] != s[None, :], "cross", s[:, None])


# ------------------------------------------------------------------- pair scoring


def pair_scores(cos: np.ndarray, same: np.ndarray, mask: np.ndarray, threshold: float) -> PairScores:
    """Precision/recall of "cosine >= threshold" as a predictor of "same topic" over the pairs in ``mask``."""
    pred = cos >= threshold
    tp = int(np.sum(pred & same & mask))
    fp = int(np.sum(pred & ~same & mask))
    fn = int(np.sum(~pred & same & mask))
    return PairScores(threshold, tp, fp, fn)


def holds_from(ok: Sequence[bool], usable: Sequence[bool]) -> int | None:
    """Lowest index i with ``usable[i]`` such that ``ok[j]`` for every j >= i; None if the last fails."""
    found: int | None = None
    for i in range(len(ok) - 1, -1, -1):
        if not ok[i]:
            break
        if usable[i]:
            found = i
    return found


def choose_pair_type(pair_type: str, rows: Sequence[PairScores], pairs: int) -> PairChoice:
    """The robust threshold of one pair type from its own pairs (``how`` is left empty when it has none)."""
    positives = rows[0].tp + rows[0].fn if rows else 0
    choice = PairChoice(pair_type, pairs, positives)
    ok = [r.precision >= MIN_PRECISION for r in rows]
    first = next((i for i, r in enumerate(rows) if r.tp and ok[i]), None)
    if first is not None:
        choice.first_reach = rows[first].threshold
        choice.fails_above = [r.threshold for r in rows[first + 1 :] if r.precision < MIN_PRECISION]
    stable = holds_from(ok, [r.tp > 0 for r in rows])
    if stable is not None:
        choice.holds_from = rows[stable].threshold
    if positives < MIN_SAME_TOPIC_PAIRS:
        choice.note = f"only {positives} same-topic pairs (< {MIN_SAME_TOPIC_PAIRS}): too few to judge"
    elif stable is None:
        choice.note = f"precision >= {MIN_PRECISION} does not hold up to {GRID_END}"
    elif rows[stable].tp < MIN_SUPPORT:
        # A threshold that only one or two true pairs clear says more about those pairs than the type.
        choice.note = f"the pick {rows[stable].threshold:.3f} rests on {rows[stable].tp} same-topic pair(s): too thin"
    else:
        choice.threshold = rows[stable].threshold
        choice.how = "calibrated"
    return choice


# ------------------------------------------------------------------- clustering


def engine_clusters(
    vecs: np.ndarray, codes: np.ndarray, thresholds: compactmod.Thresholds, min_size: int
) -> list[list[int]]:
    """Clusters (lists of row indices) that ``engram compact`` forms from these episodes, oldest first.

    Runs the engine's own ``_leader_clusters`` on float32 vectors (as the store keeps
    them), every episode eligible, no time window, ``compact.max_cluster`` at its default.
    """
    n = vecs.shape[0]
    rows = [
        compactmod.Row(pk=i, id=str(i), type="episodic", content="", created_at="", importance=0.5,
                       decay_score=1.0, version=1, consolidated=False)
        for i in range(n)
    ]  # fmt: skip
    group = compactmod._Group("calibration", "", "model", rows, vecs, np.zeros(n, dtype=bool), codes)
    settings = compactmod.Settings(
        cluster_threshold={}, merge_threshold={}, half_lives={},
        min_cluster=min_size, max_cluster=max(MAX_CLUSTER_SIZE, min_size), window_days=0.0,
        min_age_days=DEFAULTS.compact.min_age_days, max_active=0,
        summarizer_command="", summarizer_timeout_s=DEFAULTS.summarizer.timeout_s,
    )  # fmt: skip
    clusters = compactmod._leader_clusters(group, np.ones(n, dtype=bool), settings, thresholds.matrix())
    return [[m.pk for m in c.members] for c in clusters]


def cluster_leader(members: Sequence[int], sims: np.ndarray, thr: np.ndarray, codes: np.ndarray) -> int:
    """The leader of an engine cluster: its oldest member within the threshold of all the others.

    An older member that reached every other one would have led the cluster itself
    (they were all untaken at its turn), so the first such member is the leader.
    """
    for i in members:
        if all(sims[i, j] >= thr[codes[i], codes[j]] for j in members if j != i):
            return i
    return members[0]


def simulate(
    vecs: np.ndarray,
    codes: np.ndarray,
    thresholds: compactmod.Thresholds,
    min_size: int,
    topics: Sequence[str],
    langs: Sequence[str],
    cal_langs: Sequence[str],
) -> tuple[SimScores, list[list[int]]]:
    clusters = engine_clusters(vecs, codes, thresholds, min_size)
    sizes = Counter(topics)
    sims = vecs @ vecs.T
    thr = thresholds.matrix()
    ptype = np.array([["latin", "cross"], ["cross", "cjk"]])
    clustered = pure = wrong = absorbed = cross_clusters = 0
    wrong_by_type = dict.fromkeys(PAIR_TYPES, 0)
    majority: dict[int, str] = {}
    for members in clusters:
        counts = Counter(topics[i] for i in members)
        top = counts.most_common(1)[0][0]
        majority.update(dict.fromkeys(members, top))
        clustered += len(members)
        pure += counts[top]
        wrong += len(counts) - 1
        absorbed += sum(1 for i in members if sizes[topics[i]] == 1)
        cross_clusters += len({int(codes[i]) for i in members}) > 1
        leader = cluster_leader(members, sims, thr, codes)
        for j in members:
            if topics[j] != topics[leader]:
                wrong_by_type[str(ptype[codes[leader], codes[j]])] += 1
    multi = [i for i in range(len(topics)) if sizes[topics[i]] >= 2]
    consolidatable = {lang: sum(1 for i in multi if langs[i] == lang) for lang in cal_langs}
    consolidated = {lang: sum(1 for i in multi if langs[i] == lang and i in majority) for lang in cal_langs}
    own = {lang: sum(1 for i in multi if langs[i] == lang and majority.get(i) == topics[i]) for lang in cal_langs}
    owner = {i: k for k, members in enumerate(clusters) for i in members}
    mixed: dict[str, dict[str, int]] = {}
    for topic in sorted(sizes):
        members = [i for i in range(len(topics)) if topics[i] == topic]
        if len({langs[i] for i in members}) > 1:
            mixed[topic] = {
                "episodes": len(members),
                "clusters": len({owner[i] for i in members if i in owner}),
                "left_out": sum(1 for i in members if i not in owner),
            }
    scores = SimScores(
        min_size, len(clusters), clustered, pure, wrong, absorbed, cross_clusters,
        consolidated, own, consolidatable, wrong_by_type, mixed,
    )  # fmt: skip
    return scores, clusters


def as_thresholds(values: Mapping[str, float]) -> compactmod.Thresholds:
    return compactmod.Thresholds(values["latin"], values["cjk"], values["cross"])


# ------------------------------------------------------------------------ report


def threshold_grid(start: float = DEFAULT_GRID_START) -> tuple[float, ...]:
    """start, start + 0.005, ..., 0.990, rounded so the grid is exact and prints cleanly."""
    steps = round((GRID_END - start) / GRID_STEP)
    return tuple(round(start + GRID_STEP * i, 3) for i in range(steps + 1))


def _table(
    pair_rows: Sequence[PairScores],
    type_rows: Mapping[str, Sequence[PairScores]],
    uniform: Sequence[SimScores],
    marks: Mapping[int, str],
) -> None:
    """Print the sweep; a row identical to the one above (except the threshold) is left out."""
    type_head = " | ".join(f"{pt + ' P':>8} {pt + ' R':>8}" for pt in type_rows)
    header = (
        f"  {'thr':>6} | {'P':>5} {'R':>5} | {type_head} | {'1-thr purity':>12} {'consol':>6} {'wrong':>5} {'clust':>5}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    previous = ""
    skipped = 0
    for i, p in enumerate(pair_rows):
        cells = " | ".join(f"{type_rows[pt][i].precision:8.3f} {type_rows[pt][i].recall:8.3f}" for pt in type_rows)
        u = uniform[i]
        body = (
            f"{p.precision:5.3f} {p.recall:5.3f} | {cells} | "
            f"{u.purity:12.3f} {u.consolidated_share:6.3f} {u.wrong_merges:5d} {u.clusters:5d}"
        )
        last = i == len(pair_rows) - 1
        if body == previous and i not in marks and not last:
            skipped += 1
            continue
        if skipped:
            print(f"  {'':6s}   ({skipped} identical row{'s' if skipped > 1 else ''})")
            skipped = 0
        mark = f"  <- {marks[i]}" if i in marks else ""
        print(f"  {p.threshold:6.3f} | {body}{mark}")
        previous = body


def _print_sim(label: str, sim: SimScores, cal_langs: Sequence[str]) -> None:
    shares = "  ".join(
        f"{lang} {sim.share(lang):.3f} ({sim.consolidated[lang]}/{sim.consolidatable[lang]}, "
        f"own topic {sim.with_own_topic[lang]})"
        for lang in cal_langs
    )
    wrong_types = ", ".join(f"{k} {v}" for k, v in sim.wrong_by_type.items() if v) or "none"
    print(
        f"    {label} min cluster {sim.min_size}: purity={sim.purity:.3f} clusters={sim.clusters} "
        f"consolidated={sim.consolidated_share:.3f}  [{shares}]  wrong merges={sim.wrong_merges} "
        f"(wrong members by pair type: {wrong_types}) distractors absorbed={sim.absorbed} "
        f"cross-script clusters={sim.cross_script_clusters}"
    )
    if sim.mixed_topics:
        parts = [
            f"{t}: {m['clusters']} cluster(s), {m['left_out']} of {m['episodes']} left out"
            for t, m in sim.mixed_topics.items()
        ]
        print("      mixed-language topics: " + "; ".join(parts))


def calibrate_model(
    model_id: str,
    episodes: Sequence[Episode],
    manifest: dict[str, Any] | None,
    grid: Sequence[float],
    min_size: int = DEFAULT_MIN_CLUSTER_SIZE,
    show_errors: bool = False,
) -> dict[str, Any]:
    cal_langs = calibration_langs(model_id, manifest)
    english_only = is_english_only(model_id, manifest)
    # Only the calibration languages are embedded and clustered: an English-only
    # model is never given the Chinese episodes.
    eps = [e for e in episodes if e.lang in cal_langs]
    texts = [e.text for e in eps]
    topics = [e.topic for e in eps]
    langs = [e.lang for e in eps]
    scripts = [script_of(t) for t in texts]  # what the engine uses to pick a pair's threshold
    codes = np.array([SCRIPTS.index(s) for s in scripts], dtype=np.int8)
    vecs = embed_texts(model_id, texts)
    cos = cosine_matrix(vecs)

    n = len(eps)
    topic_arr = np.array(topics)
    same = topic_arr[:, None] == topic_arr[None, :]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    ptype = pair_type_matrix(scripts)
    type_masks = {pt: upper & (ptype == pt) for pt in PAIR_TYPES if (upper & (ptype == pt)).any()}
    sizes = Counter(topics)
    sizes_to_report = sorted({min_size, ALSO_REPORTED_SIZE})

    print(f"\n=== {model_id} ===")
    print(
        f"given langs={','.join(cal_langs)}: {n} episodes "
        f"({', '.join(f'{k} {v}' for k, v in sorted(Counter(scripts).items()))} by script_of), "
        f"{sum(1 for k in sizes.values() if k >= 2)} multi-episode topics, "
        f"{sum(1 for k in sizes.values() if k == 1)} singletons, "
        f"{int(np.sum(same & upper))} same-topic pairs of {int(upper.sum())}"
    )
    disagree = sum(1 for lang, s in zip(langs, scripts, strict=True) if (lang == "zh") != (s == "cjk"))
    if disagree:
        print(f"  NOTE: script_of disagrees with the file's lang on {disagree} episodes; script_of decides")
    for name, m in (("all", upper), *type_masks.items()):
        sc, dc = cos[m & same], cos[m & ~same]
        same_txt = f"same={sc.mean():.4f} (min {sc.min():.4f})" if sc.size else "same=-"
        diff_txt = f"different={dc.mean():.4f} (max {dc.max():.4f})" if dc.size else "different=-"
        print(f"  mean cosine {name:5s}: {same_txt}  {diff_txt}  pairs={int(m.sum())}")

    pair_rows = [pair_scores(cos, same, upper, t) for t in grid]
    type_rows = {pt: [pair_scores(cos, same, m, t) for t in grid] for pt, m in type_masks.items()}

    # --- per pair type: the robust lowest threshold
    choices: dict[str, PairChoice] = {}
    for pt in PAIR_TYPES:
        if pt in type_rows:
            choices[pt] = choose_pair_type(pt, type_rows[pt], int(type_masks[pt].sum()))
        else:
            choices[pt] = PairChoice(pt, 0, 0, note="no pairs of this type in the data")
    if english_only:
        for pt in ("cjk", "cross"):
            choices[pt].threshold, choices[pt].how = NEVER, "never"
            choices[pt].note = "English-only model: a text with CJK is noise to it, never clustered"
    judged = {pt: c.threshold for pt, c in choices.items() if c.how == "calibrated"}

    # --- for comparison: the best single threshold (one T for every pair)
    uniform = [
        simulate(vecs, codes, compactmod.Thresholds.uniform(t), min_size, topics, langs, cal_langs)[0] for t in grid
    ]
    single_idx = holds_from(
        [p.precision >= MIN_PRECISION and u.purity >= MIN_PURITY for p, u in zip(pair_rows, uniform, strict=True)],
        [p.tp > 0 and u.clusters > 0 for p, u in zip(pair_rows, uniform, strict=True)],
    )
    single = grid[single_idx] if single_idx is not None else NEVER

    for c in choices.values():
        if c.how:
            continue
        if judged:
            c.threshold = max(judged.values())
            c.note += f"; takes the highest of the other types' thresholds ({c.threshold:.3f})"
        else:
            c.threshold = single
            c.note += f"; no type could be judged: takes the single threshold ({c.threshold:.3f})"
        c.how = "fallback"
    for c in choices.values():
        c.calibrated = c.threshold

    marks: dict[int, list[str]] = {}
    for pt, c in choices.items():
        if c.how == "calibrated":
            marks.setdefault(grid.index(c.threshold), []).append(pt)
    if single_idx is not None:
        marks.setdefault(single_idx, []).append("single threshold")
    _table(pair_rows, type_rows, uniform, {i: ", ".join(v) for i, v in marks.items()})

    # --- simulate the engine's clustering; raise a pair type while purity fails
    values = {pt: c.threshold for pt, c in choices.items()}
    raised: list[dict[str, Any]] = []
    while True:
        sims = {s: simulate(vecs, codes, as_thresholds(values), s, topics, langs, cal_langs) for s in sizes_to_report}
        failing = [s for s in sizes_to_report if sims[s][0].purity < MIN_PURITY]
        if not failing:
            break
        blame: Counter[str] = Counter()
        for s in failing:
            blame.update(sims[s][0].wrong_by_type)
        raisable = [pt for pt in PAIR_TYPES if blame[pt] and values[pt] < NEVER]
        if not raisable:
            print(f"  WARNING: purity < {MIN_PURITY} and no pair type left to raise")
            break
        pt = max(raisable, key=lambda k: (blame[k], -PAIR_TYPES.index(k)))
        before = values[pt]
        values[pt] = round(before + GRID_STEP, 3) if before + GRID_STEP <= GRID_END + 1e-9 else NEVER
        purities = ", ".join(f"min {s}: {sims[s][0].purity:.3f}" for s in failing)
        raised.append({"pair_type": pt, "from": before, "to": values[pt], "purity": purities})
        print(f"  purity < {MIN_PURITY} ({purities}); {blame[pt]} wrong members via {pt}: raised {pt} to {values[pt]}")
    for pt, c in choices.items():
        c.threshold = values[pt]

    # --- report
    print("  chosen thresholds:")
    finals: dict[str, PairScores | None] = {}
    for pt, c in choices.items():
        final = pair_scores(cos, same, type_masks[pt], c.threshold) if pt in type_masks else None
        finals[pt] = final
        detail = f"{c.how}"
        if c.first_reach is not None:
            detail += f"; P>={MIN_PRECISION} first at {c.first_reach:.3f}"
            if c.fails_above:
                lost = ", ".join(f"{t:.3f}" for t in c.fails_above[:8]) + (" ..." if len(c.fails_above) > 8 else "")
                detail += f", lost again at {lost}"
            if c.holds_from is not None:
                detail += f"; holds from {c.holds_from:.3f}"
        if c.calibrated is not None and c.calibrated != c.threshold:
            detail += f"; raised from {c.calibrated:.3f} for purity"
        if c.note:
            detail += f"; {c.note}"
        scores = (
            f" P={final.precision:.3f} R={final.recall:.3f} (tp={final.tp} fp={final.fp} fn={final.fn})"
            if final
            else ""
        )
        print(f"    {pt:6s} {c.threshold:.3f}{scores}  [{c.same_topic_pairs} same-topic pairs of {c.pairs}; {detail}]")
        if final is not None and c.how == "calibrated" and final.tp < THIN_SUPPORT:
            negatives = cos[type_masks[pt] & ~same]
            top = float(negatives.max()) if negatives.size else float("nan")
            print(
                f"      NOTE: {pt} rests on {final.tp} same-topic pair(s) above {c.threshold:.3f}; the highest "
                f"different-topic {pt} cosine is {top:.4f} (margin {c.threshold - top:.4f})"
            )
    scalar = max(values.values())
    print(f"    scalar {MANIFEST_KEY} (highest of the three, for code that reads only it): {scalar:.3f}")
    if any(c.how == "calibrated" and c.threshold == grid[0] for c in choices.values()):
        print("  NOTE: the lowest grid point qualifies; lower --grid-start to find the real lowest threshold")

    print("  simulation of compact's leader clustering on all given episodes:")
    for s in sizes_to_report:
        _print_sim("per-pair thresholds,", sims[s][0], cal_langs)
    single_sims = {
        s: simulate(vecs, codes, compactmod.Thresholds.uniform(single), s, topics, langs, cal_langs)[0]
        for s in sizes_to_report
    }
    for s in sizes_to_report:
        _print_sim(f"single threshold {single:.3f},", single_sims[s], cal_langs)

    sims32 = vecs @ vecs.T
    for s in sizes_to_report:
        for members in sims[s][1]:
            if len({topics[i] for i in members}) == 1:
                continue
            leader = cluster_leader(members, sims32, as_thresholds(values).matrix(), codes)
            print(f"    WRONG MERGE (min {s}) led by [{topics[leader]}] {texts[leader][:70]!r}")
            for i in members:
                if i != leader:
                    print(f"      cos={cos[leader, i]:.4f} [{topics[i]}] {texts[i][:70]!r}")

    if show_errors:
        thr = np.select([ptype == pt for pt in PAIR_TYPES], [values[pt] for pt in PAIR_TYPES])
        for i, j in zip(*np.nonzero(upper & same & (cos < thr)), strict=True):
            print(
                f"    missed pair {ptype[i, j]:5s} cos={cos[i, j]:.4f} [{topics[i]}] "
                f"{texts[i][:50]!r} ~ {texts[j][:50]!r}"
            )
        for i, j in zip(*np.nonzero(upper & ~same & (cos >= thr)), strict=True):
            print(
                f"    FALSE PAIR  {ptype[i, j]:5s} cos={cos[i, j]:.4f} [{topics[i]} ~ {topics[j]}] "
                f"{texts[i][:50]!r} ~ {texts[j][:50]!r}"
            )

    single_rows = {s: single_sims[s].to_dict() for s in sizes_to_report}
    return {
        "cluster_thresholds": dict(values),
        "threshold": scalar,
        "pair_types": {pt: c.to_dict(finals[pt]) for pt, c in choices.items()},
        "raised_for_purity": raised,
        "simulation": {str(s): sims[s][0].to_dict() for s in sizes_to_report},
        "single_threshold": {"threshold": single, "simulation": {str(s): v for s, v in single_rows.items()}},
        "min_cluster_size": min_size,
        "episodes": n,
        "episodes_by_script": dict(sorted(Counter(scripts).items())),
        "topics": sum(1 for k in sizes.values() if k >= 2),
        "languages": list(cal_langs),
        "english_only": english_only,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--episodes", type=Path, default=DEFAULT_EPISODES)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR)
    ap.add_argument("--models", nargs="*", help="model ids (default: every available model)")
    ap.add_argument(
        "--min-cluster-size",
        type=int,
        default=DEFAULT_MIN_CLUSTER_SIZE,
        help=f"compact.min_cluster to simulate (default {DEFAULT_MIN_CLUSTER_SIZE}; {ALSO_REPORTED_SIZE} is "
        "always simulated too, and purity must hold at both)",
    )
    ap.add_argument("--grid-start", type=float, default=DEFAULT_GRID_START, help="lowest threshold of the sweep")
    ap.add_argument(
        "--no-manifests", action="store_true", help=f"do not set {MANIFEST_KEYS}/{MANIFEST_KEY} in the manifests"
    )
    ap.add_argument("--errors", action="store_true", help="list missed and false same-topic pairs at the chosen Ts")
    args = ap.parse_args(argv)
    if args.min_cluster_size < 2:
        ap.error("--min-cluster-size must be at least 2")
    if not 0.0 <= args.grid_start < GRID_END:
        ap.error(f"--grid-start must be in [0, {GRID_END})")
    grid = threshold_grid(args.grid_start)

    episodes = load_episodes(args.episodes)
    print(f"{len(episodes)} episodes, {len({e.topic for e in episodes})} topics from {args.episodes}")
    print(
        f"thresholds {grid[0]:.3f}..{grid[-1]:.3f} step {GRID_STEP}; "
        f"min cluster size {args.min_cluster_size} (and {ALSO_REPORTED_SIZE}); "
        f"bars: pair precision >= {MIN_PRECISION} per pair type, purity >= {MIN_PURITY}"
    )

    if args.models:
        ids = sorted(set(args.models))
    else:
        from engram_cli.embed import available_models

        ids = model_ids(available_models())

    results: dict[str, Any] = {}
    for model_id in ids:
        manifest = read_manifest(model_id, args.models_dir)
        try:
            results[model_id] = calibrate_model(
                model_id, episodes, manifest, grid, min_size=args.min_cluster_size, show_errors=args.errors
            )
        except Exception as exc:  # a model that is not built / cannot load is skipped, loudly
            print(f"\n=== {model_id} ===\n  SKIPPED: cannot embed with this model: {exc}", file=sys.stderr)

    if not results:
        print("no model could be calibrated", file=sys.stderr)
        return 1

    save_results(args.out, results)
    print(f"\nwrote {args.out}")

    if not args.no_manifests:
        for model_id, res in sorted(results.items()):
            path = write_manifest_thresholds(model_id, res["cluster_thresholds"], args.models_dir)
            if path is None:
                print(f"no manifest for {model_id}; {MANIFEST_KEYS} not written")
            else:
                print(
                    f"updated {MANIFEST_KEYS}={res['cluster_thresholds']}, {MANIFEST_KEY}={res['threshold']} in {path}"
                )

    print("\nsummary")
    for model_id, res in sorted(results.items()):
        t = res["cluster_thresholds"]
        print(
            f"  {model_id:30s} latin={t['latin']:.3f} cjk={t['cjk']:.3f} cross={t['cross']:.3f} "
            f"(scalar {res['threshold']:.3f}; single threshold would be {res['single_threshold']['threshold']:.3f})"
        )
        for s, sim in res["simulation"].items():
            shares = " ".join(f"{k}={v:.3f}" for k, v in sim["consolidated_share_by_language"].items())
            print(
                f"    min cluster {s}: purity={sim['purity']:.3f} consolidated={sim['consolidated_share']:.3f} "
                f"({shares}) wrong merges={sim['wrong_merges']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
