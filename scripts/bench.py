#!/usr/bin/env python3
"""Benchmark engram with its default model: cold start, embedding, add and recall, bytes per memory.

What is measured (all wall time, ``time.perf_counter``; whole-process numbers in subprocesses):

  * cold start: a fresh ``python -c`` that imports ``engram_cli.embed``, loads the default
    embedder and embeds one text (one warm-up run, then median/min/max of 5);
  * embedding throughput: texts/s with one text per call and with 32 texts per call;
  * add throughput: ``add_many`` of 2,000 synthetic memories into a fresh database with the
    model already loaded. Reported three ways: end to end (embedding included), embedding the
    same texts alone, and the write path alone (``add_many`` fed the vectors computed before);
  * recall at each size (default 10,000 and 100,000 memories, built with ``add_many`` and
    merging on, cached): ``engram --db PATH recall QUERY --no-touch --json`` as a whole process
    (one warm-up, median of 6 queries), and in-process ``recall(..., bump=False)`` p50/p95
    over 60 queries after one warm-up, in the default namespace, the largest namespace and
    across all namespaces;
  * database bytes per stored memory after ``PRAGMA wal_checkpoint(TRUNCATE)``.

Built databases are cached under $ENGRAM_BENCH_CACHE (default ~/.cache/engram-bench/),
keyed by generator version, schema version, model, merge threshold and size. A build that
is interrupted resumes where it stopped. The smaller sizes are snapshots taken on the way
to the largest (the synthetic stream is prefix-stable), so they cost nothing extra.

Usage (from the repository root):
  python scripts/bench.py [--sizes 10000,100000 | --quick] [--json results.json] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
for entry in (REPO_ROOT, Path(__file__).resolve().parent):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

import synthetic  # noqa: E402

from engram_cli import Engram, __version__  # noqa: E402
from engram_cli.embed import DEFAULT_MODEL_ID, load_embedder, load_manifest  # noqa: E402
from engram_cli.lang import text as textmod  # noqa: E402
from engram_cli.store.migrations import MIGRATIONS  # noqa: E402

DEFAULT_SIZES = (10_000, 100_000)
QUICK_SIZES = (1_000, 5_000)
ADD_N = 2_000
ADD_BATCH = 64  # add_many's default batch
BUILD_CHUNK = 64 * 32  # memories per add_many call while building (progress granularity)
COLD_RUNS = 5
CLI_QUERIES = 6
RECALL_QUERIES = 60
# The extra recall scopes (largest namespace, all namespaces) stop after this many seconds
# once MIN_CAPPED_QUERIES are timed, so that a slow engine cannot stretch a run by hours.
SCOPE_BUDGET = 120.0
MIN_CAPPED_QUERIES = 10
K = 5
DATA_SEED = 0
ADD_SEED = 1  # the add benchmark writes other texts than the cached databases hold

COLD_START_CODE = (
    "from engram_cli.embed import load_embedder; load_embedder().embed_batch(['how do we deploy the billing api?'])"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- small statistics -----------------------------------------------------------------------


def summary(samples: Sequence[float]) -> dict[str, float]:
    """Median, min, max, p95 and count of a list of seconds."""
    ordered = sorted(samples)
    p95 = statistics.quantiles(ordered, n=100, method="inclusive")[94] if len(ordered) > 1 else ordered[0]
    return {
        "n": len(ordered),
        "median": statistics.median(ordered),
        "min": ordered[0],
        "max": ordered[-1],
        "p95": p95,
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


# -- cold start and embedding ---------------------------------------------------------------


def run_process(argv: Sequence[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}… exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return elapsed, proc


def bench_cold_start(runs: int) -> dict[str, Any]:
    argv = [sys.executable, "-c", COLD_START_CODE]
    run_process(argv)  # warm-up: page cache, .pyc files
    times = [run_process(argv)[0] for _ in range(runs)]
    return {"seconds": summary(times), "runs": times}


def bench_embedding(model_id: str, texts: list[str], n_single: int, n_batched: int) -> dict[str, Any]:
    embedder = load_embedder(model_id)
    embedder.embed_batch(texts[:32])  # warm-up
    single = texts[:n_single]
    t1, _ = timed(lambda: [embedder.embed_batch([t]) for t in single])
    batched = texts[:n_batched]
    t32, _ = timed(lambda: [embedder.embed_batch(batched[i : i + 32]) for i in range(0, len(batched), 32)])
    return {
        "batch_1": {"texts": len(single), "seconds": t1, "texts_per_s": len(single) / t1},
        "batch_32": {"texts": len(batched), "seconds": t32, "texts_per_s": len(batched) / t32},
    }


# -- add ------------------------------------------------------------------------------------


class _TableEmbedder:
    """Hands out vectors computed beforehand, so that add_many's write path can be timed alone."""

    def __init__(self, model_id: str, dim: int, table: dict[str, np.ndarray]) -> None:
        self.model_id = model_id
        self.dim = dim
        self.table = table

    def embed_batch(self, texts: Sequence[str], *, kind: str = "passage", batch_size: int = 32) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)


