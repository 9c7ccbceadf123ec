#!/usr/bin/env python3
"""Calibrate recall's relevance (the chance a hit is relevant) per embedding model, and pick the default floor.

For every bundled model (or the ``--models`` given):

1. Measure the model's typical cosine of an unrelated query and passage, per pair of scripts:
   every question of TOPICS against every statement of the other topics, in English and Chinese
   (Chinese only for models that read it). This is the zero of the semantic evidence.
2. Run every query of bench/dev-memory and bench/long-chat, the answerable ones and the no-answer
   ones (``"expected": {"none": true}``), through engram's recall with no floor and collect each
   candidate's evidence (cosine, keyword share, time match) with its label (relevant or not).
3. Fit a logistic model P(relevant | features) on those candidates (L2-regularised Newton steps;
   a feature whose weight comes out negative is left out and the rest refitted, so more evidence
   never lowers the probability). Held-out check: fitted on one set, scored on the other.
4. Sweep the floor from 0 to 1 and report, per set, abstention (share of no-answer queries with
   no candidate at or above the floor) and R@5 on the answerable queries (the ranked hits that
   clear the floor). For the default model the chosen ``recall.min_relevance`` is the middle of
   the floors that keep abstention >= 0.9 and lose at most 0.01 of R@5 on every set; when none
   does (the near-miss questions, which share the topic and most words of a stored memory, look
   like answerable paraphrases to these features), the lowest floor at which >= 0.9 of the
   off-domain questions of every set get nothing, and the shortfall is printed.

Outputs: a report on stdout; with ``--write``, engram_cli/memory/relevance.json (coefficients and
baselines per model) and, for the default model, the default of ``recall.min_relevance`` in
engram_cli/config/settings.py is printed for you to set (it is a setting's default: code, not data).

Usage (from the repository root):
  python scripts/calibrate_relevance.py [--models ID ...] [--write] [--json report.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from engram_cli.embed import DEFAULT_MODEL_ID, load_embedder  # noqa: E402
from engram_cli.memory import evaluation as evalmod  # noqa: E402
from engram_cli.memory import relevance as relevancemod  # noqa: E402

DATASETS = ("bench/dev-memory", "bench/long-chat")
MODELS_DIR = REPO_ROOT / "models"
ENGLISH_ONLY_MODELS = frozenset({"all-minilm-l6-v2-q8-v1"})
POOL = 50  # hits kept per query: recall's candidate lists are 50 deep
# The fit sees each query's first FIT_DEPTH hits: the probability is the chance that a hit recall would show
# is relevant, not that one of the many weak candidates behind them is (2.5% of those are).
FIT_DEPTH = 10
K = 5
FLOORS = tuple(round(0.01 * i, 2) for i in range(100))
TARGET_ABSTENTION = 0.9
MAX_R5_DROP = 0.01
L2 = 1.0  # ridge on the weights, total (not per candidate): just enough to keep a separable feature finite

# One question and one statement per topic, in English and Chinese; topics share nothing, so a question
# and another topic's statement are an unrelated pair.
TOPICS: tuple[tuple[str, str, str, str], ...] = (
    ("How long should I boil an egg?", "Soft-boiled eggs need about six minutes in boiling water.",
     "鸡蛋要煮多久？", "溏心蛋在沸水里煮大约六分钟。"),
    ("Who won the football world cup in 1998?", "France beat Brazil 3-0 in the 1998 final.",
     "1998年世界杯冠军是谁？", "1998年决赛法国三比零战胜巴西。"),
    ("Why is the sky blue?", "Air scatters short blue wavelengths of sunlight more than red ones.",
     "天空为什么是蓝色的？", "空气对阳光中蓝色短波的散射比红色更强。"),
    ("What should I feed a kitten?", "Kittens need wet food rich in protein several times a day.",
     "小猫应该喂什么？", "小猫每天需要吃几次富含蛋白质的湿粮。"),
    ("How do I get to the airport by train?", "The airport express leaves the central station every fifteen minutes.",
     "怎么坐火车去机场？", "机场快线每十五分钟从中央车站发车一班。"),
    ("When was the Great Wall built?", "Most of the wall standing today was built during the Ming dynasty.",
     "长城是什么时候修建的？", "现存的大部分城墙修建于明朝。"),
    ("How often should I water a cactus?", "A cactus needs water only every two to three weeks.",
     "仙人掌多久浇一次水？", "仙人掌每两到三周浇一次水就够了。"),
    ("What is a good stretch for back pain?", "Lying on your back and pulling both knees to the chest "
     "eases the lower back.",
     "背痛做什么拉伸好？", "仰卧抱膝可以放松下背部。"),
    ("Which planet has the most moons?", "Saturn has more known moons than any other planet.",
     "哪颗行星的卫星最多？", "土星已知的卫星数量比其他行星都多。"),
    ("How do I remove a red wine stain?", "Blot the stain and cover it with salt before washing in cold water.",
     "红酒渍怎么去除？", "先吸干污渍，撒上盐，再用冷水清洗。"),
    ("What key is this violin sonata in?", "The sonata is written in A minor and opens with a slow adagio.",
     "这首小提琴奏鸣曲是什么调？", "这首奏鸣曲是a小调，以慢板开场。"),
    ("How much does a wedding dress cost?", "Wedding dresses usually cost between one and three thousand dollars.",
     "婚纱一般多少钱？", "婚纱的价格通常在一到三万元之间。"),
    ("Is it going to snow in the mountains?", "Heavy snow is forecast above two thousand metres this weekend.",
     "山里会下雪吗？", "本周末海拔两千米以上预计有大雪。"),
    ("Who painted the ceiling of the Sistine Chapel?", "Michelangelo painted the chapel's ceiling "
     "between 1508 and 1512.",
     "西斯廷教堂的天顶画是谁画的？", "米开朗基罗在1508年到1512年间绘制了教堂天顶。"),
    ("How many eggs does a hen lay?", "A healthy hen lays around five eggs a week.",
     "一只母鸡下多少蛋？", "健康的母鸡每周大约下五个蛋。"),
    ("What tyre pressure does a road bike need?", "Road bike tyres are usually pumped to about seven bar.",
     "公路车胎压要打多少？", "公路车的胎压一般打到七个大气压左右。"),
)  # fmt: skip


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bundled_models() -> list[str]:
    return sorted(p.name for p in MODELS_DIR.iterdir() if (p / "manifest.json").exists())


def unrelated_cosines(model: str) -> dict[str, float]:
    """'query script-memory script' -> mean cosine of a question and another topic's statement."""
    embedder = load_embedder(model)
    scripts = {"latin": (0, 1)} if model in ENGLISH_ONLY_MODELS else {"latin": (0, 1), "cjk": (2, 3)}
    out: dict[str, float] = {}
    for qs, (qi, _) in scripts.items():
        questions = embedder.embed_batch([t[qi] for t in TOPICS], kind="query")
        for ms, (_, mi) in scripts.items():
            statements = embedder.embed_batch([t[mi] for t in TOPICS], kind="passage")
            cos = np.asarray(questions) @ np.asarray(statements).T
            off = ~np.eye(len(TOPICS), dtype=bool)
            out[f"{qs}-{ms}"] = round(float(cos[off].mean()), 4)
    return out


