#!/usr/bin/env python3
"""Bulk throughput: how much of `ingest` and `add_many` is the model, and how often it is called.

Runs in one process with the default model, counting every call of the ONNX embedder:

  * ingest of generated Claude Code logs (scripts/bench_ingest.py's generator) into a new
    database: seconds, embedder calls, texts embedded, distinct texts among them;
  * the same logs into another new database with the embedding cache left from the first
    (what a second machine-local database or a rebuilt one costs);
  * add_many of synthetic memories (scripts/synthetic.py) into a new database;

and beside each, its floor: the embedder alone on the distinct texts the run needed, in one
call (the model is loaded already; its load time is reported apart). rate ratio =
(distinct texts / run seconds) / (distinct texts / floor seconds): 1.0 means the run is as fast
as embedding its texts, the target is >= 0.9.

Usage (from the repository root):
  nice -n 10 python scripts/bench_bulk.py [--mb 5] [--memories 1000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ingest
import synthetic

from engram_cli import Engram
from engram_cli.embed import load_embedder
from engram_cli.embed.onnx import OnnxEmbedder


class Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0
        self.distinct: dict[tuple[str, str], None] = {}

    def summary(self) -> dict[str, int]:
        return {"embedder_calls": self.calls, "texts_embedded": self.texts, "distinct_texts": len(self.distinct)}


@contextmanager
def counting() -> Iterator[Counter]:
    """Count the texts every OnnxEmbedder.embed_batch call is given while the block runs."""
    counter = Counter()
    original = OnnxEmbedder.embed_batch

    def counted(self: OnnxEmbedder, texts: Sequence[str], **kwargs: Any) -> Any:
        counter.calls += 1
        counter.texts += len(texts)
        counter.distinct.update(dict.fromkeys((kwargs.get("kind", "passage"), t) for t in texts))
        return original(self, texts, **kwargs)

    OnnxEmbedder.embed_batch = counted  # type: ignore[method-assign]
    try:
        yield counter
    finally:
        OnnxEmbedder.embed_batch = original  # type: ignore[method-assign]


def floor(texts: Sequence[tuple[str, str]]) -> float:
    """Seconds the embedder alone takes for ``texts`` (kind, text), one call per kind."""
    embedder = load_embedder()
    began = time.perf_counter()
    for kind in ("passage", "query"):
        part = [t for k, t in texts if k == kind]
        if part:
            embedder.embed_batch(part, kind=kind)  # type: ignore[arg-type]
    return time.perf_counter() - began


def measured(run: Callable[[], Any]) -> dict[str, Any]:
    with counting() as counter:
        began = time.perf_counter()
        run()
        seconds = time.perf_counter() - began
    out: dict[str, Any] = {"seconds": round(seconds, 2), **counter.summary()}
    if counter.distinct:
        alone = floor(list(counter.distinct))
        out["floor_seconds"] = round(alone, 2)
        out["rate_ratio"] = round(alone / seconds, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=5.0, help="megabytes of Claude Code logs to ingest")
    parser.add_argument("--memories", type=int, default=1000, help="memories for add_many")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="engram-bench-bulk-"))
    results: dict[str, Any] = {}
    try:
        os.environ["ENGRAM_HOME"] = str(work / "engram")
        logs = work / "logs"
        made = bench_ingest.generate(logs, args.mb)
        results["logs"] = {"megabytes": round(made["bytes"] / 1e6, 1), "sessions": made["sessions"]}
        began = time.perf_counter()
        load_embedder()
        results["model_load_seconds"] = round(time.perf_counter() - began, 2)
        env = {"CLAUDE_CONFIG_DIR": str(logs / ".claude"), "HOME": str(logs)}

        def ingest(db: str) -> Callable[[], Any]:
            def go() -> Any:
                with Engram.open(work / db) as mem:
                    return mem.ingest("claude-code", env=env, home=logs)

            return go

        results["ingest"] = measured(ingest("first.db"))
        results["ingest_warm_cache"] = measured(ingest("second.db"))
        items = synthetic.memories(args.memories, seed=3)

        def add_many() -> Any:
            with Engram.open(work / "add.db") as mem:
                return mem.add_many([{"content": i["content"]} for i in items])

        results["add_many"] = {"memories": len(items), **measured(add_many)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
