#!/usr/bin/env python3
"""Write bench/long-chat's conversations as generic chat JSONL, the format `engram ingest chat` reads.

long-chat stores each turn as a ready-made memory (memories.jsonl). Here the same turns become the
history a person would bring: one file per conversation (``conv-01.jsonl`` …), one message per line,
with the session, the speaker's role, the turn as said (speaker's name first, as in the dataset),
its time, the conversation as ``project`` and the turn's dataset id as ``id``, so that whatever
engram keeps from a turn can be traced back to it (the queries name their evidence by those ids).

The conversations are between two people, not a person and an assistant: the speaker who opens a
conversation is taken as the person (``user``) and the other as ``assistant``, since that is the
only reading the chat format has for a second party.

Usage (from the repository root):
  python scripts/long_chat_as_jsonl.py OUT_DIR [--dataset bench/long-chat]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

DATASET = Path(__file__).resolve().parents[1] / "bench" / "long-chat"


def conversations(dataset: Path = DATASET) -> dict[str, list[dict[str, Any]]]:
    """Chat JSONL lines per conversation (namespace), in the order of the turns."""
    turns: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with (dataset / "memories.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                turns[record["namespace"]].append(record)
    out: dict[str, list[dict[str, Any]]] = {}
    for conv, records in sorted(turns.items()):
        records.sort(key=lambda r: (r["metadata"]["session"], r["metadata"]["turn"]))
        person = records[0]["metadata"]["speaker"]
        out[conv] = [
            {
                "session": f"{conv}-s{r['metadata']['session']:02d}",
                "role": "user" if r["metadata"]["speaker"] == person else "assistant",
                "text": r["content"],
                "time": r["created_at"],
                "project": conv,
                "id": r["id"],
            }
            for r in records
        ]
    return out


def write(out_dir: Path, dataset: Path = DATASET) -> list[Path]:
    """One ``<conversation>.jsonl`` per conversation in ``out_dir``; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for conv, lines in conversations(dataset).items():
        path = out_dir / f"{conv}.jsonl"
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="where to write conv-NN.jsonl")
    parser.add_argument("--dataset", type=Path, default=DATASET, help="the long-chat directory")
    args = parser.parse_args(argv)
    files = write(args.out_dir, args.dataset)
    lines = sum(1 for path in files for _ in path.open(encoding="utf-8"))
    print(f"wrote {len(files)} conversations, {lines} messages, to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
