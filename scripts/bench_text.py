#!/usr/bin/env python3
"""Benchmark every per-text step of add and recall on adversarial inputs, to show time grows linearly.

For each input kind (one letter repeated, digits, ``a.`` x n, ``a_`` x n, ``aB`` x n, a CJK run, a
``/``-joined path, commas, a mixed soup …) and each size, the best of three wall times
(``time.perf_counter``) of: keyword analysis (``index_text``), the query's terms as FTS5 matches them (``fts_query``),
``script_of``, the merge guard's profile of both texts, time expressions (find and strip), the e5
and MiniLM encoders, and redaction. The last column is the ratio of the largest size's time to the
smallest's, over the ratio of their sizes: about 1 for linear steps, the size ratio for quadratic ones.

Usage (from the repository root):
  python scripts/bench_text.py [--sizes 10000,100000] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from engram_cli.embed import load_embedder  # noqa: E402
from engram_cli.lang import redact, timeexpr  # noqa: E402
from engram_cli.lang import text as textmod  # noqa: E402
from engram_cli.memory import similarity  # noqa: E402
from engram_cli.store.keywords import match_expression  # noqa: E402

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def inputs(n: int) -> dict[str, str]:
    rng = random.Random(1)
    return {
        "x": "x" * n,
        "digits": "7" * n,
        "a.": "a." * (n // 2),
        "a_": "a_" * (n // 2),
        "aB": "aB" * (n // 2),
        "x1": "x1" * (n // 2),
        "cjk": "中" * n,
        "negations": "不别没未" * (n // 4),
        "path": "/".join(["src"] * (n // 4)),
        "commas": " ," * (n // 2),
        "1-": "1-" * (n // 2),
        "mixed": "".join(rng.choice("aZ9_.-/:中 不',") for _ in range(n)),
    }


def _time_of(query: str) -> None:
    found = timeexpr.find_time(query, NOW)
    if found is not None:
        timeexpr.strip_time(query, found)


def steps() -> dict[str, Callable[[str], object]]:
    e5 = load_embedder()
    minilm = load_embedder("all-minilm-l6-v2-q8-v1")
    e5_encode = e5._encoder.encode_batch  # type: ignore[attr-defined]
    minilm_encode = minilm._encoder.encode_batch  # type: ignore[attr-defined]
    return {
        "index_text": textmod.index_text,
        "fts_query": lambda s: match_expression(textmod.query_terms(s)),
        "script_of": textmod.script_of,
        "merge_guard": lambda s: similarity.merge_decision(s, s[:-1] + "!", 0.99, 0.95),
        "time_expr": lambda s: _time_of(s + " yesterday"),
        "e5_tokens": lambda s: e5_encode(["query: " + s]),
        "minilm_tokens": lambda s: minilm_encode([s]),
        "redact": redact.redact,
    }


def best_of(step: Callable[[str], object], value: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        step(value)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="input sizes in characters, comma-separated")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    by_size = {n: inputs(n) for n in sizes}
    results = []
    header = f"{'step':14s} {'input':10s} " + " ".join(f"{n:>10d}" for n in sizes) + "  growth"
    print(header)
    for name, step in steps().items():
        for kind in by_size[sizes[0]]:
            seconds = [best_of(step, by_size[n][kind]) for n in sizes]
            growth = (seconds[-1] / max(seconds[0], 1e-6)) / (sizes[-1] / sizes[0])
            results.append({"step": name, "input": kind, "sizes": sizes, "seconds": seconds, "growth": growth})
            cells = " ".join(f"{s * 1000:8.1f}ms" for s in seconds)
            print(f"{name:14s} {kind:10s} {cells}  {growth:6.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
