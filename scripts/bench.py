#!/usr/bin/env python3
"""Benchmark engram against its floors: every figure beside the cheapest way to do the same work, as a ratio.

Each figure is timed in the same run as its floor, so that a busy or slow machine moves both:

  figure                         engram                                       floor
  recall (process)               `engram --db DB recall Q -n NS --no-touch`   python + onnxruntime session + 1 embed
  recall -A (process)            the same with --all-namespaces               the same
  list / inspect / get           `engram list`, `inspect ID`, `get KEY`       `python -c "import typer"`, run in turn
  hook (process)                 `engram hooks prompt claude-code`, JSON in   (target: p50 <= 150 ms at 100k)
  recall() in-process            Engram.recall(..., bump=False), p50          query embed p50 + numpy exact KNN p50
  KNN k=10                       the store's vector search, all rows          numpy over a memory-mapped float32 matrix
  write path (best of 3)         add_many of new memories, vectors given      the same at 2,000 memories, run in turn
  add_many (median of 3)         add_many of distinct texts, embedding        the embedder alone on the same texts
  ingest (median of 3)           `engram ingest claude-code` of generated logs model load + embedding its distinct texts
  compact --dry-run / audit      whole processes                              one blocked numpy pairwise pass
  bytes per memory               the database file after a checkpoint         (target: <= 3 KB at 384-d)

NS, for recall in one namespace (process and in-process), is the database's largest namespace; -A searches
them all. Sizes default to 10,000, 100,000 and 1,000,000 memories. The databases hold real synthetic texts written
through the real write path, with vectors derived from real embeddings of 2,000 of them (as
scripts/bench_lifecycle.py builds them): right for timing, never for judging recall quality. They are cached
under $ENGRAM_BENCH_CACHE (default ~/.cache/engram-bench/), keyed by generator, model and size. compact and
audit run at 20,000 (for the growth exponent) and at each size up to 100,000 (--maintenance-max).

Every process figure records its peak resident memory (from wait4), and the in-process part records this
process's peak. Results go to stdout as a table and, with --json, to a file.

Usage (from the repository root):
  python scripts/bench.py [--sizes 10000,100000,1000000 | --quick] [--only recall,knn,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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

DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (2_000, 10_000)
MAINTENANCE_SIZES = (20_000,)  # always measured below --maintenance-max, for the growth exponent
SMALL = 2_000  # the write path's reference size
WRITE_N = 1_000
WRITE_RUNS = 3
ADD_N = 1_000
ADD_RUNS = 3  # add_many runs, each beside one of the embedder alone (the medians are compared)
INGEST_MB = 5.0
INGEST_RUNS = 3  # ingests timed, each beside its floor's embedding (the medians are compared)
PROCESS_RUNS = 7
START_RUNS = 15  # list, inspect and get: each run beside one of `import typer`
RECALL_QUERIES = 40
K = 10
SEED = 0
WRITE_SEED = 1
FIGURES = ("start", "recall", "hook", "inprocess", "knn", "write", "add", "ingest", "maintenance", "size")

FLOOR_EMBED_CODE = """
import os, sys
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
d = sys.argv[1]
o = ort.SessionOptions(); o.log_severity_level = 3
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # as engram builds its session
s = ort.InferenceSession(d + "/model.onnx", o, providers=["CPUExecutionProvider"])
t = Tokenizer.from_file(d + "/tokenizer.json")
ids = np.array([t.encode(sys.argv[2]).ids], dtype=np.int64)
h = s.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
v = h.mean(axis=1); v /= np.linalg.norm(v)
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- statistics and processes ---------------------------------------------------------------


