#!/usr/bin/env python3
"""Grow a benchmark database to a larger size for recall *timing* only, without embedding every text.

Embedding 100,000 texts with the default model takes well over an hour on a 2-core machine, while recall time
depends on the number of rows, not on which vectors they hold. This script copies a database built by
scripts/bench.py (real texts, real vectors), then adds further real synthetic texts (the same seeded stream,
continued) whose vectors are copies of the real ones plus a little noise, renormalised. Merging is off for the
added rows. Never use such a database to judge recall *quality*.

    python scripts/bench_timing_db.py SOURCE.db TARGET.db --size 100000
    python -c "import sys; sys.path[:0] = ['scripts', '.']; import bench, json, pathlib; \\
        print(json.dumps(bench.bench_size(100000, pathlib.Path('TARGET.db')), indent=1, default=str))"

TARGET.json (next to TARGET.db) records how it was made, as bench_size expects.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for entry in (HERE, HERE.parent):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

import synthetic  # noqa: E402

import bench  # noqa: E402

NOISE = 0.02


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args(argv)
    shutil.copyfile(args.source, args.target)
    with bench._PrecomputedEngram.open(args.target) as mem:
        mem.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        done = int(mem.store.scalar("SELECT count(*) FROM events WHERE kind IN ('created', 'merged')"))
        items = synthetic.memories(args.size, seed=bench.DATA_SEED)[done:]
        table = mem.store.vectors.table_for(mem.active_model)
        real = np.stack(
            [
                np.frombuffer(r[0], dtype=np.float32)
                for r in mem.store.rows(f"SELECT embedding FROM {table} LIMIT 20000")
            ]
        )
        rng = np.random.default_rng(0)
        copied: dict[str, np.ndarray] = {}
        for i, item in enumerate(items):
            v = real[i % len(real)] + rng.normal(0, NOISE, real.shape[1]).astype(np.float32)
            copied[item["content"]] = (v / np.linalg.norm(v)).astype(np.float32)
        mem.table_embedder = bench._TableEmbedder(mem.active_model, real.shape[1], copied)
        began = time.perf_counter()
        mem.add_many(items, batch_size=64, no_merge=True)
        seconds = time.perf_counter() - began
        rows = int(mem.store.scalar("SELECT count(*) FROM memories"))
        mem.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    meta = {
        "inputs": args.size,
        "rows": rows,
        "merged": args.size - rows,
        "build_seconds": None,
        "build_per_s": None,
        "note": f"timing only: {done:,} memories embedded for real, {len(items):,} more with copied vectors",
        "fill_seconds": seconds,
    }
    args.target.with_suffix(".json").write_text(json.dumps(meta, indent=2))
    print(f"{rows:,} rows in {args.target} ({len(items):,} added in {seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
