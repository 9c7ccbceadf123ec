#!/usr/bin/env python3
"""Tune recall's fusion on our benchmark sets: a grid over rrf_k and the list weights.

Every combination runs every query of every dataset through engram's recall (the
dataset databases come from `engram eval --dataset`'s cache). Printed per combination:
R@1/R@5/R@10 and MRR per dataset, and the mean R@5 over the datasets, best first. The
defaults in engram_cli/config/settings.py are the best mean R@5 here (ties: the higher mean R@10).

Usage (from the repository root):
  python scripts/tune_recall.py [bench/dev-memory bench/long-chat] [--top 10]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from engram_cli import Engram  # noqa: E402
from engram_cli.memory import evaluation  # noqa: E402
from engram_cli.memory.recall import RecallSettings  # noqa: E402

RRF_K = (3, 5, 10)
VECTOR = (1.0, 1.5, 2.0)
CROSS = (1.0, 1.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="*", default=["bench/dev-memory", "bench/long-chat"])
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    opened = [Engram.open_dataset(d) for d in args.datasets]
    rows = []
    for rrf_k, wv, wc in itertools.product(RRF_K, VECTOR, CROSS):
        scores = []
        for engram, queries in opened:
            settings: RecallSettings = replace(engram.recall_settings(), rrf_k=rrf_k, vector_weight=wv, cross_weight=wc)

            def search(q: evaluation.Query, depth: int, engram: Engram = engram, s: RecallSettings = settings) -> list:
                flt = engram.filters(namespace=q.namespace, all_namespaces=q.namespace is None, **q.filters)
                return [h.memory for h in engram.recall(q.text, k=depth, bump=False, settings=s, filters=flt)]

            scores.append(evaluation.run(queries, search, ks=(1, 5, 10)).overall)
        mean5 = sum(s.recall[5] for s in scores) / len(scores)
        mean10 = sum(s.recall[10] for s in scores) / len(scores)
        rows.append((mean5, mean10, rrf_k, wv, wc, scores))
    rows.sort(key=lambda r: (-r[0], -r[1]))
    names = [Path(d).name for d in args.datasets]
    print("rrf_k  vector  cross  " + "  ".join(f"{n:>28}" for n in names) + "  mean R@5  mean R@10")
    for mean5, mean10, rrf_k, wv, wc, scores in rows[: args.top]:
        cells = "  ".join(
            f"R@1 {s.recall[1]:.3f} R@5 {s.recall[5]:.3f} R@10 {s.recall[10]:.3f}".rjust(28) for s in scores
        )
        print(f"{rrf_k:>5}  {wv:>6}  {wc:>5}  {cells}  {mean5:>8.3f}  {mean10:>9.3f}")
    for engram, _ in opened:
        engram.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
