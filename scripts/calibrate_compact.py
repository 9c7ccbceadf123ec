#!/usr/bin/env python3
"""Calibrate the per-model cluster threshold used to compact episodic memories.

``engram compact`` groups the episodic memories of a namespace that are about
the same thing and consolidates each group into one semantic memory. Grouping
is greedy leader clustering: every member of a cluster has a cosine >= the
model's ``cluster_threshold`` T to the cluster's leader. Cosine scales differ a
lot between models (multilingual-e5 vectors are anisotropic: unrelated
sentences already sit around 0.8), so T is calibrated per model, like
``merge_threshold`` (see calibrate_merge.py), on
``tests/data/compact_episodes.jsonl``.

The data: episodes of ongoing pieces of work, labelled by ``topic``. A topic
has 3-6 episodes written days apart with different wording and details; some
topics are close neighbours (two bugs in the same module, the same problem in
two stacks) and must stay apart; singleton topics are hard distractors that
share the project's vocabulary but are about something else. The file order
is the chronological order (oldest first). English-only models are calibrated
on the English episodes alone.

Method, for every shipped model:
  1. embed each text on its own (see ``embed_texts`` for why not in batches);
  2. pair view: every pair of episodes is a "same topic" positive or a
     negative; for T in 0.300, 0.305, ..., 0.990 report pair precision, recall
     and F1 of "cosine >= T" (overall and by language of the pair: en-en,
     zh-zh, en-zh). The grid starts well below e5's range because
     all-MiniLM-L6-v2 puts episodes of one topic at cosines of 0.3-0.8, so a
     grid starting at 0.70 would make its lowest point the answer;
  3. clustering view: run the leader clustering in file order at each T. The
     oldest episode not yet in a cluster becomes a leader and claims every
     unclustered episode with cosine >= T to it; clusters with fewer than
     ``--min-cluster-size`` (default 2) members are not consolidated. Report
     purity (share of clustered episodes whose topic is their cluster's
     majority topic), the consolidated share (share of the episodes of
     multi-episode topics that end up in a cluster), wrong merges (per
     cluster, distinct topics beyond the first, summed) and distractors
     absorbed. For information, purity is also given for the variant in which
     each episode, in order, joins the most similar existing leader.
  4. choose the lowest T whose pair precision >= 0.95 and cluster purity >=
     0.95: a wrong consolidation fuses two different things into one memory,
     while a missed one only leaves episodes unconsolidated. The lowest such T
     consolidates the most. If no T qualifies, the T with the best
     min(precision, purity) is taken and the fallback is reported. Because
     precision is not monotonic in T on a small set, the report also names
     higher thresholds at which the criteria fail again and records the lowest
     T from which they hold everywhere above (``criteria_hold_from``), plus, per
     language of the pair, the lowest T at which those pairs alone would reach
     the precision bar.

Rows of the table identical to the row above (apart from T) are left out and
counted.

Outputs:
  * a table on stdout;
  * scripts/compact_thresholds.json  {model_id: {threshold, pair_precision, pair_recall, purity,
    consolidated_share, ...}};
  * ``cluster_threshold`` set in models/<id>/manifest.json (unless --no-manifests).

Usage (from the repository root):
  python scripts/calibrate_compact.py [--models ID ...] [--no-manifests] [--errors]
         [--min-cluster-size N] [--grid-start T]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

DEFAULT_EPISODES = REPO_ROOT / "tests" / "data" / "compact_episodes.jsonl"
DEFAULT_OUT = REPO_ROOT / "scripts" / "compact_thresholds.json"
DEFAULT_MODELS_DIR = REPO_ROOT / "models"
MANIFEST_KEY = "cluster_threshold"

GRID_STEP = 0.005
GRID_END = 0.99
DEFAULT_GRID_START = 0.30
MIN_PRECISION = 0.95
MIN_PURITY = 0.95
DEFAULT_MIN_CLUSTER_SIZE = 2

# Models whose tokenizer/training covers English only (a manifest may also say
# so through its "languages" list).
ENGLISH_ONLY_MODELS = frozenset({"all-minilm-l6-v2-q8-v1"})
LANGS = ("en", "zh")
PAIR_LANGS = ("en-en", "zh-zh", "en-zh")

Assign = Literal["first", "best"]


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


@dataclass(frozen=True)
class ClusterScores:
    threshold: float
    clusters: int  # clusters with >= min_size members
    clustered: int  # episodes in those clusters
    pure: int  # clustered episodes whose topic is their cluster's majority topic
    consolidated: int  # episodes of multi-episode topics that are in a cluster
    consolidatable: int  # episodes of multi-episode topics
    wrong_merges: int  # per cluster: distinct topics beyond the first, summed
    absorbed: int  # singleton-topic (distractor) episodes that ended up in a cluster

    @property
    def purity(self) -> float:
        return self.pure / self.clustered if self.clustered else 1.0

    @property
    def consolidated_share(self) -> float:
        return self.consolidated / self.consolidatable if self.consolidatable else 0.0


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


def read_manifest(model_id: str, models_dir: Path = DEFAULT_MODELS_DIR) -> dict[str, Any] | None:
    path = models_dir / model_id / "manifest.json"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        manifest: dict[str, Any] = json.load(fh)
    return manifest


def write_manifest_threshold(model_id: str, threshold: float, models_dir: Path = DEFAULT_MODELS_DIR) -> Path | None:
    """Set ``cluster_threshold`` in the model's manifest, keeping the file's canonical format."""
    path = models_dir / model_id / "manifest.json"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    manifest[MANIFEST_KEY] = threshold
    text = json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def is_english_only(model_id: str, manifest: dict[str, Any] | None) -> bool:
    langs = (manifest or {}).get("languages")
    if isinstance(langs, list) and langs:
        return [str(x).lower() for x in langs] == ["en"]
    return model_id in ENGLISH_ONLY_MODELS


def calibration_langs(model_id: str, manifest: dict[str, Any] | None) -> tuple[str, ...]:
    """Languages of the episodes a model is calibrated on."""
    return ("en",) if is_english_only(model_id, manifest) else LANGS


def model_ids(available: Iterable[Any]) -> list[str]:
    """Sorted ids from ``available_models()`` (manifests with an ``id``, or plain id strings)."""
    return sorted({item if isinstance(item, str) else str(item.id) for item in available})


# ---------------------------------------------------------------------- embedding


def embed_texts(model_id: str, texts: Sequence[str]) -> np.ndarray:
    """Passage vectors of ``texts`` under ``model_id``, one row per text (L2-normalised).

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
    return np.vstack(rows)


