#!/usr/bin/env python3
"""long-chat R@5/R@10 with its conversations brought in through `engram ingest chat`, not loaded as memories.

`engram eval --dataset bench/long-chat` loads every turn as a memory: it measures recall over the
whole conversation. This measures what ingest keeps of the same conversations, the way a person's
chat history would reach engram: the turns are written as chat JSONL
(:mod:`long_chat_as_jsonl`), each conversation is ingested into its own namespace in a fresh
database (``engram ingest chat conv-NN.jsonl -n conv-NN``), and the dataset's questions are asked
with engram's recall (default settings, the relevance floor included, in the conversation's
namespace, at the question's ``now``).

A hit counts for the turns it came from: the message ids of its sources (the dataset's turn ids,
kept by the chat importer). Recall@k is the share of a question's evidence turns among the turns
of the top k hits, as in `engram eval`. An episode stands for a whole session and names no turn,
so the session-level figures are given beside: the share of the evidence's sessions among the
sessions of the top k hits, with its chance level (k of a conversation's 15-26 sessions drawn at
random). Evidence hits (the conversation's turns that fill the places memories left) count through the
message id of their turn.

Usage (from the repository root; about half a minute on two cores):
  python scripts/long_chat_via_ingest.py [--dataset bench/long-chat] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from long_chat_as_jsonl import DATASET, write

KS = (5, 10)


def turns_of(hit: Any) -> set[str]:
    """The dataset turn ids a recall hit came from: a memory's sources, or the message of an evidence turn."""
    turn = getattr(hit, "turn", None)
    if turn is not None:
        return {turn.message_id} if turn.message_id else set()
    return {s.message_id for s in hit.memory.sources if s.message_id}


def sessions_of(hit: Any) -> set[str]:
    turn = getattr(hit, "turn", None)
    if turn is not None:
        return {turn.session}
    memory = hit.memory
    found = {s.session for s in memory.sources if s.session}
    if memory.session:
        found.add(memory.session)
    return found


def session_of_turn(turn: str) -> str:
    """``c03-s07-t012`` -> ``conv-03-s07``, the chat session the turn was written to."""
    conv, session, _ = turn.split("-")
    return f"conv-{conv[1:]}-{session}"


def share(wanted: Iterable[str], got: set[str]) -> float:
    wanted = list(dict.fromkeys(wanted))
    return sum(1 for w in wanted if w in got) / len(wanted)


def measure(dataset: Path, work: Path) -> dict[str, Any]:
    os.environ["ENGRAM_HOME"] = str(work / "engram-home")
    from engram_cli import Engram
    from engram_cli.memory import evaluation as evalmod

    files = write(work / "chat", dataset)
    began = time.perf_counter()
    created = 0
    with Engram.open() as mem:
        for path in files:
            report = mem.ingest("chat", path=path, namespace=path.stem)
            if report.errors:
                raise SystemExit(f"ingest failed: {report.errors}")
            created += sum(s.count("created", "new") for s in report.sources)
        ingest_s = time.perf_counter() - began
        stored = mem.list(all_namespaces=True, limit=100000)
        by_type: dict[str, int] = defaultdict(int)
        for m in stored:
            by_type[m.type] += 1
        lines = (dataset / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        queries = [q for q in evalmod.parse_queries(lines) if q.answerable]
        settings = mem.recall_settings()
        per_conversation: dict[str, int] = defaultdict(int)  # sessions, for the chance level of the session figure
        for path in files:
            per_conversation[path.stem] = len({json.loads(line)["session"] for line in path.open(encoding="utf-8")})
        rows: list[dict[str, Any]] = []
        for q in queries:
            flt = mem.filters(namespace=q.namespace, all_namespaces=q.namespace is None)
            found = mem.recall(q.text, k=max(KS), bump=False, settings=settings, filters=flt, now=q.now)
            hits: list[Any] = [*found, *found.evidence]  # memories first, then the turns that filled the places
            row: dict[str, Any] = {"category": str(q.labels.get("category", "?"))}
            for k in KS:
                turns = set().union(*(turns_of(h) for h in hits[:k])) if hits else set()
                sessions = set().union(*(sessions_of(h) for h in hits[:k])) if hits else set()
                row[f"R@{k}"] = share(q.expected, turns)
                row[f"session R@{k}"] = share((session_of_turn(t) for t in q.expected), sessions)
                row[f"chance session R@{k}"] = min(1.0, k / per_conversation[str(q.namespace)])
            rows.append(row)
    by_category = {c: _mean([r for r in rows if r["category"] == c]) for c in sorted({r["category"] for r in rows})}
    return {
        "queries": len(rows),
        "memories": len(stored),
        "by_type": dict(sorted(by_type.items())),
        "ingest_seconds": round(ingest_s, 1),
        "overall": _mean(rows),
        "by_category": by_category,
    }


def _mean(rows: list[dict[str, Any]]) -> dict[str, float]:
    keys = [k for k in rows[0] if k != "category"] if rows else []
    return {k: round(sum(r[k] for r in rows) / len(rows), 3) for k in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--keep", type=Path, help="work here and keep the JSONL and the database")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = measure(args.dataset, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="long-chat-ingest-") as tmp:
            result = measure(args.dataset, Path(tmp))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"long-chat through `engram ingest chat`: {result['memories']} memories {result['by_type']}, "
          f"ingested in {result['ingest_seconds']} s; {result['queries']} questions")  # fmt: skip
    print(f"{'':12}" + "".join(f"{k:>22}" for k in result["overall"]))
    for name, scores in [("overall", result["overall"]), *result["by_category"].items()]:
        print(f"{name:12}" + "".join(f"{v:>22.3f}" for v in scores.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