class _PrecomputedEngram(Engram):
    table_embedder: _TableEmbedder

    def _embedder(self, model_id: str) -> Any:
        return self.table_embedder

    def _passage_embedder(self, model_id: str) -> tuple[Callable[[Sequence[str]], np.ndarray], int]:
        # Writes embed through this one; without it a "write path alone" run embeds every text for real.
        table = self.table_embedder
        return (lambda texts: table.embed_batch(list(texts))), table.dim


def _outcomes(results: Sequence[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.action] = counts.get(result.action, 0) + 1
    return counts


def bench_add(model_id: str, n: int, workdir: Path) -> dict[str, Any]:
    items = synthetic.memories(n, seed=ADD_SEED)
    texts = [textmod.normalize(i["content"]) for i in items]
    embedder = load_embedder(model_id)
    embedder.embed_batch(texts[:8])  # loaded and warm: the add numbers exclude model loading

    def embed_all() -> np.ndarray:
        parts = [embedder.embed_batch(texts[i : i + ADD_BATCH]) for i in range(0, len(texts), ADD_BATCH)]
        return np.concatenate(parts)

    t_embed, matrix = timed(embed_all)

    with Engram.open(workdir / "add-full.db") as mem:
        t_full, full = timed(lambda: mem.add_many(items, batch_size=ADD_BATCH))
        rows_full = int(mem.store.scalar("SELECT count(*) FROM memories"))

    with _PrecomputedEngram.open(workdir / "add-write-only.db") as mem:
        assert isinstance(mem, _PrecomputedEngram)
        mem.table_embedder = _TableEmbedder(embedder.model_id, embedder.dim, dict(zip(texts, matrix, strict=True)))
        t_write, write_only = timed(lambda: mem.add_many(items, batch_size=ADD_BATCH))
        rows_write = int(mem.store.scalar("SELECT count(*) FROM memories"))

    return {
        "memories": n,
        "batch_size": ADD_BATCH,
        "end_to_end": {"seconds": t_full, "per_s": n / t_full, "rows": rows_full, "outcomes": _outcomes(full)},
        "embedding_only": {"seconds": t_embed, "per_s": n / t_embed},
        "write_only": {
            "seconds": t_write,
            "per_s": n / t_write,
            "rows": rows_write,
            "outcomes": _outcomes(write_only),
        },
        "write_by_subtraction": {
            "seconds": t_full - t_embed,
            "per_s": n / (t_full - t_embed) if t_full > t_embed else None,
        },
    }


# -- building and caching the big databases ---------------------------------------------------


def cache_dir() -> Path:
    configured = os.environ.get("ENGRAM_BENCH_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "engram-bench"


def write_settings() -> tuple[str, float]:
    """The model and merge threshold a fresh database writes with (engram's defaults)."""
    with tempfile.TemporaryDirectory() as tmp, Engram.open(Path(tmp) / "probe.db") as mem:
        return mem.active_model, mem.merge_policy().threshold


def build_identity(model_id: str, threshold: float, merge: bool = True) -> str:
    """What a built database depends on besides its size: generator, schema, model (and its weights), threshold."""
    schema = max(m.id for m in MIGRATIONS)
    weights = load_manifest(model_id).files.get("model.onnx", "")[:8]
    merging = f"m{threshold:.3f}" if merge else "nomerge"
    return f"g{synthetic.GENERATOR_VERSION}-s{schema}-{model_id}-{weights}-{merging}"


def cache_key(n: int, identity: str) -> str:
    return f"{identity}-n{n}"


def _inputs_done(mem: Engram) -> int:
    # Every input of add_many leaves exactly one event (created or merged) in the same
    # transaction as its rows, so the event count is how far a build got.
    return int(mem.store.scalar("SELECT count(*) FROM events"))


def _checkpoint(mem: Engram) -> None:
    mem.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def build(
    sizes: Sequence[int], directory: Path, identity: str, model_id: str, threshold: float, merge: bool = True
) -> None:
    """Build (or finish building) the largest of ``sizes``, snapshotting the others on the way."""
    target = max(sizes)
    final = {n: directory / f"{cache_key(n, identity)}.db" for n in sizes}
    building = directory / f"{cache_key(target, identity)}.building.db"
    progress_file = building.with_suffix(".json")
    items = synthetic.memories(target, seed=DATA_SEED)
    state: dict[str, Any] = {"seconds": 0.0}
    if building.exists() and progress_file.exists():
        state = json.loads(progress_file.read_text())
    else:
        _remove_db(building)

    with Engram.open(building) as mem:
        done = _inputs_done(mem)
        if done:
            log(f"resuming the {target:,} build at {done:,}")
        pending = sorted(n for n in sizes if n > done and n != target)
        while done < target:
            stop = min([done + BUILD_CHUNK, target, *pending])
            began = time.perf_counter()
            mem.add_many(items[done:stop], batch_size=ADD_BATCH, no_merge=not merge)
            elapsed = time.perf_counter() - began
            state["seconds"] += elapsed
            rate = (stop - done) / elapsed
            done = stop
            progress_file.write_text(json.dumps(state))
            log(f"  built {done:,}/{target:,} ({rate:.0f}/s lately, ~{(target - done) / rate / 60:.0f} min left)")
            if done in pending:
                pending.remove(done)
                _checkpoint(mem)
                tmp = final[done].with_suffix(".tmp")
                shutil.copyfile(building, tmp)
                os.replace(tmp, final[done])
                _write_meta(final[done], mem, done, state["seconds"], model_id, threshold)
                log(f"  saved the {done:,} snapshot")
        _checkpoint(mem)
        _write_meta(final[target], mem, target, state["seconds"], model_id, threshold)
    _remove_db(final[target])
    os.replace(building, final[target])
    _remove_db(building)
    progress_file.unlink(missing_ok=True)


def _write_meta(db: Path, mem: Engram, n: int, seconds: float, model_id: str, threshold: float) -> None:
    rows = int(mem.store.scalar("SELECT count(*) FROM memories"))
    meta = {
        "inputs": n,
        "rows": rows,
        "merged": n - rows,
        "build_seconds": seconds,
        "build_per_s": n / seconds if seconds else None,
        "model": model_id,
        "merge_threshold": threshold,
        "generator_version": synthetic.GENERATOR_VERSION,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    db.with_suffix(".json").write_text(json.dumps(meta, indent=2))


def ensure_databases(
    sizes: Sequence[int], rebuild: bool, model_id: str, threshold: float, merge: bool = True
) -> dict[int, Path]:
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    identity = build_identity(model_id, threshold, merge)
    paths = {n: directory / f"{cache_key(n, identity)}.db" for n in sizes}
    if rebuild:
        for n, path in paths.items():
            _remove_db(path)
            path.with_suffix(".json").unlink(missing_ok=True)
            building = directory / f"{cache_key(n, identity)}.building.db"
            _remove_db(building)
            building.with_suffix(".json").unlink(missing_ok=True)
    missing = [n for n, path in paths.items() if not (path.exists() and path.with_suffix(".json").exists())]
    if missing:
        log(f"building {', '.join(f'{n:,}' for n in missing)} memories into {directory} (cached for next time)")
        build(missing, directory, identity, model_id, threshold, merge)
    return paths


# -- recall and size ------------------------------------------------------------------------


def engram_argv() -> list[str]:
    script = Path(sys.executable).parent / "engram"
    if script.exists():
        return [str(script)]
    found = shutil.which("engram")
    if found:
        return [found]
    raise RuntimeError("no `engram` executable next to this Python or on PATH; pip install -e . first")


def bench_cli_recall(db: Path, queries: list[str], extra: Sequence[str]) -> dict[str, Any]:
    base = [*engram_argv(), "--db", str(db), "recall"]
    run_process([*base, queries[0], "--no-touch", "--json", *extra])  # warm-up
    times: list[float] = []
    hits: list[int] = []
    for query in queries[1:]:
        elapsed, proc = run_process([*base, query, "--no-touch", "--json", *extra])
        times.append(elapsed)
        hits.append(len(json.loads(proc.stdout)))
    return {"seconds": summary(times), "hits": hits, "args": ["recall", "QUERY", "--no-touch", "--json", *extra]}


def bench_inprocess_recall(
    mem: Engram, queries: list[str], budget: float | None = None, **scope: Any
) -> dict[str, Any]:
    """Latency of recall() over ``queries[1:]`` after a warm-up; with ``budget`` (seconds), stop
    early once it is spent and at least MIN_CAPPED_QUERIES were timed."""
    mem.recall(queries[0], k=K, bump=False, **scope)  # warm-up
    times: list[float] = []
    empty = 0
    for query in queries[1:]:
        elapsed, hits = timed(lambda q=query: mem.recall(q, k=K, bump=False, **scope))
        times.append(elapsed)
        empty += not hits
        if budget is not None and sum(times) > budget and len(times) >= MIN_CAPPED_QUERIES:
            break
    return {"seconds": summary(times), "empty_results": empty, "capped": len(times) < len(queries) - 1}


def bench_query_embedding(model_id: str, queries: list[str]) -> dict[str, Any]:
    embedder = load_embedder(model_id)
    embedder.embed_batch(queries[:1], kind="query")
    times = [timed(lambda q=q: embedder.embed_batch([q], kind="query"))[0] for q in queries[1:]]
    return {"seconds": summary(times)}


def db_size(mem: Engram, path: Path) -> dict[str, Any]:
    _checkpoint(mem)
    rows = int(mem.store.scalar("SELECT count(*) FROM memories"))
    size = path.stat().st_size
    out: dict[str, Any] = {"file_bytes": size, "rows": rows, "bytes_per_memory": size / rows if rows else None}
    try:
        by_table = mem.store.rows(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC LIMIT 12"
        )
        out["largest_objects"] = {str(name): int(b) for name, b in by_table}
    except Exception:  # dbstat is a compile-time option of SQLite; the breakdown is a bonus
        pass
    return out


def largest_namespace(mem: Engram) -> str:
    return str(mem.store.scalar("SELECT namespace FROM memories GROUP BY namespace ORDER BY count(*) DESC LIMIT 1"))


def bench_size(n: int, path: Path) -> dict[str, Any]:
    meta = json.loads(path.with_suffix(".json").read_text())
    queries = synthetic.queries(RECALL_QUERIES + 1, seed=DATA_SEED)
    with Engram.open(path) as mem:
        size = db_size(mem, path)
        # A hand-made snapshot may not say what it holds; the database does.
        if meta.get("rows") is None:
            meta["rows"] = size["rows"]
            meta["merged"] = meta["inputs"] - size["rows"]
        namespaces = dict(mem.store.rows("SELECT namespace, count(*) FROM memories GROUP BY namespace"))
        big = largest_namespace(mem)
        default_ns = mem.settings.namespace
        log(f"  recall in-process at {n:,}")
        inproc = {
            f"namespace {default_ns} (default)": bench_inprocess_recall(mem, queries),
            f"namespace {big} (largest)": bench_inprocess_recall(mem, queries, SCOPE_BUDGET, namespace=big),
            "all namespaces": bench_inprocess_recall(mem, queries, SCOPE_BUDGET, all_namespaces=True),
        }
    log(f"  recall as a process at {n:,}")
    cli_queries = queries[: CLI_QUERIES + 1]
    cli = {
        f"namespace {default_ns} (default)": bench_cli_recall(path, cli_queries, []),
        "all namespaces": bench_cli_recall(path, cli_queries, ["--all-namespaces"]),
    }
    return {
        "inputs": n,
        "db": str(path),
        "build": meta,
        "namespaces": namespaces,
        "size": size,
        "recall_in_process": inproc,
        "recall_process": cli,
    }


# -- report ---------------------------------------------------------------------------------


def environment(model_id: str, threshold: float) -> dict[str, Any]:
    import apsw
    import onnxruntime

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "engram": __version__,
        "commit": commit or None,
        "model": model_id,
        "default_embedder": DEFAULT_MODEL_ID,
        "merge_threshold": threshold,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "sqlite": apsw.sqlite_lib_version(),
        "onnxruntime": onnxruntime.__version__,
        "load_average_start": os.getloadavg(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def table(results: dict[str, Any]) -> str:
    rows: list[tuple[str, str, str]] = []
    cold = results["cold_start"]["seconds"]
    rows.append(
        ("cold start (new process: import, load model, embed 1)", f"{cold['median']:.2f} s",
         f"min {cold['min']:.2f} / max {cold['max']:.2f} s over {cold['n']} runs")
    )  # fmt: skip
    emb = results["embedding"]
    for label, key in (("embedding, 1 text per call", "batch_1"), ("embedding, 32 texts per call", "batch_32")):
        rows.append((label, f"{emb[key]['texts_per_s']:.1f} texts/s", f"{emb[key]['texts']} texts"))
    add = results["add"]
    n = add["memories"]
    full = add["end_to_end"]
    rows.append(
        (f"add_many {n:,} into a fresh DB, embedding included", f"{full['per_s']:.1f} memories/s",
         f"{full['seconds']:.1f} s; stored {full['rows']:,} ({_fmt_outcomes(full['outcomes'])})")
    )  # fmt: skip
    rows.append(
        ("  of which embedding the same texts alone", f"{add['embedding_only']['per_s']:.1f} texts/s",
         f"{add['embedding_only']['seconds']:.1f} s, {ADD_BATCH} per call")
    )  # fmt: skip
    wo = add["write_only"]
    sub = add["write_by_subtraction"]
    sub_rate = f"{sub['per_s']:.0f}/s" if sub["per_s"] else "n/a"
    rows.append(
        ("  write path alone (vectors computed beforehand)", f"{wo['per_s']:.0f} memories/s",
         f"{wo['seconds']:.1f} s; end-to-end minus embedding: {sub['seconds']:.1f} s = {sub_rate}")
    )  # fmt: skip
    for n_str, res in results["sizes"].items():
        n = int(n_str)
        build = res["build"]
        build_rate = f"{build['build_per_s']:.1f} memories/s" if build.get("build_per_s") else "n/a"
        rows.append(
            (f"[{n:,}] built with add_many (cached)", f"{build['rows']:,} rows stored",
             f"{build['merged']:,} merged; build {build['build_seconds'] / 60:.1f} min at {build_rate}")
        )  # fmt: skip
        for scope, cli in res["recall_process"].items():
            s = cli["seconds"]
            rows.append(
                (f"[{n:,}] `engram recall` process, {scope}", ms(s["median"]),
                 f"median of {s['n']}; min {ms(s['min'])}, max {ms(s['max'])}")
            )  # fmt: skip
        for scope, inproc in res["recall_in_process"].items():
            s = inproc["seconds"]
            rows.append(
                (f"[{n:,}] recall() in-process, {scope}", f"p50 {ms(s['median'])}",
                 f"p95 {ms(s['p95'])} over {s['n']} queries")
            )  # fmt: skip
        size = res["size"]
        rows.append(
            (f"[{n:,}] database bytes per memory", f"{size['bytes_per_memory']:,.0f} B",
             f"{size['file_bytes'] / 1e6:.1f} MB / {size['rows']:,} rows")
        )  # fmt: skip
    q = results.get("query_embedding")
    if q:
        rows.append(("query embedding alone (part of every recall)", f"p50 {ms(q['seconds']['median'])}",
                     f"p95 {ms(q['seconds']['p95'])}"))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    header = ("measure", "result", "notes")
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
    return "\n".join(lines)


def _fmt_outcomes(outcomes: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {action}" for action, count in sorted(outcomes.items()))


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--sizes takes numbers separated by commas, not {text!r}") from exc
    if not sizes or sizes[0] < 100:
        raise argparse.ArgumentTypeError("--sizes must list sizes of at least 100")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_sizes, default=list(DEFAULT_SIZES), help="default: 10000,100000")
    parser.add_argument("--quick", action="store_true", help="sizes 1000,5000 and fewer texts: a fast check")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached databases")
    parser.add_argument(
        "--no-merge-build",
        action="store_true",
        help="build the databases without the merge check (a KNN per write that dominates large builds; "
        "recall timings do not depend on it)",
    )
    args = parser.parse_args(argv)
    sizes = list(QUICK_SIZES) if args.quick else args.sizes

    # Measure engram's defaults, not whatever config or namespace this shell happens to have.
    scratch = Path(tempfile.mkdtemp(prefix="engram-bench-"))
    os.environ["ENGRAM_HOME"] = str(scratch / "home")
    for name in ("ENGRAM_DB", "ENGRAM_NAMESPACE", "ENGRAM_AGENT", "ENGRAM_MODEL"):
        os.environ.pop(name, None)

    started = time.perf_counter()
    model_id, threshold = write_settings()
    if model_id != DEFAULT_MODEL_ID:
        log(f"note: the store writes with {model_id}, but load_embedder() defaults to {DEFAULT_MODEL_ID}")
    results: dict[str, Any] = {"environment": environment(model_id, threshold), "sizes": {}}
    try:
        log("cold start")
        results["cold_start"] = bench_cold_start(COLD_RUNS)
        log("embedding throughput")
        texts = [m["content"] for m in synthetic.memories(1024, seed=ADD_SEED)]
        results["embedding"] = bench_embedding(model_id, texts, 50 if args.quick else 200, 256 if args.quick else 1024)
        add_n = 500 if args.quick else ADD_N
        log(f"add_many of {add_n:,}")
        results["add"] = bench_add(model_id, add_n, scratch)
        paths = ensure_databases(sizes, args.rebuild, model_id, threshold, merge=not args.no_merge_build)
        results["query_embedding"] = bench_query_embedding(
            model_id, synthetic.queries(RECALL_QUERIES + 1, seed=DATA_SEED)
        )
        for n in sizes:
            log(f"recall and size at {n:,}")
            results["sizes"][str(n)] = bench_size(n, paths[n])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results["environment"]["load_average_end"] = os.getloadavg()
    results["environment"]["total_seconds"] = time.perf_counter() - started

    # The JSON first: a long run's numbers should survive a problem in the table below.
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(table(results))
    env = results["environment"]
    print(
        f"\n{env['model']}, engram {env['engram']} ({env['commit']}), Python {env['python']}, SQLite {env['sqlite']}, "
        f"onnxruntime {env['onnxruntime']}, {env['cpus']} CPUs; load average {env['load_average_start'][0]:.1f} "
        f"at start, {env['load_average_end'][0]:.1f} at end; {env['total_seconds'] / 60:.1f} min in all"
    )
    if args.json:
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