def cosine_matrix(vecs: np.ndarray) -> np.ndarray:
    """All pair cosines (vectors are unit length, so cosine = dot), rounded to 6 places so a
    comparison with a threshold on the 0.005 grid cannot flip on float noise."""
    return np.round(vecs.astype(np.float64) @ vecs.astype(np.float64).T, 6)


# ------------------------------------------------------------------- pair scoring


def pair_scores(cos: np.ndarray, same: np.ndarray, mask: np.ndarray, threshold: float) -> PairScores:
    """Precision/recall of "cosine >= threshold" as a predictor of "same topic" over the pairs in ``mask``."""
    pred = cos >= threshold
    tp = int(np.sum(pred & same & mask))
    fp = int(np.sum(pred & ~same & mask))
    fn = int(np.sum(~pred & same & mask))
    return PairScores(threshold, tp, fp, fn)


# ------------------------------------------------------------------- clustering


def leader_clusters(cos: np.ndarray, threshold: float, assign: Assign = "first") -> list[list[int]]:
    """Greedy leader clustering of rows 0..n-1 of ``cos``, taken in index order (oldest first).

    ``first``: the oldest unclustered episode becomes a leader and claims every
    unclustered episode whose cosine to it is >= threshold; repeat.
    ``best``: each episode in turn joins the existing leader it is most similar
    to if that cosine is >= threshold (ties: the older leader), else leads a new cluster.
    Either way every member has cosine >= threshold to its leader; clusters are
    returned in leader order, members in index order, singletons included.
    """
    n = cos.shape[0]
    if assign == "first":
        owner = np.full(n, -1)
        clusters: list[list[int]] = []
        for i in range(n):
            if owner[i] >= 0:
                continue
            members = [j for j in range(i, n) if owner[j] < 0 and (j == i or cos[i, j] >= threshold)]
            for j in members:
                owner[j] = len(clusters)
            clusters.append(members)
        return clusters
    leaders: list[int] = []
    groups: list[list[int]] = []
    for i in range(n):
        if leaders:
            sims = cos[i, leaders]
            k = int(np.argmax(sims))  # first maximum = the older leader
            if sims[k] >= threshold:
                groups[k].append(i)
                continue
        leaders.append(i)
        groups.append([i])
    return groups


