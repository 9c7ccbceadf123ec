"""get, list and forget."""

from __future__ import annotations

from dataclasses import dataclass

from engram_cli.errors import InvalidInput
from engram_cli.memory import records
from engram_cli.memory.model import Event, Memory
from engram_cli.memory.recall import Filters
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now


def get(store: Store, ref: str) -> Memory:
    with store.read():
        return records.load(store, records.resolve_pk(store, ref))


def history(store: Store, ref: str) -> tuple[Memory, list[Event]]:
    with store.read():
        memory = records.load(store, records.resolve_pk(store, ref))
        return memory, records.events_of(store, memory.id)


def list_memories(store: Store, filters: Filters, *, limit: int = 20, offset: int = 0) -> list[Memory]:
    """Newest first."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, not {limit}")
    where, params = filters.sql("m")
    with store.read():
        pks = [
            int(r[0])
            for r in store.rows(
                f"SELECT m.pk FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.pk DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        ]
        found = records.load_many(store, pks)
    return [found[pk] for pk in pks if pk in found]


def count(store: Store, filters: Filters) -> int:
    where, params = filters.sql("m")
    return int(store.scalar(f"SELECT count(*) FROM memories m WHERE {where}", params) or 0)


@dataclass
class ForgetResult:
    id: str
    action: str  # "archived", "purged" or "unchanged"

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "action": self.action}


def forget(store: Store, refs: list[str], *, hard: bool = False, actor: str = "user") -> list[ForgetResult]:
    """Archive memories (default) or purge them with everything that holds their text.

    All ids are resolved before anything changes, and all changes share one
    transaction: a typo in the third id leaves the first two untouched.
    """
    if not refs:
        raise InvalidInput("no memory id given", hint="engram forget ID [ID …]; `engram list` shows ids")
    results: list[ForgetResult] = []
    with store.write():
        pks = list(dict.fromkeys(records.resolve_pk(store, ref) for ref in refs))
        now = iso_now()
        for pk in pks:
            memory = records.load(store, pk, with_sources=False)
            if hard:
                records.purge(store, memory)
                records.add_event(
                    store, memory.id, "deleted", now,
                    note="purged with forget --hard; content removed", actor=actor,
                )  # fmt: skip
                results.append(ForgetResult(memory.id, "purged"))
            elif memory.status == "archived":
                results.append(ForgetResult(memory.id, "unchanged"))
            else:
                before = {"status": memory.status}
                records.set_status(store, memory, "archived", now)
                records.add_event(
                    store, memory.id, "archived", now,
                    before=before, after={"status": "archived"}, note="forgotten", actor=actor,
                )  # fmt: skip
                results.append(ForgetResult(memory.id, "archived"))
    return results


def score_factors(memory: Memory) -> dict[str, float | str]:
    """The parts of a recall score that belong to the memory itself (relevance depends on the query)."""
    from engram_cli.memory.recall import IMPORTANCE_BASE
    from engram_cli.timeutil import from_iso, now

    last = memory.last_access_at or memory.created_at
    days = max(0.0, (now() - from_iso(last)).total_seconds() / 86400)
    factor = IMPORTANCE_BASE + memory.importance
    return {
        "importance_factor": round(factor, 6),
        "decay_score": round(memory.decay_score, 6),
        "weight": round(factor * memory.decay_score, 6),
        "days_since_access": round(days, 3),
        "formula": "score = relevance x (0.6 + importance) x decay_score",
    }


def recent_events(store: Store, *, limit: int = 50, kinds: list[str] | None = None) -> list[Event]:
    """The latest events across the database, newest first."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, not {limit}")
    where, params = "1", []
    if kinds:
        where = f"kind IN ({', '.join('?' for _ in kinds)})"
        params = list(kinds)
    rows = store.rows(
        f"SELECT memory_id, kind, at, actor, before, after, note FROM events WHERE {where} ORDER BY pk DESC LIMIT ?",
        [*params, limit],
    )
    return [records.event_from_row(r) for r in rows]
