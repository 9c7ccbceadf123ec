"""Start-up time of whole `engram` processes, each beside its floor, as ratios measured in one run.

    python scripts/bench_startup.py [--memories 200] [--runs 15] [--json out.json]

Floors: ``python -c "import typer"`` for the commands that load no model (list, inspect, get,
--help; the target is 2x), and python + the bundled model's session + one embedded query for
``recall`` (the target is 1.5x). Commands and floors run interleaved, round after round, so that a
busy machine slows them alike; medians are reported. The database is built in a temporary
ENGRAM_HOME. Bytecode is cached (PYTHONDONTWRITEBYTECODE is dropped for the children) and one
warm-up round runs first, as on a machine where engram is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EMBED_FLOOR = (
    "from engram_cli.embed import load_embedder; "
    "load_embedder().embed_batch(['how do we deploy the tile server'], kind='query')"
)


def _engram() -> list[str]:
    script = shutil.which("engram")
    return [script] if script else [sys.executable, "-m", "engram_cli"]


def _build(home: Path, memories: int, env: dict[str, str]) -> tuple[str, str]:
    """A database of ``memories`` memories and one key; returns (a memory id, the key)."""
    code = (
        "import sys\n"
        "from engram_cli.api import Engram\n"
        "with Engram.open() as mem:\n"
        "    texts = [f'note {i}: the deploy of service {i % 17} uses port {8000 + i}'"
        f" for i in range({memories})]\n"
        "    done = mem.add_many([{'content': text} for text in texts], no_merge=True)\n"
        "    mem.set('deploy:region', 'eu-west-1')\n"
        "    sys.stdout.write(done[0].memory.id)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()[:8], "deploy:region"


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", dest="json_path", metavar="PATH")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="engram-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "ENGRAM_DB")}
        env.update(ENGRAM_HOME=str(Path(tmp) / "home"), NO_COLOR="1")
        memory_id, key = _build(Path(tmp) / "home", args.memories, env)
        engram = _engram()
        cases = {
            "import typer": [sys.executable, "-c", "import typer"],
            "model floor": [sys.executable, "-c", EMBED_FLOOR],
            "engram list": [*engram, "list"],
            "engram inspect": [*engram, "inspect", memory_id],
            "engram get": [*engram, "get", key],
            "engram --help": [*engram, "--help"],
            "engram recall": [*engram, "recall", "which port does the deploy use", "--no-touch"],
        }
        for argv in cases.values():  # warm-up: bytecode written, files in the page cache
            _time(argv, env)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, argv in cases.items():
                times[name].append(_time(argv, env))

    median = {name: statistics.median(values) for name, values in times.items()}
    floors = {"engram recall": "model floor"}
    rows = []
    for name, seconds in median.items():
        floor = floors.get(name, "import typer") if name.startswith("engram") else None
        ratio = seconds / median[floor] if floor else None
        rows.append({"case": name, "median_s": round(seconds, 4), "floor": floor, "ratio": ratio and round(ratio, 2)})
        print(f"{name:16s} {seconds * 1000:8.1f} ms" + (f"   {ratio:5.2f}x {floor}" if ratio else ""))
    if args.json_path:
        report = {"memories": args.memories, "runs": args.runs, "results": rows}
        Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
