#!/usr/bin/env python3
"""How many similar pairs the cell search of compact and audit finds, and how fast, against comparing every pair.

``engram_cli.memory.neighbours.near_pairs`` compares every pair of a group up to ``EXACT_ROWS`` rows and
searches cells above that. This script runs the cell search (forced, whatever the size) and the full
comparison on the same vectors and reports, per threshold, the share of the pairs the full comparison
keeps (each row's ``--per-row`` closest, as the callers keep them) that the cell search found, and both
times.

Vectors come from one of:
  --db PATH               an engram database: the largest namespace of its active model's vectors
                          (e.g. a bench database under ~/.cache/engram-bench/)
  --embedding-cache PATH  engram's embedding cache (``<cache>/embeddings.db``): every vector it holds,
                          real embeddings of whatever engram embedded on this machine (after
                          ``engram eval --dataset bench/long-chat``, the benchmark's turns)
  --npy PATH              a float32 matrix saved with numpy

``--cell`` sets the rows per cell (default the shipped ``neighbours.CELL``); on a few thousand
vectors use a smaller cell so that each probe covers the same small share of the rows as at 100k.
``--probes`` compares each row with that many cells at every threshold (the shipped search uses
``neighbours.PROBES``, and ``neighbours.CLOSE_PROBES`` at ``neighbours.CLOSE_PAIR`` or closer);
``--thresholds 0.9,0.95`` picks the thresholds.

Usage (from the repository root):
  nice -n 10 python scripts/bench_pairs.py --db ~/.cache/engram-bench/timing-g1-f0ddebe4-n100000.db
  nice -n 10 python scripts/bench_pairs.py --embedding-cache ~/.cache/engram/embeddings.db --cell 64
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engram_cli.memory import neighbours

THRESHOLDS = (0.85, 0.905, 0.935, 0.975)  # e5: supersede, cluster (Latin, CJK), merge


def from_db(path: Path) -> np.ndarray:
    from engram_cli import Engram

    with Engram.open(path) as mem:
        table = mem.store.vectors.table_for(mem.active_model)
        if table is None:
            raise SystemExit(f"{path} holds no vectors of {mem.active_model}")
        counts = mem.store.rows(f"SELECT namespace, count(*) FROM {table} GROUP BY namespace ORDER BY 2 DESC")
        namespace = str(counts[0][0])
        rows = mem.store.rows(f"SELECT embedding FROM {table} WHERE namespace = ?", (namespace,))
    print(f"{path}: namespace {namespace!r}, {len(rows):,} vectors", file=sys.stderr)
    return np.stack([np.frombuffer(blob, dtype=np.float32) for (blob,) in rows])


def from_cache(path: Path) -> np.ndarray:
    import apsw

    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    vectors = [np.frombuffer(blob, dtype=np.float32) for (blob,) in conn.execute("SELECT vector FROM vectors")]
    dims = {len(v) for v in vectors}
    if len(dims) != 1:
        dim = max(dims, key=lambda d: sum(len(v) == d for v in vectors))
        vectors = [v for v in vectors if len(v) == dim]
    print(f"{path}: {len(vectors):,} cached vectors", file=sys.stderr)
    return np.stack(vectors)


def closest_pairs(n: int, pairs: neighbours.Pairs, per_row: int) -> set[tuple[int, int]]:
    """The pairs among some row's ``per_row`` closest."""
    near = neighbours.Neighbours.of(n, pairs)
    out: set[tuple[int, int]] = set()
    for row in range(n):
        for other in near.of_row(row)[0][:per_row]:
            out.add((min(row, other), max(row, other)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", type=Path)
    source.add_argument("--embedding-cache", type=Path)
    source.add_argument("--npy", type=Path)
    parser.add_argument("--cell", type=int, default=neighbours.CELL)
    parser.add_argument("--per-row", type=int, default=32)
    parser.add_argument(
        "--probes", type=int, help="cells each row is compared with, at every threshold (default: as shipped)"
    )
    parser.add_argument("--thresholds", type=lambda v: [float(x) for x in v.split(",")], default=list(THRESHOLDS))
    parser.add_argument("--json", type=Path, metavar="PATH")
    args = parser.parse_args()
    if args.db:
        matrix = from_db(args.db)
    elif args.embedding_cache:
        matrix = from_cache(args.embedding_cache)
    else:
        matrix = np.load(args.npy)
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    neighbours.CELL = args.cell
    if args.probes is not None:
        neighbours.PROBES = neighbours.CLOSE_PROBES = args.probes
    results = []
    probes = f"{neighbours.PROBES} probes ({neighbours.CLOSE_PROBES} at {neighbours.CLOSE_PAIR} or closer)"
    print(f"{len(matrix):,} rows, cells of {args.cell}, {probes}, {args.per_row} pairs per row")
    print(f"{'threshold':>9} {'pairs':>10} {'kept':>9} {'found':>7} {'every pair':>11} {'cells':>8}")
    for threshold in args.thresholds:
        t0 = time.perf_counter()
        every = neighbours.pairs_above(matrix, threshold)
        t_every = time.perf_counter() - t0
        wanted = closest_pairs(len(matrix), every, args.per_row)
        t0 = time.perf_counter()
        found = neighbours.near_pairs(matrix, threshold, per_row=args.per_row, exact_rows=0)
        t_cells = time.perf_counter() - t0
        got = set(zip(found.left.tolist(), found.right.tolist(), strict=True))
        share = len(wanted & got) / len(wanted) if wanted else 1.0
        results.append({"threshold": threshold, "pairs": len(every), "kept": len(wanted), "found_share": share,
                        "every_pair_s": t_every, "cells_s": t_cells})  # fmt: skip
        print(f"{threshold:>9} {len(every):>10,} {len(wanted):>9,} {share:>7.2%} {t_every:>10.2f}s {t_cells:>7.2f}s")
    if args.json:
        shape = {"rows": len(matrix), "cell": args.cell, "probes": neighbours.PROBES,
                 "close_probes": neighbours.CLOSE_PROBES, "per_row": args.per_row}  # fmt: skip
        args.json.write_text(json.dumps({**shape, "results": results}, indent=2))


if __name__ == "__main__":
    main()