def cluster_scores(
    clusters: Sequence[Sequence[int]], topics: Sequence[str], threshold: float, min_size: int
) -> ClusterScores:
    sizes = Counter(topics)
    kept = [c for c in clusters if len(c) >= min_size]
    clustered = pure = wrong = absorbed = consolidated = 0
    for members in kept:
        counts = Counter(topics[i] for i in members)
        clustered += len(members)
        pure += counts.most_common(1)[0][1]
        wrong += len(counts) - 1
        absorbed += sum(1 for i in members if sizes[topics[i]] == 1)
        consolidated += sum(1 for i in members if sizes[topics[i]] >= 2)
    consolidatable = sum(n for n in sizes.values() if n >= 2)
    return ClusterScores(threshold, len(kept), clustered, pure, consolidated, consolidatable, wrong, absorbed)


# ------------------------------------------------------------------------ choice


def choose(pairs: Sequence[PairScores], clusters: Sequence[ClusterScores]) -> tuple[int, bool]:
    """Index of the chosen threshold, and whether the fallback was used.

    The lowest threshold with pair precision >= MIN_PRECISION (and at least one
    pair above it) and cluster purity >= MIN_PURITY (and at least one cluster).
    Otherwise the threshold with the best min(precision, purity), ties to the
    better recall, then to the lower threshold.
    """
    for i, (p, c) in enumerate(zip(pairs, clusters, strict=True)):
        if p.tp > 0 and c.clusters > 0 and p.precision >= MIN_PRECISION and c.purity >= MIN_PURITY:
            return i, False
    best = max(
        range(len(pairs)),
        key=lambda i: (round(min(pairs[i].precision, clusters[i].purity), 9), round(pairs[i].recall, 9), -i),
    )
    return best, True


def stable_from(pairs: Sequence[PairScores], clusters: Sequence[ClusterScores]) -> int | None:
    """Index of the lowest threshold from which both criteria hold at it and every higher threshold
    (thresholds where no pair reaches T count as holding); None if the highest one fails."""
    found: int | None = None
    for i in range(len(pairs) - 1, -1, -1):
        p, c = pairs[i], clusters[i]
        if p.tp and (p.precision < MIN_PRECISION or c.purity < MIN_PURITY):
            break
        if p.tp:
            found = i
    return found


# ------------------------------------------------------------------------ report


def threshold_grid(start: float = DEFAULT_GRID_START) -> tuple[float, ...]:
    """start, start + 0.005, ..., 0.990, rounded so the grid is exact and prints cleanly."""
    steps = round((GRID_END - start) / GRID_STEP)
    return tuple(round(start + GRID_STEP * i, 3) for i in range(steps + 1))


def _pair_lang(a: str, b: str) -> str:
    return "-".join(sorted((a, b)))


