#!/usr/bin/env python3
"""Calibrate the per-model merge threshold on labelled memory pairs.

When a new memory is written, engram merges it into an existing memory of the
same namespace/agent if the cosine of their embeddings is >= the model's
``merge_threshold``. Cosine scales differ a lot between models (multilingual-e5
vectors are anisotropic: unrelated sentences already sit around 0.8), so the
threshold is calibrated per model on ``tests/data/merge_pairs.jsonl``.

For every shipped model this script embeds both sides of each pair, sweeps
thresholds from 0.80 to 0.99 in steps of 0.005 and reports precision, recall
and F1 of the "merge" label (overall and per language). The chosen threshold
maximises F1 subject to precision >= 0.95, because a wrong merge destroys a
distinct fact while a missed merge only leaves a near-duplicate behind. If no
threshold reaches that precision, the highest-precision threshold with recall
>= 0.3 is taken and the fallback is reported.

English-only models are calibrated on the English pairs alone; their scores on
the Chinese pairs are printed for information.

Outputs:
  * a table on stdout;
  * scripts/merge_thresholds.json  {model_id: {threshold, precision, recall, f1, pairs}};
  * ``merge_threshold`` updated in models/<id>/manifest.json (unless --no-manifests).

Usage (from the repository root):
  python scripts/calibrate_merge.py [--models ID ...] [--no-manifests] [--errors]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

DEFAULT_PAIRS = REPO_ROOT / "tests" / "data" / "merge_pairs.jsonl"
DEFAULT_OUT = REPO_ROOT / "scripts" / "merge_thresholds.json"
DEFAULT_MODELS_DIR = REPO_ROOT / "models"

# Grid of candidate thresholds: 0.800, 0.805, ..., 0.990 (rounded so the grid
# is exactly reproducible and prints cleanly).
THRESHOLDS: tuple[float, ...] = tuple(round(0.80 + 0.005 * i, 3) for i in range(39))
MIN_PRECISION = 0.95
FALLBACK_MIN_RECALL = 0.3

# Models whose tokenizer/training covers English only. A manifest may also say
# so itself through a "languages" list.
ENGLISH_ONLY_MODELS = frozenset({"all-minilm-l6-v2-q8-v1"})

LABELS = ("merge", "distinct")
LANGS = ("en", "zh", "mixed")


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    label: str
    lang: str
    kind: str


@dataclass(frozen=True)
class Scores:
    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def predicted(self) -> int:
        return self.tp + self.fp

    @property
    def precision(self) -> float:
        # Vacuously 1.0 when nothing is predicted as "merge"; such a threshold
        # has recall 0 and F1 0, so it is never chosen while a better one exists.
        return self.tp / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        pos = self.tp + self.fn
        return self.tp / pos if pos else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if (p + r) and self.tp else 0.0


# --------------------------------------------------------------------------- data


def load_pairs(path: Path = DEFAULT_PAIRS) -> list[Pair]:
    pairs: list[Pair] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            try:
                pair = Pair(obj["a"], obj["b"], obj["label"], obj["lang"], obj["kind"])
            except KeyError as exc:
                raise ValueError(f"{path}:{lineno}: missing field {exc}") from None
            if pair.label not in LABELS:
                raise ValueError(f"{path}:{lineno}: bad label {pair.label!r}")
            if pair.lang not in LANGS:
                raise ValueError(f"{path}:{lineno}: bad lang {pair.lang!r}")
            pairs.append(pair)
    return pairs


def read_manifest(model_id: str, models_dir: Path = DEFAULT_MODELS_DIR) -> dict[str, Any] | None:
    path = models_dir / model_id / "manifest.json"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def update_manifest(model_id: str, values: dict[str, Any], models_dir: Path = DEFAULT_MODELS_DIR) -> Path | None:
    """Set ``values`` in the model's manifest, keeping the file's canonical format; None without a manifest."""
    path = models_dir / model_id / "manifest.json"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    manifest.update(values)
    text = json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def write_manifest_threshold(model_id: str, threshold: float, models_dir: Path = DEFAULT_MODELS_DIR) -> Path | None:
    """Set ``merge_threshold`` in the model's manifest."""
    return update_manifest(model_id, {"merge_threshold": threshold}, models_dir)


def save_results(path: Path, results: dict[str, Any]) -> None:
    """Write ``results`` into the JSON file at ``path``, keeping the entries of models not re-run this time."""
    merged: dict[str, Any] = {}
    if path.is_file():
        with open(path, encoding="utf-8") as fh:
            merged.update(json.load(fh))
    merged.update(results)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(merged, sort_keys=True, indent=2, ensure_ascii=False) + "\n")


def is_english_only(model_id: str, manifest: dict[str, Any] | None) -> bool:
    langs = (manifest or {}).get("languages")
    if isinstance(langs, list) and langs:
        return [str(x).lower() for x in langs] == ["en"]
    return model_id in ENGLISH_ONLY_MODELS