@dataclass
class Candidate:
    evidence: relevancemod.Evidence
    relevant: bool
    eval_id: str | None


@dataclass
class Ranked:
    query: evalmod.Query
    candidates: list[Candidate]  # recall's order, no floor


def collect(model: str, dataset: str) -> list[Ranked]:
    """Every query of ``dataset`` through recall with no floor: each candidate's evidence and label."""
    from engram_cli.api.engram import Engram

    os.environ["ENGRAM_MODEL"] = model
    mem, queries = Engram.open_dataset(REPO_ROOT / dataset)
    out: list[Ranked] = []
    try:
        settings = replace(mem.recall_settings(), min_relevance=0.0)
        for q in queries:
            flt = mem.filters(namespace=q.namespace, all_namespaces=q.namespace is None, **q.filters)
            hits = mem.recall(q.text, k=POOL, bump=False, settings=settings, filters=flt, now=q.now)
            candidates = [
                Candidate(
                    _evidence(h.explain["evidence"]), evalmod.relevant(q, h.memory), h.memory.metadata.get("eval_id")
                )
                for h in hits
            ]
            out.append(Ranked(q, candidates))
    finally:
        mem.close()
    return out


def _evidence(raw: dict[str, Any]) -> relevancemod.Evidence:
    query_script, memory_script = raw["scripts"].split("-")
    return relevancemod.Evidence(
        cosine=raw["cosine"],
        cross_cosine=raw["cross_cosine"],
        keyword=raw["keyword_share"],
        time=raw["time_window_match"],
        query_script=query_script,
        memory_script=memory_script,
    )