def summary(samples: Sequence[float]) -> dict[str, float]:
    """Median, min, max, p95 and count of a list of seconds."""
    ordered = sorted(samples)
    p95 = statistics.quantiles(ordered, n=100, method="inclusive")[94] if len(ordered) > 1 else ordered[0]
    return {"n": len(ordered), "median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1], "p95": p95}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


@dataclass
class Run:
    seconds: float
    stdout: str
    peak_mb: float


def run_process(argv: Sequence[str], *, stdin: str | None = None, env: dict[str, str] | None = None) -> Run:
    """One whole process: wall time, its output and its own peak resident memory (wait4's ru_maxrss)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    errors: list[bytes] = []
    reader = threading.Thread(target=lambda: errors.append(proc.stderr.read() if proc.stderr else b""))
    reader.start()
    assert proc.stdin is not None and proc.stdout is not None
    if stdin is not None:
        proc.stdin.write(stdin.encode())
    proc.stdin.close()
    out = proc.stdout.read()
    reader.join()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = b"".join(errors).decode(errors="replace")
        raise RuntimeError(f"{' '.join(argv[:4])}… exited {proc.returncode}: {err.strip()[-500:]}")
    return Run(elapsed, out.decode(errors="replace"), usage.ru_maxrss / 1024)


def repeat(argv: Sequence[str], runs: int, **kwargs: Any) -> dict[str, Any]:
    run_process(argv, **kwargs)  # warm-up: page cache, bytecode, caches engram keeps
    done = [run_process(argv, **kwargs) for _ in range(runs)]
    return {"seconds": summary([d.seconds for d in done]), "peak_mb": max(d.peak_mb for d in done)}


def alternated(floor: Sequence[str], argv: Sequence[str], runs: int, **kwargs: Any) -> tuple[dict[str, Any], ...]:
    """``repeat`` of a command and of its floor, one run of each in turn: a command of a tenth of a second
    is compared with its floor timed in the same seconds, not minutes before, while the machine's speed moves."""
    run_process(floor, **kwargs)
    run_process(argv, **kwargs)
    pairs = [(run_process(floor, **kwargs), run_process(argv, **kwargs)) for _ in range(runs)]
    return tuple(
        {"seconds": summary([p[i].seconds for p in pairs]), "peak_mb": max(p[i].peak_mb for p in pairs)} for i in (0, 1)
    )


def engram_argv() -> list[str]:
    script = Path(sys.executable).parent / "engram"
    if script.exists():
        return [str(script)]
    found = shutil.which("engram")
    if found:
        return [found]
    raise RuntimeError("no `engram` executable next to this Python or on PATH; pip install -e . first")


# -- the rows of the report ---------------------------------------------------------------------


@dataclass
class Row:
    size: int | None  # None: does not depend on the store's size
    figure: str
    engram: float  # seconds, or a rate (per second) when ``rate`` is set
    floor: float | None
    rate: bool = False  # a rate: the ratio is engram / floor, and higher is better
    target: str = ""  # e.g. "<= 1.5x at 100k"
    met: bool | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.floor is None or self.floor <= 0:
            return None
        return self.engram / self.floor

    def as_dict(self) -> dict[str, Any]:
        return {
            "size": self.size, "figure": self.figure, "engram": self.engram, "floor": self.floor,
            "ratio": self.ratio, "rate": self.rate, "target": self.target, "met": self.met, "note": self.note,
            **self.extra,
        }  # fmt: skip


def judge(row: Row, limit: float, *, at: int | None = None, higher: bool = False, absolute: bool = False) -> Row:
    """Set the row's target (a ratio, or with ``absolute`` seconds) and whether it is met, for the size ``at``."""
    sign = ">=" if higher else "<="
    unit = " s" if absolute else "x"
    where = f" at {at:,}" if at else ""
    row.target = f"{sign} {limit:g}{unit}{where}"
    value = row.engram if absolute else row.ratio
    if value is not None and (at is None or row.size == at):
        row.met = value >= limit if higher else value <= limit
    return row


# -- the floors -------------------------------------------------------------------------------


def model_dir(model_id: str) -> Path:
    return REPO_ROOT / "models" / model_id


def floor_embed_process(model_id: str, runs: int) -> dict[str, Any]:
    """python + onnxruntime session + one embed, in a new process: what any cold recall must pay."""
    query = load_manifest(model_id).prefix("query") + "how do we deploy the billing api?"
    return repeat([sys.executable, "-c", FLOOR_EMBED_CODE, str(model_dir(model_id)), query], runs)


def floor_typer(runs: int) -> dict[str, Any]:
    return repeat([sys.executable, "-c", "import typer"], runs)


def exact_knn_floor(matrix: np.ndarray, queries: np.ndarray, k: int) -> tuple[dict[str, float], list[np.ndarray]]:
    """numpy exact top-k over ``matrix`` (memory-mapped): p50 seconds and the answers."""
    answers: list[np.ndarray] = []
    times: list[float] = []
    for q in queries:
        start = time.perf_counter()
        scores = matrix @ q
        top = np.argpartition(-scores, k)[:k]
        top = top[np.argsort(-scores[top])]
        times.append(time.perf_counter() - start)
        answers.append(top)
    return summary(times), answers


def blocked_pairs_floor(matrix: np.ndarray, threshold: float, block: int = 2048) -> float:
    """Seconds for one blocked pass over every pair (upper triangle), counting pairs above ``threshold``."""
    start = time.perf_counter()
    found = 0
    n = len(matrix)
    for i in range(0, n, block):
        left = matrix[i : i + block]
        for j in range(i, n, block):
            scores = left @ matrix[j : j + block].T
            if i == j:
                scores = np.triu(scores, 1)
            found += int(np.count_nonzero(scores >= threshold))
    return time.perf_counter() - start


# -- building the databases -------------------------------------------------------------------


class _TableEmbedder:
    """Hands out vectors computed beforehand, so that the write path can be timed alone."""

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


def cache_dir() -> Path:
    configured = os.environ.get("ENGRAM_BENCH_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "engram-bench"


def _checkpoint(mem: Engram) -> None:
    mem.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


REPLICATE_ABOVE = 100_000  # larger databases repeat the 100k one's rows (see replicate)


def database(n: int) -> Path:
    """The cached timing database of ``n`` memories, built when missing (derived vectors; see the docstring)."""
    import bench_lifecycle

    # Not keyed by schema version: opening a database migrates it, as it would a user's.
    weights = load_manifest(DEFAULT_MODEL_ID).files.get("model.onnx", "")[:8]
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"timing-g{synthetic.GENERATOR_VERSION}-{weights}-n{n}.db"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return path
    log(f"building {n:,} memories into {path} (cached for next time)")
    building = path.with_suffix(".building.db")
    began = time.perf_counter()
    if n > REPLICATE_ABOVE:
        built = replicate(database(REPLICATE_ABOVE), building, n)
    else:
        built = bench_lifecycle.build(n, building)
    built["build_seconds"] = time.perf_counter() - began
    _remove_db(path)
    os.replace(building, path)
    _remove_db(building)
    meta.write_text(json.dumps(built, indent=2))
    return path


def replicate(source: Path, target: Path, n: int) -> dict[str, Any]:
    """A database of ``n`` rows made from ``source``'s by repeating them with fresh ids and noisy vectors.

    Writing a million memories through add_many takes about an hour here; repeating the 100k database's
    rows through the store's own repositories (memory row, keyword row, vector) takes minutes. Each copy
    gets a new id, a content hash made unique per copy and no key; its vector is the original plus
    Gaussian noise (cosine about 0.95), renormalised. For timing only, like every database here.
    """
    import uuid

    _remove_db(target)
    shutil.copyfile(source, target)
    rng = np.random.default_rng(SEED + n)
    with Engram.open(target) as mem:
        store = mem.store
        model = mem.active_model
        columns = [c for (c,) in store.rows("SELECT name FROM pragma_table_info('memories')") if c != "pk"]
        rows = store.rows(f"SELECT pk, {', '.join(columns)} FROM memories ORDER BY pk")
        have = len(rows)
        vectors = store.vectors.get(model, [int(r[0]) for r in rows])
        at = {c: i + 1 for i, c in enumerate(columns)}
        insert = f"INSERT INTO memories ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        terms: dict[int, str] = {}  # an original's keyword row, analysed once for all its copies
        copy = 0
        while have < n:
            copy += 1
            with store.write():
                for row in rows[: n - have]:
                    values = list(row[1:])
                    values[at["id"] - 1] = str(uuid.uuid4())
                    values[at["content_hash"] - 1] = f"{row[at['content_hash']]}:{copy}"
                    values[at["mkey"] - 1] = None
                    values[at["superseded_by"] - 1] = None
                    values[at["consolidated_into"] - 1] = None
                    store.execute(insert, values)
                    pk = int(store.scalar("SELECT last_insert_rowid()"))
                    original = int(row[0])
                    if original not in terms:
                        terms[original] = keyword_terms(store, original)
                    store.keywords.put(pk, terms[original])
                    base = vectors.get(int(row[0]))
                    if base is not None:
                        noise = rng.standard_normal(base.shape[0]).astype(np.float32) * (
                            0.33 / math.sqrt(base.shape[0])
                        )
                        v = base + noise
                        store.vectors.put(
                            model, pk, v / np.linalg.norm(v), namespace=str(row[at["namespace"]]),
                            status=str(row[at["status"]]), memory_type=str(row[at["memory_type"]]),
                            agent=str(row[at["agent_id"]]),
                        )  # fmt: skip
                    have += 1
            log(f"  replicated to {have:,}/{n:,}")
        _checkpoint(mem)
    return {"rows": have, "replicated_from": str(source)}


def keyword_terms(store: Any, pk: int) -> str:
    """The keyword row engram would write for memory ``pk`` (as engram_cli.memory.records.reindex makes it)."""
    parts = store.memories.index_parts(pk)
    if parts is None:
        return ""
    return textmod.index_text(
        parts.key or "", parts.content, parts.summary or "", *parts.supplements, " ".join(parts.tags)
    )


def copy_db(source: Path, target: Path) -> Path:
    """A copy of ``source`` on disk before anything is timed: without the fsync the kernel writes the
    copy back while the figure runs (hundreds of MB at 100k), and that I/O lands in the timings."""
    _remove_db(target)
    shutil.copyfile(source, target)
    with open(target, "rb+") as fh:
        os.fsync(fh.fileno())
    return target


def vectors_of(mem: Engram) -> np.ndarray:
    """Every stored vector of the active model, as one float32 matrix (read once, for the floors)."""
    table = mem.store.vectors.table_for(mem.active_model)
    if table is None:
        raise RuntimeError("the benchmark database holds no vectors")
    blobs = [blob for (blob,) in mem.store.rows(f"SELECT embedding FROM {table}")]
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


def mapped(matrix: np.ndarray, path: Path) -> np.ndarray:
    np.save(path, matrix)
    return np.load(path, mmap_mode="r")


# -- figures at one size ------------------------------------------------------------------------


def process_figures(db: Path, n: int, floors: dict[str, Any], only: set[str], env: dict[str, str]) -> list[Row]:
    rows: list[Row] = []
    engram = [*engram_argv(), "--db", str(db)]
    query = "how do we deploy the billing api?"
    if "recall" in only:
        import bench_mcp

        embed_floor = floors["embed_process"]["seconds"]["median"]
        # One namespace is the largest one: the namespace of the directory it runs in holds nothing here.
        namespace, _ = bench_mcp.largest_namespace(db)
        for label, extra in (("recall (process)", ["-n", namespace]), ("recall -A (process)", ["--all-namespaces"])):
            res = repeat([*engram, "recall", query, "--no-touch", "--json", *extra], PROCESS_RUNS, env=env)
            row = Row(n, label, res["seconds"]["median"], embed_floor, extra={"peak_mb": res["peak_mb"]})
            rows.append(judge(row, 1.5, at=100_000))
    if "start" in only:
        with Engram.open(db) as mem:
            some_id = str(mem.store.scalar("SELECT id FROM memories ORDER BY pk DESC LIMIT 1"))
        run_process([*engram, "set", "bench.probe", "a value to read back"], env=env)
        for label, args in (
            ("list -A", ["list", "--all-namespaces"]),
            ("inspect", ["inspect", some_id]),
            ("get", ["get", "bench.probe"]),
        ):
            floor, res = alternated([sys.executable, "-c", "import typer"], [*engram, *args], START_RUNS, env=env)
            row = Row(n, label, res["seconds"]["median"], floor["seconds"]["median"], extra={"peak_mb": res["peak_mb"]})
            rows.append(judge(row, 2.0))
    if "hook" in only:
        rows.append(hook_figure(db, n))
    return rows


def hook_figure(db: Path, n: int) -> Row:
    """The per-prompt hook as the assistant runs it (console script, JSON on stdin), warm: scripts/bench_hook.py."""
    import bench_hook
    import bench_mcp

    # Short: the warm service's socket path must fit in a Unix socket address.
    with tempfile.TemporaryDirectory(prefix="eh-", dir="/tmp") as tmp:
        work = Path(tmp)
        copy = copy_db(db, work / "engram.db")
        namespace, _ = bench_mcp.largest_namespace(copy)
        questions = bench_mcp.questions(copy, namespace, PROCESS_RUNS * 3)
        result = bench_hook.measure(copy, namespace, questions, work, ["warm"])
    warm = result["warm"]
    row = Row(n, "hook (process, warm)", warm["p50_ms"] / 1000, None, extra={"peak_mb": warm["service_peak_rss_mb"]})
    row.note = f"p95 {warm['p95_ms']:.0f} ms; service ready after {result['service_ready_s']:.1f} s"
    return judge(row, 0.150, at=100_000, absolute=True)


def inprocess_figures(db: Path, n: int, floors: dict[str, Any], only: set[str], work: Path) -> list[Row]:
    rows: list[Row] = []
    queries = synthetic.queries(RECALL_QUERIES + 1, seed=SEED)
    embedder = load_embedder(DEFAULT_MODEL_ID)
    qvecs = embedder.embed_batch(queries, kind="query")
    with Engram.open(db) as mem:
        matrix = mapped(vectors_of(mem), work / f"floor-{n}.npy")
        knn_floor, exact = exact_knn_floor(matrix, qvecs, K)
        pks = np.array(
            [pk for (pk,) in mem.store.rows(f"SELECT memory_pk FROM {mem.store.vectors.table_for(mem.active_model)}")]
        )
        if "knn" in only:
            mem.store.vectors.knn(mem.active_model, qvecs[0], K)  # warm-up (builds whatever cache it keeps)
            times: list[float] = []
            overlap: list[float] = []
            for q, truth in zip(qvecs, exact, strict=True):
                t, hits = timed(lambda q=q: mem.store.vectors.knn(mem.active_model, q, K))
                times.append(t)
                overlap.append(len({pk for pk, _ in hits} & set(pks[truth].tolist())) / K)
            s = summary(times)
            row = Row(n, "KNN k=10", s["median"], knn_floor["median"], extra={"recall_at_10": statistics.mean(overlap)})
            row.note = f"recall@10 {statistics.mean(overlap):.3f}"
            rows.append(row)
        if "inprocess" in only:
            floor = floors["query_embed"]["median"] + knn_floor["median"]
            import bench_mcp

            namespace, _ = bench_mcp.largest_namespace(db)  # the current directory's namespace holds nothing here
            scopes: tuple[tuple[str, dict[str, Any]], ...] = (
                ("recall() in-process", {"namespace": namespace}),
                ("recall() -A in-process", {"all_namespaces": True}),
            )
            for label, scope in scopes:
                mem.recall(queries[0], k=5, bump=False, **scope)
                times = [timed(lambda q=q, s=scope: mem.recall(q, k=5, bump=False, **s))[0] for q in queries[1:]]
                s = summary(times)
                row = Row(n, label, s["median"], floor, note=f"p95 {ms(s['p95'])}")
                rows.append(judge(row, 2.0, at=100_000))
                if n >= 1_000_000 and "all_namespaces" in scope:
                    rows.append(judge(Row(n, label + " p50", s["median"], None), 0.150, at=n, absolute=True))
    rows.append(Row(n, "in-process peak memory (MB)", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, None))
    return rows


def write_rates(
    db: Path, small: Path, work: Path, table: dict[str, np.ndarray], items: list[dict[str, Any]]
) -> tuple[float, float]:
    """Memories per second through add_many (merging on) with the vectors given, into a fresh copy of ``db``
    and of ``small``: the best of WRITE_RUNS runs each, the two taken in turn. One run writes about 1,000
    memories in a few seconds; the WAL checkpoints' syncs in it vary by a quarter from run to run, and the
    machine's speed drifts over minutes, which runs in turn share."""
    best = {db: 0.0, small: 0.0}
    for _ in range(WRITE_RUNS):
        for source in (small, db):
            best[source] = max(best[source], _write_rate_once(source, work, table, items))
    return best[db], best[small]


def _write_rate_once(db: Path, work: Path, table: dict[str, np.ndarray], items: list[dict[str, Any]]) -> float:
    target = copy_db(db, work / "write.db")
    try:
        embedder = load_embedder(DEFAULT_MODEL_ID)
        with _PrecomputedEngram.open(target) as mem:
            assert isinstance(mem, _PrecomputedEngram)
            mem.table_embedder = _TableEmbedder(embedder.model_id, embedder.dim, table)
            mem.add_many(items[:16])  # warm-up: caches, statements
            t, _ = timed(lambda: mem.add_many(items[16:]))
        return (len(items) - 16) / t
    finally:
        _remove_db(target)


def write_inputs() -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """New memories (other texts than the databases hold) with derived vectors, for the write path."""
    items = synthetic.memories(WRITE_N + 16, seed=WRITE_SEED)
    rng = np.random.default_rng(WRITE_SEED)
    table: dict[str, np.ndarray] = {}
    for item in items:
        item["content"] = textmod.normalize(item["content"])
        v = rng.standard_normal(384).astype(np.float32)
        table[item["content"]] = v / np.linalg.norm(v)
    return table, items


def maintenance_figures(db: Path, n: int, env: dict[str, str], work: Path) -> list[Row]:
    rows: list[Row] = []
    copy = copy_db(db, work / "maintenance.db")
    try:
        with Engram.open(copy) as mem:
            matrix = np.ascontiguousarray(vectors_of(mem))
            threshold = mem.merge_policy().threshold
        floor = blocked_pairs_floor(matrix, threshold)
        engram = [*engram_argv(), "--db", str(copy)]
        compact = run_process([*engram, "compact", "--dry-run", "--json"], env=env)
        rows.append(
            Row(
                n,
                "compact --dry-run",
                compact.seconds,
                floor,
                extra={"peak_mb": compact.peak_mb},
                target="<= 10 s at 100k",
            )
        )
        audit = run_process([*engram, "audit", "--json"], env=env)
        rows.append(Row(n, "audit", audit.seconds, floor, extra={"peak_mb": audit.peak_mb}, target="<= 10 s at 100k"))
        for row in rows[-2:]:
            if n == 100_000:
                row.met = row.engram <= 10.0
    finally:
        _remove_db(copy)
    return rows


def size_row(db: Path, n: int) -> Row:
    with Engram.open(db) as mem:
        _checkpoint(mem)
        count = int(mem.store.scalar("SELECT count(*) FROM memories"))
    per = db.stat().st_size / count
    row = Row(n, "bytes per memory", per, None, note=f"{db.stat().st_size / 1e6:.0f} MB / {count:,} rows")
    row.target = "<= 3,000 B"
    row.met = per <= 3000
    return row


# -- figures that do not depend on the store's size ------------------------------------------------


def add_figure(work: Path) -> Row:
    """add_many of distinct texts (embedding included) against the embedder alone on the same texts: ADD_RUNS
    runs of each in turn, each add_many into a new database with an empty embedding cache; the medians."""
    items = synthetic.memories(ADD_N, seed=WRITE_SEED + 1)
    texts = list(dict.fromkeys(textmod.normalize(i["content"]) for i in items))
    embedder = load_embedder(DEFAULT_MODEL_ID)
    embedder.embed_batch(texts[:8])
    adds: list[float] = []
    embeds: list[float] = []
    for i in range(ADD_RUNS):
        embeds.append(timed(functools.partial(embedder.embed_batch, texts))[0])
        with Engram.open(work / f"add-{i}.db") as mem:
            mem.add_many(items[:8])
            adds.append(timed(functools.partial(mem.add_many, items[8:]))[0])
            cache = mem.embedding_cache().path
        for suffix in ("", "-wal", "-shm"):  # the next run embeds every text again
            Path(f"{cache}{suffix}").unlink(missing_ok=True)
    t_add, t_embed = statistics.median(adds), statistics.median(embeds)
    row = Row(None, "add_many rate vs embedder", (len(items) - 8) / t_add, len(texts) / t_embed, rate=True,
              extra={"seconds": adds, "embed_seconds": embeds})  # fmt: skip
    row.note = (
        f"{len(items) - 8} memories in {t_add:.1f} s; embedder {len(texts)} texts in {t_embed:.1f} s "
        f"(medians of {ADD_RUNS})"
    )
    return judge(row, 0.9, higher=True)


def ingest_figure(work: Path, env: dict[str, str], floors: dict[str, Any]) -> Row:
    """INGEST_RUNS ingests of the same generated logs, each into a new database with an empty embedding cache,
    each followed by its floor's embedding of the same texts: the medians of both."""
    import bench_ingest

    root = work / "ingest-home"
    made = bench_ingest.generate(root, INGEST_MB)
    embedder = load_embedder(DEFAULT_MODEL_ID)
    runs: list[Run] = []
    embeds: list[float] = []
    texts: list[str] = []
    memories: list[str] = []
    passages: list[str] = []
    for i in range(INGEST_RUNS):
        ingest_env = {**env, "HOME": str(root), "CLAUDE_CONFIG_DIR": str(root / ".claude"),
                      "ENGRAM_HOME": str(work / f"ingest-engram-{i}")}  # fmt: skip
        db = work / f"ingest-{i}.db"
        runs.append(run_process([*engram_argv(), "--db", str(db), "ingest", "claude-code", "--json"], env=ingest_env))
        if not texts:
            memories, passages = ingested_texts(db)
            # The floor: a new process that loads the model (the embed floor) plus embedding once every distinct
            # text ingest had to embed: the memories' passages and the conversation turns' (the evidence).
            texts = list(dict.fromkeys(memories + passages))
        embeds.append(timed(functools.partial(embedder.embed_batch, texts))[0])
    seconds = statistics.median(r.seconds for r in runs)
    floor = floors["embed_process"]["seconds"]["median"] + statistics.median(embeds)
    row = Row(None, "ingest rate vs embedder", floor / seconds, 1.0, rate=True,
              extra={"peak_mb": max(r.peak_mb for r in runs), "mb": made["bytes"] / 1e6,
                     "memories": len(memories), "turns": len(passages),
                     "seconds": [r.seconds for r in runs], "embed_seconds": embeds})  # fmt: skip
    row.note = (
        f"{made['bytes'] / 1e6:.1f} MB: {len(memories)} memories and {len(passages)} turns in {seconds:.1f} s "
        f"(median of {len(runs)}); floor {floor:.1f} s"
    )
    return judge(row, 0.9, higher=True)


def ingested_texts(db: Path) -> tuple[list[str], list[str]]:
    """The distinct texts an ingest into ``db`` embedded: its memories' passages and its turns' passages.

    The turns' passages are made again from what is stored (their neighbours read from the store), so a
    secret redacted since reads as its marker: the same length of text to embed, within a few tokens.
    """
    from engram_cli.memory import evidence as evidencemod
    from engram_cli.memory.model import passage_text

    with Engram.open(db) as mem:
        memories = [
            passage_text(content, json.loads(metadata) if metadata else None, key)
            for content, metadata, key in mem.store.rows("SELECT content, metadata, mkey FROM memories")
        ]
        pks = [int(pk) for (pk,) in mem.store.rows("SELECT pk FROM evidence ORDER BY pk")]
        turns = mem.store.evidence.load_many(pks)
        passages = [evidencemod.passage_of(mem.store, turns[pk]) for pk in pks]
    return list(dict.fromkeys(memories)), list(dict.fromkeys(passages))


# -- report ------------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def shown(row: Row, value: float | None) -> str:
    if value is None:
        return "-"
    if row.rate:
        return f"{value:,.0f}/s" if value >= 100 else f"{value:.1f}/s"
    if "memory" in row.figure:
        return f"{value:,.0f}"
    if "exponent" in row.figure:
        return f"{value:.2f}"
    return ms(value)


def table(rows: Sequence[Row]) -> str:
    header = ("size", "figure", "engram", "floor", "ratio", "target", "met", "notes")
    lines = []
    for r in rows:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        met = "" if r.met is None else ("yes" if r.met else "NO")
        size = "any" if r.size is None else f"{r.size:,}"
        lines.append((size, r.figure, shown(r, r.engram), shown(r, r.floor), ratio, r.target, met, r.note))
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out.extend("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines)
    return "\n".join(out)


def exponents(rows: list[Row]) -> list[Row]:
    """Growth exponents of compact and audit between 20k and 100k: log(t100/t20) / log(5)."""
    out: list[Row] = []
    for figure in ("compact --dry-run", "audit"):
        at = {r.size: r.engram for r in rows if r.figure == figure}
        if 20_000 in at and 100_000 in at:
            exponent = math.log(at[100_000] / at[20_000]) / math.log(5)
            row = Row(None, f"{figure} growth exponent 20k->100k", exponent, None, note=f"{exponent:.2f}")
            row.target = "<= 1.2"
            row.met = exponent <= 1.2
            out.append(row)
    return out


def environment() -> dict[str, Any]:
    import apsw
    import onnxruntime

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "engram": __version__, "commit": commit or None, "model": DEFAULT_MODEL_ID,
        "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
        "sqlite": apsw.sqlite_lib_version(), "onnxruntime": onnxruntime.__version__,
        "load_average_start": os.getloadavg(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }  # fmt: skip


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--sizes takes numbers separated by commas, not {text!r}") from exc
    if not sizes or sizes[0] < 1_000:
        raise argparse.ArgumentTypeError("--sizes must list sizes of at least 1000")
    return sizes


def parse_only(text: str) -> set[str]:
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = chosen - set(FIGURES)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown figures {sorted(unknown)}; choose from {', '.join(FIGURES)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_sizes, default=list(DEFAULT_SIZES), help="default: 10000,100000,1000000")
    parser.add_argument("--quick", action="store_true", help="sizes 2000,10000, fewer runs: a fast check")
    parser.add_argument("--only", type=parse_only, default=set(FIGURES), help=f"some of: {','.join(FIGURES)}")
    parser.add_argument("--maintenance-max", type=int, default=100_000, help="largest size for compact and audit")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    sizes = list(QUICK_SIZES) if args.quick else args.sizes
    only: set[str] = args.only
    global PROCESS_RUNS, RECALL_QUERIES, START_RUNS, INGEST_RUNS, ADD_RUNS
    if args.quick:
        PROCESS_RUNS, RECALL_QUERIES, START_RUNS, INGEST_RUNS, ADD_RUNS = 3, 12, 5, 1, 1

    # Measure engram's defaults, not whatever config or namespace this shell happens to have.
    scratch = Path(tempfile.mkdtemp(prefix="engram-bench-"))
    os.environ["ENGRAM_HOME"] = str(scratch / "home")
    for name in ("ENGRAM_DB", "ENGRAM_NAMESPACE", "ENGRAM_AGENT", "ENGRAM_MODEL", "PYTHONDONTWRITEBYTECODE"):
        os.environ.pop(name, None)
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}

    started = time.perf_counter()
    results: dict[str, Any] = {"environment": environment()}
    rows: list[Row] = []
    try:
        log("floors")
        embedder = load_embedder(DEFAULT_MODEL_ID)
        queries = synthetic.queries(RECALL_QUERIES + 1, seed=SEED)
        embedder.embed_batch(queries[:1], kind="query")
        floors: dict[str, Any] = {
            "embed_process": floor_embed_process(DEFAULT_MODEL_ID, PROCESS_RUNS),
            "typer": floor_typer(PROCESS_RUNS),
            "query_embed": summary([timed(lambda q=q: embedder.embed_batch([q], kind="query"))[0] for q in queries]),
        }
        results["floors"] = floors
        if "add" in only:
            log("add_many against the embedder")
            rows.append(add_figure(scratch))
        if "ingest" in only:
            log(f"ingest of {INGEST_MB:g} MB of generated Claude Code logs")
            rows.append(ingest_figure(scratch, env, floors))
        if "write" in only:
            table_, items = write_inputs()
            small_db = database(SMALL)
            results["write_rate_at_small"] = {}
        maintenance_sizes = sorted({*MAINTENANCE_SIZES, *sizes} & set(range(0, args.maintenance_max + 1)))
        for n in sorted({*sizes, *(maintenance_sizes if "maintenance" in only else [])}):
            db = database(n)
            log(f"figures at {n:,}")
            if n in sizes:
                rows.extend(process_figures(db, n, floors, only, env))
                if only & {"knn", "inprocess"}:
                    rows.extend(inprocess_figures(db, n, floors, only, scratch))
                if "write" in only:
                    rate, small = write_rates(db, small_db, scratch, table_, items)
                    results["write_rate_at_small"][n] = small
                    row = Row(n, "write path rate vs 2k", rate, small, rate=True)
                    rows.append(judge(row, 0.8, at=100_000, higher=True))
                if "size" in only:
                    rows.append(size_row(db, n))
            if "maintenance" in only and n in maintenance_sizes:
                rows.extend(maintenance_figures(db, n, env, scratch))
        rows.extend(exponents(rows))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        results["rows"] = [r.as_dict() for r in rows]
        results["environment"]["load_average_end"] = os.getloadavg()
        results["environment"]["total_seconds"] = time.perf_counter() - started
        results["environment"]["peak_mb_children"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        results["environment"]["peak_mb_self"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if args.json:
            args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
    print(table(rows))
    env_info = results["environment"]
    print(
        f"\nengram {env_info['engram']} ({env_info['commit']}), {env_info['model']}, Python {env_info['python']}, "
        f"SQLite {env_info['sqlite']}, onnxruntime {env_info['onnxruntime']}, {env_info['cpus']} CPUs; load average "
        f"{env_info['load_average_start'][0]:.1f} at start, {env_info['load_average_end'][0]:.1f} at end; "
        f"{env_info['total_seconds'] / 60:.1f} min in all"
    )
    if args.json:
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