def calibration_langs(model_id: str, manifest: dict[str, Any] | None) -> tuple[str, ...]:
    """Languages of the pairs a model is calibrated (and checked) on."""
    return ("en",) if is_english_only(model_id, manifest) else LANGS


# ---------------------------------------------------------------------- embedding


def model_ids(available: Iterable[Any]) -> list[str]:
    """Sorted ids from ``available_models()`` (manifests with an ``id``, or plain id strings)."""
    return sorted({item if isinstance(item, str) else str(item.id) for item in available})


def pair_cosines(model_id: str, pairs: Sequence[Pair]) -> np.ndarray:
    """Cosine of each pair under ``model_id`` (vectors are L2-normalised, so cosine = dot).

    Each text is embedded on its own, as a memory is when it is written. An int8
    build whose activation quantisation range is taken over the whole batch makes
    a vector depend on its batch neighbours (an early e5 build dynamically
    quantised per tensor moved texts to cosine 0.991 with themselves); embedding
    one at a time keeps each pair's cosine independent of the rest of the file.
    """
    from engram_cli.embed import load_embedder

    embedder = load_embedder(model_id)
    vecs: dict[str, np.ndarray] = {}
    for text in sorted({t for p in pairs for t in (p.a, p.b)}):
        out = np.asarray(embedder.embed_batch([text], kind="passage"), dtype=np.float32)
        if out.shape[0] != 1:
            raise RuntimeError(f"{model_id}: embed_batch returned {out.shape[0]} rows for 1 text")
        vecs[text] = out[0]
    return np.array([float(np.dot(vecs[p.a], vecs[p.b])) for p in pairs], dtype=np.float64)


# ------------------------------------------------------------------------ scoring


def decide(cos: np.ndarray, same: np.ndarray, blocked: np.ndarray, threshold: float) -> np.ndarray:
    """The engine's merge decision (engram_cli.memory.similarity.merge_decision), vectorised:
    same words always merge; otherwise the cosine must reach the threshold with no lexical blocker."""
    # Round before comparing so a cosine of 0.92499999 vs a threshold of 0.925
    # cannot flip between platforms on float noise.
    return np.asarray(same | ((np.round(cos, 6) >= threshold) & ~blocked))


def score(cos: np.ndarray, is_merge: np.ndarray, threshold: float, same: np.ndarray, blocked: np.ndarray) -> Scores:
    pred = decide(cos, same, blocked, threshold)
    tp = int(np.sum(pred & is_merge))
    fp = int(np.sum(pred & ~is_merge))
    fn = int(np.sum(~pred & is_merge))
    tn = int(np.sum(~pred & ~is_merge))
    return Scores(threshold, tp, fp, fn, tn)


def sweep(cos: np.ndarray, is_merge: np.ndarray, same: np.ndarray, blocked: np.ndarray) -> list[Scores]:
    return [score(cos, is_merge, t, same, blocked) for t in THRESHOLDS]