def fit(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Logistic regression (intercept, weights) with no negative weight: drop such features and refit."""
    active = list(range(x.shape[1]))
    while True:
        b, w = _newton(x[:, active], y)
        if (w >= 0).all():
            weights = np.zeros(x.shape[1])
            weights[active] = w
            return b, weights
        active = [a for a, v in zip(active, w, strict=True) if v >= 0]


def _newton(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    design = np.hstack([np.ones((len(x), 1)), x])
    beta = np.zeros(design.shape[1])
    penalty = np.eye(design.shape[1]) * L2
    penalty[0, 0] = 0.0  # the intercept is not shrunk
    for _ in range(100):
        p = 1 / (1 + np.exp(-design @ beta))
        grad = design.T @ (p - y) + penalty @ beta
        hess = (design * (p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(beta[0]), beta[1:]


def matrix(calibration: relevancemod.Calibration, ranked: Sequence[Ranked]) -> tuple[np.ndarray, np.ndarray]:
    rows = [calibration.features(c.evidence) for r in ranked for c in r.candidates[:FIT_DEPTH]]
    labels = [1.0 if c.relevant else 0.0 for r in ranked for c in r.candidates[:FIT_DEPTH]]
    return np.asarray(rows, dtype=float).reshape(-1, len(relevancemod.FEATURES)), np.asarray(labels)


Point = tuple[float | None, float, float | None]  # abstention, R@5, abstention on the off-domain queries


def sweep(calibration: relevancemod.Calibration, ranked: Sequence[Ranked]) -> dict[float, Point]:
    """floor -> (abstention on the no-answer queries, R@5 on the answerable ones, abstention off-domain)."""
    probabilities = [[calibration.probability(c.evidence) for c in r.candidates] for r in ranked]
    out: dict[float, Point] = {}
    for floor in FLOORS:
        abstained: list[bool] = []
        off_domain: list[bool] = []
        found: list[float] = []
        for r, chances in zip(ranked, probabilities, strict=True):
            kept = [c for c, p in zip(r.candidates, chances, strict=True) if p >= floor]
            if not r.query.answerable:
                abstained.append(not kept)
                if "off-domain" in (r.query.labels.get("kinds") or []):
                    off_domain.append(not kept)
                continue
            top = kept[:K]
            if r.query.expected_kind == "ids":
                wanted = r.query.expected
                found.append(sum(1 for e in wanted if any(c.eval_id == e for c in top)) / len(wanted))
            else:
                found.append(1.0 if any(c.relevant for c in top) else 0.0)
        abstention = sum(abstained) / len(abstained) if abstained else None
        off = sum(off_domain) / len(off_domain) if off_domain else None
        out[floor] = (abstention, sum(found) / len(found) if found else 0.0, off)
    return out


def choose_floors(sweeps: dict[str, dict[float, Point]]) -> tuple[float, float, bool]:
    """(recall's floor, the per-prompt hook's floor, whether one floor meets both targets on every set).

    When one floor does, both are the middle of the floors that do. When none does, the answerable and
    the no-answer queries overlap too much in the evidence, and the two uses part ways:

    - recall (a question somebody asked): the highest floor that keeps R@5 within MAX_R5_DROP of no
      floor on every set: an answer lost costs more than a weak hit shown with its relevance;
    - the per-prompt hook (memories added to a prompt nobody asked engram about): the lowest floor at
      which at least TARGET_ABSTENTION of the off-domain queries ("what is the capital of France") of
      every set get nothing: noise injected costs more there than a miss.
    """
    keeps = [f for f in FLOORS if all(s[f][1] >= s[0.0][1] - MAX_R5_DROP - 1e-9 for s in sweeps.values())]
    good = [f for f in keeps if all((s[f][0] or 0.0) >= TARGET_ABSTENTION for s in sweeps.values())]
    if good:
        middle = round((min(good) + max(good)) / 2, 2)
        return middle, middle, True
    off = [f for f in FLOORS if all((s[f][2] or 0.0) >= TARGET_ABSTENTION for s in sweeps.values())]
    return max(keeps), (off[0] if off else FLOORS[-1]), False


def calibrate(model: str) -> dict[str, Any]:
    log(f"{model}: unrelated-pair cosines")
    unrelated = unrelated_cosines(model)
    log(f"  {unrelated}")
    data: dict[str, list[Ranked]] = {}
    for dataset in DATASETS:
        log(f"{model}: recalling {dataset}")
        ranked = collect(model, dataset)
        if model in ENGLISH_ONLY_MODELS:
            # The model cannot read Chinese: its Chinese queries would teach it noise.
            ranked = [r for r in ranked if r.query.labels.get("lang") != "zh"]
        data[dataset] = ranked
    blank = relevancemod.Calibration(model, 0.0, (0.0,) * len(relevancemod.FEATURES), unrelated)
    x, y = matrix(blank, [r for ranked in data.values() for r in ranked])
    intercept, weights = fit(x, y)
    calibration = replace(blank, intercept=intercept, weights=tuple(float(w) for w in weights))
    log(f"  fitted on {len(y)} candidates ({int(y.sum())} relevant): b={intercept:.3f} w={np.round(weights, 3)}")
    held_out: dict[str, float] = {}
    for train, test in (DATASETS, DATASETS[::-1]):
        xt, yt = matrix(blank, data[train])
        b, w = fit(xt, yt)
        xs, ys = matrix(blank, data[test])
        p = 1 / (1 + np.exp(-(b + xs @ w)))
        held_out[f"{train}->{test}"] = round(
            float(-np.mean(ys * np.log(p + 1e-12) + (1 - ys) * np.log(1 - p + 1e-12))), 4
        )
    sweeps = {dataset: sweep(calibration, ranked) for dataset, ranked in data.items()}
    return {
        "calibration": calibration,
        "sweeps": sweeps,
        "held_out_log_loss": held_out,
        "candidates": len(y),
        "relevant": int(y.sum()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", help="model ids (default: every bundled model)")
    parser.add_argument("--write", action="store_true", help="write engram_cli/memory/relevance.json")
    parser.add_argument("--json", help="write the full report here")
    args = parser.parse_args(argv)
    models = args.models or bundled_models()
    results = {model: calibrate(model) for model in models}
    floor, prompt_floor, met = (
        choose_floors(results[DEFAULT_MODEL_ID]["sweeps"]) if DEFAULT_MODEL_ID in results else (0.0, 0.0, False)
    )
    report: dict[str, Any] = {
        "default_floor": floor, "prompt_floor": prompt_floor, "targets_met": met, "models": {}
    }  # fmt: skip
    for model, result in results.items():
        cal: relevancemod.Calibration = result["calibration"]
        print(f"\n{model}: intercept {cal.intercept:.3f}, weights "
              + ", ".join(f"{f} {w:.3f}" for f, w in zip(relevancemod.FEATURES, cal.weights, strict=True)))  # fmt: skip
        print(f"  unrelated cosine {cal.unrelated}; held-out log loss {result['held_out_log_loss']}")
        print(f"  {'floor':>5}  " + "  ".join(f"{d.split('/')[-1]:>41}" for d in result["sweeps"]))
        for f in sorted(set(FLOORS[:10] + FLOORS[10::5] + (floor, prompt_floor))):
            cells = []
            for s in result["sweeps"].values():
                abstention, r5, off = s[f]
                cells.append(
                    f"abst {abstention if abstention is not None else float('nan'):.3f} "
                    f"(off-domain {off if off is not None else float('nan'):.2f}) R@5 {r5:.3f}"
                )
            mark = "  <- recall" if f == floor else "  <- per-prompt hook" if f == prompt_floor else ""
            print(f"  {f:>5.2f}  " + "  ".join(f"{c:>41}" for c in cells) + mark)
        report["models"][model] = {
            "intercept": round(cal.intercept, 4),
            "weights": {f: round(w, 4) for f, w in zip(relevancemod.FEATURES, cal.weights, strict=True)},
            "unrelated_cosine": cal.unrelated,
            "held_out_log_loss": result["held_out_log_loss"],
            "candidates": result["candidates"],
            "relevant": result["relevant"],
            "at_prompt_floor": {
                d: {
                    "abstention": s[prompt_floor][0],
                    "abstention_off_domain": s[prompt_floor][2],
                    "recall@5": round(s[prompt_floor][1], 4),
                }
                for d, s in result["sweeps"].items()
            },
            "at_default_floor": {
                d: {
                    "abstention": s[floor][0],
                    "abstention_off_domain": s[floor][2],
                    "recall@5": round(s[floor][1], 4),
                    "recall@5_no_floor": round(s[0.0][1], 4),
                }
                for d, s in result["sweeps"].items()
            },
        }
    print(f"\ndefault recall.min_relevance: {floor}, hooks.prompt_min_relevance: {prompt_floor} "
          f"(one floor {'meets' if met else 'cannot meet'} both targets: abstention >= {TARGET_ABSTENTION} and an "
          f"R@5 drop <= {MAX_R5_DROP} on every set)")  # fmt: skip
    if args.write:
        shipped = {
            "fallback": DEFAULT_MODEL_ID,
            "note": "written by scripts/calibrate_relevance.py; see engram_cli/memory/relevance.py",
            "models": {
                m: {k: r[k] for k in ("intercept", "weights", "unrelated_cosine")} for m, r in report["models"].items()
            },
        }
        relevancemod.CALIBRATION_FILE.write_text(
            json.dumps(shipped, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        log(f"wrote {relevancemod.CALIBRATION_FILE.relative_to(REPO_ROOT)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
