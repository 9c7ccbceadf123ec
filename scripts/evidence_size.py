#!/usr/bin/env python3
"""How much the conversation kept as evidence costs on disk, per MB of log read.

Ingests the sample logs in tests/fixtures/agent-logs (every source that has samples there) into a fresh
database in a temporary directory, then reports the log bytes the importers read, the turns kept, and the
bytes on disk of the evidence (rows, its indexes, its keyword index and its vector tables, measured with
SQLite's dbstat), in all and per MB of log. sqlite-vec allocates vectors a chunk at a time per namespace,
so on small samples the vector tables weigh more per turn than on a large history.

With ``--generated MB`` it reads that many MB of Claude Code logs made by scripts/bench_ingest.py's seeded
generator instead: a history large enough that the per-chunk allocation no longer shows.

Usage (from the repository root):
  PYTHONPATH=$PWD python scripts/evidence_size.py [--generated MB] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "agent-logs"
# Sample folder -> the source that reads it.
SAMPLES = {
    "claude-code": "claude-code",
    "codex": "codex",
    "gemini-cli": "gemini-cli",
    "aider": "aider",
    "copilot-cli": "copilot-cli",
    "cursor": "cursor",
    "roo-code": "roo-code",
}


def measure(generated: float | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as home:
        os.environ["ENGRAM_HOME"] = home
        os.environ["HOME"] = home
        from engram_cli import Engram
        from engram_cli.ingest import importer

        samples = {FIXTURES / folder: source for folder, source in SAMPLES.items()}
        if generated is not None:
            sys.path.insert(0, str(REPO_ROOT / "scripts"))
            import bench_ingest

            logs = Path(home) / "logs"
            bench_ingest.generate(logs, generated)
            samples = {logs / ".claude" / "projects": "claude-code"}
        log_bytes = 0
        with Engram.open() as mem:
            for path, source in samples.items():
                log_bytes += sum(p.stat().st_size for p in set(importer(source).files(path)))
                mem.ingest(source, path=path)
            mem.store.maintenance.checkpoint()
            turns = mem.store.evidence.count()
            parts = mem.store.evidence.stored_bytes()
            text = int(mem.store.scalar("SELECT coalesce(sum(length(CAST(content AS BLOB))), 0) FROM evidence"))
    stored = sum(parts.values())
    vectors = sum(size for name, size in parts.items() if "__evidence" in name)
    per_mb = 1024 * 1024 / log_bytes if log_bytes else 0.0
    return {
        "log_bytes": log_bytes,
        "turns": turns,
        "turn_text_bytes": text,
        "evidence_bytes": stored,
        "vector_bytes": vectors,
        "evidence_bytes_per_mb_of_log": round(stored * per_mb),
        "turn_text_bytes_per_mb_of_log": round(text * per_mb),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--generated", type=float, metavar="MB", help="read this many MB of generated logs instead")
    args = parser.parse_args()
    figures = measure(args.generated)
    if args.json:
        sys.stdout.write(json.dumps(figures, indent=2) + "\n")
    else:
        for key, value in figures.items():
            sys.stdout.write(f"{key:>32}  {value}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
