#!/usr/bin/env python3
"""Benchmark the per-prompt hook as an assistant runs it: a whole `engram` process per prompt, cold and warm.

For each size, the lifecycle database of that size (scripts/bench_lifecycle.py builds and caches it:
synthetic texts written through the real write path, derived vectors) is copied, and each prompt runs

    engram --db COPY --hook claude-code:UserPromptSubmit hooks prompt claude-code

through a console script like the one pip installs (``engram_cli.launch:main``), with Claude Code's
hook JSON on stdin, from a project directory named after the database's largest namespace (so each
prompt recalls that project and the global scope). Each prompt is a different question.

Reported per size, as whole-process wall times (p50 / p95 / max over PROMPTS prompts):
  * cold: hooks.warm_idle_s = 0, the warm path off: every prompt loads Python, the CLI, the store and the model;
  * warm: the service (`engram hooks serve`) started by the first prompt and running; its peak memory;
  * floor: `python -c pass` through the same interpreter, and the launcher's own imports
    (`python -c "import engram_cli.launch, engram_cli.warm.client"`), which no warm hook can go below.
With `--paths first`, instead: the first PROMPTS prompts after installing, back to back from an empty cache
directory (no vector index file) and no service, none waiting for the service to start: what a person
meets first, while the service starts and builds the index (each prompt's time, and whether it printed).

Usage (from the repository root; 100k only with `nice -n 10` on a shared machine):
  python scripts/bench_hook.py [--sizes 10000 100000] [--prompts 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
for entry in (REPO_ROOT, HERE):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

import bench_mcp  # noqa: E402

import bench  # noqa: E402

WARMUP = 3
# What pip writes as the `engram` console script for `engram = "engram_cli.launch:main"`.
CONSOLE_SCRIPT = """#!{python}
import re
import sys
from engram_cli.launch import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


def _stats(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[max(0, round(0.95 * len(ordered)) - 1)],
        "max_ms": 1000 * ordered[-1],
    }


def _timed(argv: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    began = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, timeout=120)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed, done.stdout


