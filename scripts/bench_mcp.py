#!/usr/bin/env python3
"""Benchmark `engram mcp` as an assistant meets it: `recall` latency over MCP, and the server's memory.

For each size, the timing database of that size (scripts/bench.py caches it, bench_lifecycle.py builds it:
synthetic texts written through the real write path, derived vectors) is copied, and `engram --db COPY
mcp` is started by the official SDK's stdio client, the way Claude Code or Codex start it. The project is
the database's largest namespace (ENGRAM_NAMESPACE, as a client started outside a repository would set
it), so each recall searches that project and the global scope, as the `recall` tool does by default.

Reported per size:
  * start: from launching the server to the end of `initialize` (what an assistant waits at start-up);
  * first_call: the first `recall` (opens the store and loads the embedding model);
  * p50 / p95 / max of the next QUERIES `recall` calls, each a different question, timed at the client
    (JSON-RPC over pipes included);
  * rss_mb after the calls and peak_rss_mb (VmHWM) of the server process.

Usage (from the repository root):
  python scripts/bench_mcp.py [--sizes 10000 100000] [--queries 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
for entry in (REPO_ROOT, HERE):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))


import bench  # noqa: E402
from engram_cli.store import connect  # noqa: E402

WARMUP = 3
SEED = 11


def database(size: int) -> Path:
    """The cached timing database of ``size`` memories (scripts/bench.py builds and keys them)."""
    return bench.database(size)


def questions(db: Path, namespace: str, count: int) -> list[str]:
    """Questions made from memories of the project: the first words of randomly chosen ones."""
    store = connect(db)
    try:
        texts = [str(r[0]) for r in store.rows("SELECT content FROM memories WHERE namespace = ?", (namespace,))]
    finally:
        store.close()
    rng = random.Random(SEED)
    return [" ".join(rng.choice(texts).split()[:8]) for _ in range(count)]


def largest_namespace(db: Path) -> tuple[str, int]:
    store = connect(db)
    try:
        row = store.rows("SELECT namespace, count(*) FROM memories GROUP BY namespace ORDER BY 2 DESC LIMIT 1")[0]
    finally:
        store.close()
    return str(row[0]), int(row[1])


def _server_pid() -> int | None:
    """The newest child of this process: the server the SDK's client just started."""
    mine = str(os.getpid())
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == mine:
            children.append(int(entry.name))
    return max(children) if children else None


def _memory_mb(pid: int | None) -> dict[str, float | None]:
    if pid is None:
        return {"rss_mb": None, "peak_rss_mb": None}
    values: dict[str, float | None] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values["rss_mb" if name == "VmRSS" else "peak_rss_mb"] = int(rest.split()[0]) / 1024
    return values


def measure(db: Path, namespace: str, queries: list[str]) -> dict[str, Any]:
    env = {**os.environ, "ENGRAM_NAMESPACE": namespace, "PYTHONPATH": str(REPO_ROOT), "ORT_DISABLE_TELEMETRY": "1"}
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_cli", "--db", str(db), "mcp"], env=env, cwd=db.parent
    )
    out: dict[str, Any] = {}

    async def main() -> None:
        began = time.perf_counter()
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out["start_s"] = time.perf_counter() - began
            pid = _server_pid()
            t = time.perf_counter()
            first = await session.call_tool("recall", {"query": queries[0], "k": 5})
            out["first_call_s"] = time.perf_counter() - t
            if first.is_error:
                raise SystemExit(f"recall failed: {first.content}")
            for query in queries[1 : 1 + WARMUP]:
                await session.call_tool("recall", {"query": query, "k": 5})
            times: list[float] = []
            hits: list[int] = []
            for query in queries[1 + WARMUP :]:
                t = time.perf_counter()
                result = await session.call_tool("recall", {"query": query, "k": 5})
                times.append(time.perf_counter() - t)
                hits.append(len((result.structured_content or {}).get("hits", [])))
            times.sort()
            out.update(
                calls=len(times),
                p50_ms=1000 * statistics.median(times),
                p95_ms=1000 * times[max(0, round(0.95 * len(times)) - 1)],
                max_ms=1000 * times[-1],
                mean_hits=sum(hits) / len(hits),
                **_memory_mb(pid),
            )

    anyio.run(main)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=60, help="timed recall calls per size (after the warm-up)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    for size in args.sizes:
        source = database(size)
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "engram.db"
            shutil.copyfile(source, db)
            namespace, in_namespace = largest_namespace(db)
            bench.log(f"{size:,} memories: recall in {namespace} ({in_namespace:,}) + global over MCP")
            queries = questions(db, namespace, 1 + WARMUP + args.queries)
            results[str(size)] = {
                "namespace": namespace,
                "in_namespace": in_namespace,
                **measure(db, namespace, queries),
            }
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