def lexical(pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: same words (always merges), and whether a lexical blocker applies."""
    from engram_cli.memory.similarity import merge_blockers, same_words

    same = np.array([same_words(p.a, p.b) for p in pairs])
    blocked = np.array([bool(merge_blockers(p.a, p.b)) for p in pairs])
    return same, blocked


def choose(rows: Sequence[Scores]) -> tuple[Scores, bool]:
    """Pick the threshold. Returns (scores, used_fallback).

    Max F1 among thresholds with precision >= MIN_PRECISION (and at least one
    predicted merge); ties go to the higher threshold. Otherwise the highest
    precision with recall >= FALLBACK_MIN_RECALL, ties to the higher recall,
    then the higher threshold.
    """
    ok = [s for s in rows if s.tp > 0 and s.precision >= MIN_PRECISION]
    if ok:
        return max(ok, key=lambda s: (round(s.f1, 9), s.threshold)), False
    fb = [s for s in rows if s.recall >= FALLBACK_MIN_RECALL]
    if not fb:
        fb = list(rows)
    return max(fb, key=lambda s: (round(s.precision, 9), round(s.recall, 9), s.threshold)), True


# ------------------------------------------------------------------------- report


def _fmt(s: Scores) -> str:
    return f"P={s.precision:.3f} R={s.recall:.3f} F1={s.f1:.3f} (tp={s.tp} fp={s.fp} fn={s.fn} tn={s.tn})"


def calibrate_model(
    model_id: str,
    pairs: Sequence[Pair],
    manifest: dict[str, Any] | None,
    show_errors: bool = False,
) -> dict[str, Any]:
    cos = pair_cosines(model_id, pairs)
    is_merge = np.array([p.label == "merge" for p in pairs])
    langs = np.array([p.lang for p in pairs])
    cal_langs = calibration_langs(model_id, manifest)
    cal_mask = np.isin(langs, cal_langs)

    print(f"\n=== {model_id} ===")
    print(f"calibrated on langs={','.join(cal_langs)}: {int(cal_mask.sum())} pairs")
    for lang in ("all", *LANGS):
        m = np.ones_like(cal_mask) if lang == "all" else (langs == lang)
        if not m.any():
            continue
        mc = cos[m & is_merge]
        dc = cos[m & ~is_merge]
        print(
            f"  mean cosine {lang:5s}: merge={mc.mean():.4f} (min {mc.min():.4f})  "
            f"distinct={dc.mean():.4f} (max {dc.max():.4f})  n={int(m.sum())}"
        )

    same, blocked = lexical(pairs)
    rows = sweep(cos[cal_mask], is_merge[cal_mask], same[cal_mask], blocked[cal_mask])
    per_lang = {
        lang: sweep(cos[langs == lang], is_merge[langs == lang], same[langs == lang], blocked[langs == lang])
        for lang in LANGS
        if (langs == lang).any()
    }
    header = f"  {'thr':>6} | {'P':>5} {'R':>5} {'F1':>5} | " + " | ".join(
        f"{lang + ' P':>8} {lang + ' R':>6} {lang + ' F1':>7}" for lang in per_lang
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    for i, s in enumerate(rows):
        cells = " | ".join(
            f"{per_lang[lang][i].precision:8.3f} {per_lang[lang][i].recall:6.3f} {per_lang[lang][i].f1:7.3f}"
            for lang in per_lang
        )
        print(f"  {s.threshold:6.3f} | {s.precision:5.3f} {s.recall:5.3f} {s.f1:5.3f} | {cells}")

    best, fallback = choose(rows)
    idx = THRESHOLDS.index(best.threshold)
    print(f"  chosen threshold: {best.threshold:.3f}  {_fmt(best)}")
    if fallback:
        print(
            f"  NOTE: precision >= {MIN_PRECISION} is not reachable for {model_id}; "
            f"took the highest-precision threshold with recall >= {FALLBACK_MIN_RECALL}"
        )
    for lang, lrows in per_lang.items():
        tag = "" if lang in cal_langs else "  (not used for calibration)"
        print(f"    {lang:5s}: {_fmt(lrows[idx])}{tag}")

    pred = decide(cos, same, blocked, best.threshold)
    by_relation: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        if cal_mask[i] and not is_merge[i]:
            counts = by_relation.setdefault(p.kind.split("/")[-1], [0, 0])
            counts[0] += int(pred[i])
            counts[1] += 1
    print(
        "  distinct pairs merged at this threshold, by relation: "
        + ", ".join(f"{rel} {k}/{n}" for rel, (k, n) in sorted(by_relation.items()))
    )

    if show_errors:
        for i, p in enumerate(pairs):
            wrong = pred[i] != is_merge[i]
            if wrong and cal_mask[i]:
                what = "FALSE MERGE" if pred[i] else "missed merge"
                print(f"    {what:12s} cos={cos[i]:.4f} [{p.lang}/{p.kind}] {p.a!r} ~ {p.b!r}")

    return {
        "threshold": best.threshold,
        "precision": round(best.precision, 4),
        "recall": round(best.recall, 4),
        "f1": round(best.f1, 4),
        "pairs": int(cal_mask.sum()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR)
    ap.add_argument("--models", nargs="*", help="model ids (default: every available model)")
    ap.add_argument("--no-manifests", action="store_true", help="do not update models/<id>/manifest.json")
    ap.add_argument("--errors", action="store_true", help="list misclassified pairs at the chosen threshold")
    args = ap.parse_args(argv)

    pairs = load_pairs(args.pairs)
    print(f"{len(pairs)} pairs from {args.pairs}")

    if args.models:
        ids = sorted(set(args.models))
    else:
        from engram_cli.embed import available_models

        ids = model_ids(available_models())

    results: dict[str, Any] = {}
    for model_id in ids:
        manifest = read_manifest(model_id, args.models_dir)
        try:
            results[model_id] = calibrate_model(model_id, pairs, manifest, show_errors=args.errors)
        except Exception as exc:  # a model that is not built / cannot load is skipped, loudly
            print(f"\n=== {model_id} ===\n  SKIPPED: cannot embed with this model: {exc}", file=sys.stderr)

    if not results:
        print("no model could be calibrated", file=sys.stderr)
        return 1

    # Calibrating one model does not drop another's record.
    save_results(args.out, results)
    print(f"\nwrote {args.out}")

    if not args.no_manifests:
        for model_id, res in sorted(results.items()):
            path = write_manifest_threshold(model_id, res["threshold"], args.models_dir)
            if path is None:
                print(f"no manifest for {model_id}; merge_threshold not written")
            else:
                print(f"updated merge_threshold={res['threshold']} in {path}")

    print("\nsummary")
    for model_id, res in sorted(results.items()):
        print(
            f"  {model_id:32s} threshold={res['threshold']:.3f}  P={res['precision']:.3f} "
            f"R={res['recall']:.3f} F1={res['f1']:.3f}  pairs={res['pairs']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
