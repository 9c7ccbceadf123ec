#!/usr/bin/env python3
"""Benchmark the maintenance verbs at scale: `engram compact` and `engram reembed` on 100,000 memories.

Embedding 100,000 texts for real takes over an hour on a 2-core machine, so the database is built
the way scripts/bench.py builds its timing databases: real synthetic texts (scripts/
synthetic.py), written through the real write path (`add_many`, merging off), with vectors made
from real ones. BASE distinct texts are embedded with the default model; every memory gets the
vector of one of them plus Gaussian noise (cosine about 0.8 to its base, so unrelated rows stay far
apart), except that a share of the episodes come in small groups whose vectors are within cosine
~0.96 of each other: those are the clusters compact is expected to consolidate. The summaries
compact writes are embedded for real. Use such a database to time compaction, never to judge
which episodes belong together (that is scripts/calibrate_compact.py's job, on real vectors).

Reported (wall time, whole `engram` processes):
  * compact: the first run (decay, clustering, writing every consolidated memory) and a second
    run right after it (a fixed point: planning only), in memories scanned per second;
  * audit: `engram audit --json` with every check, and with --quick (no pairwise checks);
  * reembed: `engram reembed --model all-minilm-l6-v2-q8-v1 --limit N` on a copy of the database,
    in memories per second (embedding dominates; the full migration time is extrapolated);
  * consolidation on our own labelled corpus: tests/data/compact_episodes.jsonl embedded for real
    into a fresh database, compacted with the shipped settings: clusters, episodes consolidated.

Usage (from the repository root):
  python scripts/bench_lifecycle.py [--size 100000] [--reembed-limit 2000] [--json out.json] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
for entry in (REPO_ROOT, HERE):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

import synthetic  # noqa: E402

import bench  # noqa: E402
from engram_cli import Engram  # noqa: E402
from engram_cli.embed import DEFAULT_MODEL_ID, load_embedder  # noqa: E402
from engram_cli.lang import text as textmod  # noqa: E402
from engram_cli.timeutil import to_iso  # noqa: E402

BASE = 2_000
SPREAD = 0.75  # noise norm relative to the unit base vector: cosine ~0.8 to the base
GROUP_SPREAD = 0.2  # within a planted group: cosine ~0.98 to the base, ~0.96 to each other
GROUP_SHARE = 0.6  # share of episodes that belong to a planted group (many fade out before compact)
GROUP_SIZE = 3
SEED = 7
ALT_MODEL = "all-minilm-l6-v2-q8-v1"
NOW = "2026-12-01T00:00:00Z"
START = datetime(2026, 9, 1, tzinfo=UTC)
EPISODES_FILE = REPO_ROOT / "tests" / "data" / "compact_episodes.jsonl"


def _noisy(rng: np.random.Generator, base: np.ndarray, spread: float) -> np.ndarray:
    noise = rng.standard_normal(base.shape[0]).astype(np.float32)
    noise *= spread / np.linalg.norm(noise)
    v = base + noise
    return (v / np.linalg.norm(v)).astype(np.float32)


def build(size: int, path: Path) -> dict[str, Any]:
    """Write ``size`` synthetic memories with derived vectors into a new database at ``path``.

    The base vectors are cached beside the database, so a rebuild does not embed them again.
    """
    items = synthetic.memories(size, seed=0)
    for item in items:
        item["content"] = textmod.normalize(item["content"])
    embedder = load_embedder(DEFAULT_MODEL_ID)
    base_texts = list(dict.fromkeys(i["content"] for i in items))[:BASE]
    base_file = path.with_name(f"lifecycle-base-{len(base_texts)}.npy")
    began = time.perf_counter()
    if base_file.exists():
        base = np.load(base_file)
    else:
        bench.log(f"embedding {len(base_texts)} base texts for real")
        base = np.concatenate([embedder.embed_batch(base_texts[i : i + 64]) for i in range(0, len(base_texts), 64)])
        np.save(base_file, base)
    embed_seconds = time.perf_counter() - began
    rng = np.random.default_rng(SEED)
    table: dict[str, np.ndarray] = {}
    planted = 0
    group_left = 0
    group_base: np.ndarray | None = None
    for item in items:
        text = item["content"]
        if text in table:
            continue
        if item["type"] == "episodic" and (group_left or rng.random() < GROUP_SHARE / GROUP_SIZE):
            if not group_left:
                group_base = base[int(rng.integers(len(base)))]
                group_left = GROUP_SIZE
            assert group_base is not None
            table[text] = _noisy(rng, group_base, GROUP_SPREAD)
            group_left -= 1
            planted += 1
        else:
            table[text] = _noisy(rng, base[int(rng.integers(len(base)))], SPREAD)
    bench._remove_db(path)
    began = time.perf_counter()
    with bench._PrecomputedEngram.open(path) as mem:
        assert isinstance(mem, bench._PrecomputedEngram)
        mem.table_embedder = bench._TableEmbedder(embedder.model_id, embedder.dim, table)
        # Merging and supersession look for neighbours on every write; the texts are distinct by construction.
        s = mem.settings
        mem.config = replace(mem.config, settings=replace(s, supersede=replace(s.supersede, enabled=False)))
        for start in range(0, len(items), 4096):
            mem.add_many(items[start : start + 4096], no_merge=True)
            bench.log(f"  wrote {min(start + 4096, len(items)):,}/{len(items):,}")
        bench._checkpoint(mem)
        rows = int(mem.store.scalar("SELECT count(*) FROM memories"))
        episodes = int(mem.store.scalar("SELECT count(*) FROM memories WHERE memory_type = 'episodic'"))
    return {
        "rows": rows,
        "episodes": episodes,
        "planted_group_members": planted,
        "base_embed_seconds": embed_seconds,
        "write_seconds": time.perf_counter() - began,
    }


def run_engram(db: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    argv = [sys.executable, "-m", "engram_cli", "--db", str(db), *args]
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"engram {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return seconds, done


def bench_compact(db: Path, workdir: Path) -> dict[str, Any]:
    work = workdir / "compact.db"
    shutil.copyfile(db, work)
    first_s, first = run_engram(work, "compact", "--now", NOW, "--json")
    second_s, second = run_engram(work, "compact", "--now", NOW, "--json")
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    keys = ("scanned", "created", "consolidated", "joined", "duplicates_folded", "capped", "decayed")
    return {
        "first": {"seconds": first_s, "per_s": a["scanned"] / first_s, **{k: a[k] for k in keys}},
        "second": {"seconds": second_s, "per_s": b["scanned"] / second_s, **{k: b[k] for k in keys}},
    }


def bench_audit(db: Path, workdir: Path) -> dict[str, Any]:
    """`engram audit` (every check) and `engram audit --quick` on the untouched database."""
    work = workdir / "audit.db"
    shutil.copyfile(db, work)
    out: dict[str, Any] = {}
    for name, extra in (("full", ()), ("quick", ("--quick",))):
        seconds, done = run_engram(work, "audit", "--json", *extra)
        report = json.loads(done.stdout)
        counts = {c["name"]: c["count"] for c in report["checks"]}
        out[name] = {"seconds": seconds, "counts": counts}
    return out


def bench_reembed(db: Path, workdir: Path, limit: int) -> dict[str, Any]:
    work = workdir / "reembed.db"
    shutil.copyfile(db, work)
    seconds, done = run_engram(work, "reembed", "--model", ALT_MODEL, "--limit", str(limit), "--json")
    report = json.loads(done.stdout)
    with Engram.open(work) as mem:
        total = int(mem.store.scalar("SELECT count(*) FROM memories"))
    rate = report["reembedded"] / seconds
    return {
        "model": ALT_MODEL,
        "migrated": report["reembedded"],
        "seconds": seconds,
        "per_s": rate,
        "remaining": report["remaining"],
        "full_migration_minutes_estimate": total / rate / 60,
    }


def bench_own_corpus(workdir: Path) -> dict[str, Any]:
    lines = [json.loads(line) for line in EPISODES_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    db = workdir / "episodes.db"
    with Engram.open(db) as mem:
        mem.add_many(
            [
                # Twelve hours apart in file order, the order the thresholds were calibrated in.
                {"content": e["text"], "type": "episodic", "created_at": to_iso(START + timedelta(hours=12 * i))}
                for i, e in enumerate(lines)
            ],
            no_merge=True,
        )
        report = mem.compact(now=NOW)
        topics = {e["text"]: e["topic"] for e in lines}
        pure = sum(1 for c in report.clusters if len({topics.get(m.content) for m in c.members}) == 1)
        sizes = [len(c.members) for c in report.clusters]
    return {
        "episodes": len(lines),
        "clusters": len(report.clusters),
        "pure_clusters": pure,
        "episodes_consolidated": report.consolidated,
        "cluster_sizes": sizes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--reembed-limit", type=int, default=2_000)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached database")
    args = parser.parse_args(argv)
    cache = bench.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"lifecycle-g{synthetic.GENERATOR_VERSION}-n{args.size}.db"
    meta_file = db.with_suffix(".json")
    if args.rebuild or not db.exists() or not meta_file.exists():
        meta = build(args.size, db)
        meta_file.write_text(json.dumps(meta, indent=1))
    meta = json.loads(meta_file.read_text())
    results: dict[str, Any] = {"database": meta}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        bench.log("compact")
        results["compact"] = bench_compact(db, workdir)
        bench.log("audit")
        results["audit"] = bench_audit(db, workdir)
        bench.log("reembed")
        results["reembed"] = bench_reembed(db, workdir, args.reembed_limit)
        bench.log("own corpus")
        results["own_corpus"] = bench_own_corpus(workdir)
    text = json.dumps(results, indent=1, default=str)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