def _table(
    pair_rows: Sequence[PairScores],
    cl_rows: Sequence[ClusterScores],
    best_rows: Sequence[ClusterScores],
    lang_rows: dict[str, list[PairScores]],
    chosen: int,
) -> None:
    """Print the sweep; a row identical to the one above (except the threshold) is left out."""
    lang_head = " | ".join(f"{pl + ' P':>8} {pl + ' R':>8}" for pl in lang_rows)
    header = (
        f"  {'thr':>6} | {'P':>5} {'R':>5} {'F1':>5} | {'purity':>6} {'consol':>6} {'wrong':>5} "
        f"{'absorb':>6} {'clust':>5} | {'pur/best':>8} | {lang_head}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    previous = ""
    skipped = 0
    for i, (p, c) in enumerate(zip(pair_rows, cl_rows, strict=True)):
        cells = " | ".join(f"{lang_rows[pl][i].precision:8.3f} {lang_rows[pl][i].recall:8.3f}" for pl in lang_rows)
        body = (
            f"{p.precision:5.3f} {p.recall:5.3f} {p.f1:5.3f} | {c.purity:6.3f} "
            f"{c.consolidated_share:6.3f} {c.wrong_merges:5d} {c.absorbed:6d} {c.clusters:5d} | "
            f"{best_rows[i].purity:8.3f} | {cells}"
        )
        last = i == len(pair_rows) - 1
        if body == previous and i != chosen and not last:
            skipped += 1
            continue
        if skipped:
            print(f"  {'':6s}   ({skipped} identical row{'s' if skipped > 1 else ''})")
            skipped = 0
        mark = " <- chosen" if i == chosen else ""
        print(f"  {p.threshold:6.3f} | {body}{mark}")
        previous = body


def calibrate_model(
    model_id: str,
    episodes: Sequence[Episode],
    manifest: dict[str, Any] | None,
    thresholds: Sequence[float],
    min_size: int = DEFAULT_MIN_CLUSTER_SIZE,
    show_errors: bool = False,
) -> dict[str, Any]:
    cal_langs = calibration_langs(model_id, manifest)
    # Only the calibration languages are embedded and clustered: an English-only
    # model is never given the Chinese episodes (engram does not give it any either).
    eps = [e for e in episodes if e.lang in cal_langs]
    topics = [e.topic for e in eps]
    langs = [e.lang for e in eps]
    cos = cosine_matrix(embed_texts(model_id, [e.text for e in eps]))

    n = len(eps)
    topic_arr = np.array(topics)
    same = topic_arr[:, None] == topic_arr[None, :]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    pair_lang = np.array([[_pair_lang(langs[i], langs[j]) for j in range(n)] for i in range(n)])
    lang_masks = {pl: upper & (pair_lang == pl) for pl in PAIR_LANGS if (upper & (pair_lang == pl)).any()}
    sizes = Counter(topics)

    print(f"\n=== {model_id} ===")
    print(
        f"calibrated on langs={','.join(cal_langs)}: {n} episodes, "
        f"{sum(1 for k in sizes.values() if k >= 2)} multi-episode topics, "
        f"{sum(1 for k in sizes.values() if k == 1)} singletons, "
        f"{int(np.sum(same & upper))} same-topic pairs of {int(upper.sum())}"
    )
    for name, m in (("all", upper), *lang_masks.items()):
        sc, dc = cos[m & same], cos[m & ~same]
        same_txt = f"same={sc.mean():.4f} (min {sc.min():.4f})" if sc.size else "same=-"
        print(
            f"  mean cosine {name:5s}: {same_txt}  different={dc.mean():.4f} (max {dc.max():.4f})  pairs={int(m.sum())}"
        )

    pair_rows = [pair_scores(cos, same, upper, t) for t in thresholds]
    lang_rows = {pl: [pair_scores(cos, same, m, t) for t in thresholds] for pl, m in lang_masks.items()}
    cl_rows = [cluster_scores(leader_clusters(cos, t, "first"), topics, t, min_size) for t in thresholds]
    best_rows = [cluster_scores(leader_clusters(cos, t, "best"), topics, t, min_size) for t in thresholds]

    idx, fallback = choose(pair_rows, cl_rows)
    _table(pair_rows, cl_rows, best_rows, lang_rows, idx)

    p, c = pair_rows[idx], cl_rows[idx]
    print(
        f"  chosen threshold: {p.threshold:.3f}  pair P={p.precision:.3f} R={p.recall:.3f} F1={p.f1:.3f} "
        f"(tp={p.tp} fp={p.fp} fn={p.fn}); purity={c.purity:.3f} consolidated={c.consolidated_share:.3f} "
        f"({c.consolidated}/{c.consolidatable}) wrong merges={c.wrong_merges} distractors absorbed={c.absorbed} "
        f"clusters={c.clusters}"
    )
    if fallback:
        print(
            f"  NOTE: pair precision >= {MIN_PRECISION} with purity >= {MIN_PURITY} is not reachable for "
            f"{model_id}; took the threshold with the best min(precision, purity)"
        )
    else:
        if idx == 0:
            print("  NOTE: the lowest grid point qualifies; lower --grid-start to find the real lowest threshold")
        later = [
            thresholds[j]
            for j in range(idx + 1, len(thresholds))
            if pair_rows[j].tp and (pair_rows[j].precision < MIN_PRECISION or cl_rows[j].purity < MIN_PURITY)
        ]
        if later:
            print(f"  NOTE: the criteria fail again at higher thresholds: {', '.join(f'{t:.3f}' for t in later)}")
    stable = stable_from(pair_rows, cl_rows)
    if stable is not None and stable != idx:
        print(f"  criteria hold at every higher threshold from {thresholds[stable]:.3f} on")
    by_lang: dict[str, Any] = {}
    for pl, rows in lang_rows.items():
        s = rows[idx]
        own = next((r for r in rows if r.tp and r.precision >= MIN_PRECISION), None)
        own_txt = (
            f"; alone it would reach P>={MIN_PRECISION} at {own.threshold:.3f} (R={own.recall:.3f})" if own else ""
        )
        print(f"    pairs {pl}: P={s.precision:.3f} R={s.recall:.3f} (tp={s.tp} fp={s.fp} fn={s.fn}){own_txt}")
        by_lang[pl] = {
            "pair_precision": round(s.precision, 4),
            "pair_recall": round(s.recall, 4),
            "lowest_threshold_alone": own.threshold if own else None,
            "recall_at_lowest_threshold_alone": round(own.recall, 4) if own else None,
        }

    chosen = [m for m in leader_clusters(cos, p.threshold, "first") if len(m) >= min_size]
    majority = {i: Counter(topics[j] for j in m).most_common(1)[0][0] for m in chosen for i in m}
    cluster_of = {i: k for k, m in enumerate(chosen) for i in m}
    for lang in cal_langs:
        # Episodes of multi-episode topics that were consolidated with (the majority of) their own topic.
        mine = [i for i in range(n) if langs[i] == lang and sizes[topics[i]] >= 2]
        ok = sum(1 for i in mine if majority.get(i) == topics[i])
        if mine:
            print(f"    {lang} episodes consolidated with their own topic: {ok}/{len(mine)}")
    mixed = sorted({t for t in sizes if len({langs[i] for i in range(n) if topics[i] == t}) > 1})
    if mixed:
        parts = []
        for t in mixed:
            members = [i for i in range(n) if topics[i] == t]
            owners = {cluster_of[i] for i in members if i in cluster_of}
            left = sum(1 for i in members if i not in cluster_of)
            parts.append(f"{t}: {len(owners)} cluster(s), {left} of {len(members)} left out")
        print("    mixed-language topics: " + "; ".join(parts))
    if min_size == 2:
        c3 = cluster_scores(leader_clusters(cos, p.threshold, "first"), topics, p.threshold, 3)
        print(
            f"    if only clusters of >= 3 were consolidated: purity={c3.purity:.3f} "
            f"consolidated={c3.consolidated_share:.3f} wrong merges={c3.wrong_merges}"
        )

    for members in chosen:
        if len({topics[i] for i in members}) == 1:
            continue
        leader = members[0]
        print(f"    WRONG MERGE led by [{topics[leader]}] {eps[leader].text[:70]!r}")
        for i in members[1:]:
            print(f"      cos={cos[leader, i]:.4f} [{topics[i]}] {eps[i].text[:70]!r}")

    if show_errors:
        for i, j in zip(*np.nonzero(upper & same & (cos < p.threshold)), strict=True):
            print(f"    missed pair cos={cos[i, j]:.4f} [{topics[i]}] {eps[i].text[:50]!r} ~ {eps[j].text[:50]!r}")
        for i, j in zip(*np.nonzero(upper & ~same & (cos >= p.threshold)), strict=True):
            print(
                f"    FALSE PAIR  cos={cos[i, j]:.4f} [{topics[i]} ~ {topics[j]}] "
                f"{eps[i].text[:50]!r} ~ {eps[j].text[:50]!r}"
            )

    result: dict[str, Any] = {
        "threshold": p.threshold,
        "pair_precision": round(p.precision, 4),
        "pair_recall": round(p.recall, 4),
        "pair_f1": round(p.f1, 4),
        "purity": round(c.purity, 4),
        "consolidated_share": round(c.consolidated_share, 4),
        "wrong_merges": c.wrong_merges,
        "distractors_absorbed": c.absorbed,
        "clusters": c.clusters,
        "min_cluster_size": min_size,
        "episodes": n,
        "topics": sum(1 for k in sizes.values() if k >= 2),
        "languages": list(cal_langs),
        "pairs_by_language": by_lang,
        "criteria_hold_from": thresholds[stable] if stable is not None else None,
    }
    if fallback:
        result["fallback"] = True
    return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--episodes", type=Path, default=DEFAULT_EPISODES)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR)
    ap.add_argument("--models", nargs="*", help="model ids (default: every available model)")
    ap.add_argument("--min-cluster-size", type=int, default=DEFAULT_MIN_CLUSTER_SIZE)
    ap.add_argument("--grid-start", type=float, default=DEFAULT_GRID_START, help="lowest threshold of the sweep")
    ap.add_argument("--no-manifests", action="store_true", help=f"do not set {MANIFEST_KEY} in the manifests")
    ap.add_argument("--errors", action="store_true", help="list missed and false same-topic pairs at the chosen T")
    args = ap.parse_args(argv)
    if args.min_cluster_size < 2:
        ap.error("--min-cluster-size must be at least 2")
    if not 0.0 <= args.grid_start < GRID_END:
        ap.error(f"--grid-start must be in [0, {GRID_END})")
    thresholds = threshold_grid(args.grid_start)

    episodes = load_episodes(args.episodes)
    print(f"{len(episodes)} episodes, {len({e.topic for e in episodes})} topics from {args.episodes}")
    print(
        f"thresholds {thresholds[0]:.3f}..{thresholds[-1]:.3f} step {GRID_STEP}; "
        f"min cluster size {args.min_cluster_size}"
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
                model_id, episodes, manifest, thresholds, min_size=args.min_cluster_size, show_errors=args.errors
            )
        except Exception as exc:  # a model that is not built / cannot load is skipped, loudly
            print(f"\n=== {model_id} ===\n  SKIPPED: cannot embed with this model: {exc}", file=sys.stderr)

    if not results:
        print("no model could be calibrated", file=sys.stderr)
        return 1

    # Keep entries of models not re-run this time.
    merged: dict[str, Any] = {}
    if args.out.is_file():
        with open(args.out, encoding="utf-8") as fh:
            merged.update(json.load(fh))
    merged.update(results)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(merged, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwrote {args.out}")

    if not args.no_manifests:
        for model_id, res in sorted(results.items()):
            path = write_manifest_threshold(model_id, res["threshold"], args.models_dir)
            if path is None:
                print(f"no manifest for {model_id}; {MANIFEST_KEY} not written")
            else:
                print(f"updated {MANIFEST_KEY}={res['threshold']} in {path}")

    print("\nsummary")
    for model_id, res in sorted(results.items()):
        print(
            f"  {model_id:32s} threshold={res['threshold']:.3f}  pair P={res['pair_precision']:.3f} "
            f"R={res['pair_recall']:.3f}  purity={res['purity']:.3f}  consolidated={res['consolidated_share']:.3f}  "
            f"wrong merges={res['wrong_merges']}" + ("  (FALLBACK)" if res.get("fallback") else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