def _services(runtime: Path) -> list[int]:
    """The warm services started under ``runtime`` (this run's private runtime directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"hooks\0serve" in cmdline and f"XDG_RUNTIME_DIR={runtime}\0".encode() in environ:
            found.append(int(entry.name))
    return found


def _peak_mb(pid: int) -> float | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name == "VmHWM":
            return int(rest.split()[0]) / 1024
    return None


def _wait_for(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def measure(db: Path, namespace: str, questions: list[str], work: Path, paths: list[str]) -> dict[str, Any]:
    home, runtime, project, bin_dir = work / "home", work / "run", work / namespace, work / "bin"
    for directory in (home, runtime, project, bin_dir):
        directory.mkdir(mode=0o700)
    script = bin_dir / "engram"
    script.write_text(CONSOLE_SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    env = {
        **os.environ, "ENGRAM_HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(REPO_ROOT),
        "ORT_DISABLE_TELEMETRY": "1",
    }  # fmt: skip
    env.pop("ENGRAM_DB", None)
    env.pop("ENGRAM_NAMESPACE", None)
    argv = [str(script), "--db", str(db), "--hook", "claude-code:UserPromptSubmit", "hooks", "prompt", "claude-code"]
    config = home / "config.toml"

    def payload(question: str) -> bytes:
        event = {"session_id": "bench", "hook_event_name": "UserPromptSubmit", "prompt": question, "cwd": str(project)}
        return json.dumps(event).encode()

    out: dict[str, Any] = {}
    floors = {
        "python_pass": [sys.executable, "-c", "pass"],
        "launcher_imports": [sys.executable, "-c", "import engram_cli.launch, engram_cli.warm.client"],
    }
    for name, command in floors.items():
        times = [_timed(command, b"", env, project)[0] for _ in range(WARMUP + len(questions))][WARMUP:]
        out[f"floor_{name}"] = _stats(times)

    if "first" in paths:
        out["first"] = first_prompts(argv, payload, questions, env, project, config, runtime)
    if "cold" in paths:
        # Cold: the warm path off, as for a person who set hooks.warm_idle_s = 0.
        config.write_text("[hooks]\nwarm_idle_s = 0\n")
        cold: list[float] = []
        injected = 0
        for i, question in enumerate(questions[:WARMUP] + questions):
            elapsed, stdout = _timed(argv, payload(question), env, project)
            if i >= WARMUP:
                cold.append(elapsed)
                injected += bool(stdout)
        out["cold"] = {**_stats(cold), "prompts": len(cold), "prompts_with_memories": injected}
        if _services(runtime):
            raise SystemExit("a service started although hooks.warm_idle_s = 0")
    if "warm" not in paths:
        return out

    # Warm: the first prompt starts the service; once it listens, every prompt goes to it.
    config.write_text("[hooks]\nwarm_idle_s = 600\n")
    began = time.perf_counter()
    _timed(argv, payload(questions[0]), env, project)
    sockets = runtime / "engram"
    if not _wait_for(lambda: any(sockets.glob("*.sock")), 300):
        raise SystemExit("the warm service did not start")
    out["service_ready_s"] = time.perf_counter() - began
    warm: list[float] = []
    injected = 0
    try:
        for i, question in enumerate(questions[:WARMUP] + questions):
            elapsed, stdout = _timed(argv, payload(question), env, project)
            if i >= WARMUP:
                warm.append(elapsed)
                injected += bool(stdout)
        pids = _services(runtime)
        out["warm"] = {
            **_stats(warm), "prompts": len(warm), "prompts_with_memories": injected,
            "service_peak_rss_mb": _peak_mb(pids[0]) if pids else None,
        }  # fmt: skip
    finally:
        for pid in _services(runtime):
            os.kill(pid, signal.SIGTERM)
        _wait_for(lambda: not _services(runtime), 30)
    return out


def first_prompts(
    argv: list[str],
    payload: Any,
    questions: list[str],
    env: dict[str, str],
    project: Path,
    config: Path,
    runtime: Path,
) -> dict[str, Any]:
    """The first prompts of a fresh cache directory with the warm path on, back to back, no warm-up."""
    config.write_text("[hooks]\nwarm_idle_s = 600\n")
    times: list[float] = []
    printed: list[bool] = []
    try:
        for question in questions:
            elapsed, stdout = _timed(argv, payload(question), env, project)
            times.append(elapsed)
            printed.append(bool(stdout))
    finally:
        for pid in _services(runtime):
            os.kill(pid, signal.SIGTERM)
        _wait_for(lambda: not _services(runtime), 30)
    return {**_stats(times), "prompts": len(times), "prompts_with_memories": sum(printed),
            "each_ms": [round(1000 * t) for t in times], "printed": printed}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--prompts", type=int, default=40, help="timed prompts per size and path (after a warm-up)")
    parser.add_argument("--paths", nargs="+", choices=["cold", "warm", "first"], default=["cold", "warm"])
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    # An installed engram has its bytecode compiled (pip does it); a checkout may not, and compiling on
    # every start would be timed as the hook's own cost.
    compileall.compile_dir(REPO_ROOT / "engram_cli", quiet=1)
    results: dict[str, Any] = {}
    for size in args.sizes:
        source = bench_mcp.database(size)
        # Short: the service's socket path must fit in a Unix socket address.
        with tempfile.TemporaryDirectory(prefix="eh-", dir="/tmp") as tmp:
            work = Path(tmp)
            db = work / "engram.db"
            shutil.copyfile(source, db)
            namespace, in_namespace = bench_mcp.largest_namespace(db)
            bench.log(f"{size:,} memories: the per-prompt hook in project {namespace} ({in_namespace:,}) + global")
            questions = bench_mcp.questions(db, namespace, args.prompts)
            result = measure(db, namespace, questions, work, args.paths)
            result["target_p50_ms"] = 150
            floor = result["floor_python_pass"]["p50_ms"]
            for path in args.paths:
                result[f"{path}_vs_python"] = result[path]["p50_ms"] / floor
                bench.log(
                    f"  {path}: p50 {result[path]['p50_ms']:.0f} ms, p95 {result[path]['p95_ms']:.0f} ms "
                    f"({result[path]['p50_ms'] / floor:.1f}x `python -c pass`, {floor:.0f} ms)"
                )
            results[str(size)] = {"namespace": namespace, "in_namespace": in_namespace, **result}
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
