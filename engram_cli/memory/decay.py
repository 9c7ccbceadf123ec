"""decay and touch: memories fade with time unless they are used again.

decay_score = 0.5 ^ (days since last access / half-life of the memory's type), with a
floor: 0.6 for memories of high importance (>= 0.8), 0.08 for the rest. A memory never
accessed counts from when engram learned it (learned_at), not from when it happened: a
history ingested today is not stale today. A memory that
sinks to the low floor is archived: out of recall, still inspectable, and brought back
by a recall hit (with --include-archived) or by `engram touch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from engram_cli.errors import InvalidInput
from engram_cli.memory import records
from engram_cli.memory.model import HIGH_IMPORTANCE, MEMORY_TYPES, Filters, Memory
from engram_cli.serialize import json_meta
from engram_cli.store.db import Store
from engram_cli.timeutil import from_iso, now, to_iso

HIGH_FLOOR = 0.6
LOW_FLOOR = 0.08
# A decay change smaller than this is applied without an event of its own, and without a
# line in `engram decay`'s report, so a daily cron run neither writes one event per memory
# per day nor mails a report of drifts nobody acts on.
EVENT_STEP = 0.1
BATCH = 500


def decay_score(importance: float, days: float, half_life_days: float) -> float:
    """The seed formula with floors: 0.5^(days/half-life), never below 0.6 (high importance) or 0.08."""
    if half_life_days <= 0:
        raise InvalidInput(f"half-lives must be positive, not {half_life_days}")
    raw = float(0.5 ** (max(0.0, days) / half_life_days))
    floor = HIGH_FLOOR if importance >= HIGH_IMPORTANCE else LOW_FLOOR
    return max(floor, min(1.0, raw))


def archives(importance: float, score: float) -> bool:
    """Only memories below high importance fade out; they go when they reach the low floor."""
    return importance < HIGH_IMPORTANCE and score <= LOW_FLOOR


@dataclass
class Change:
    id: str
    content: str
    before: float = field(metadata=json_meta(key="decay_before", digits=6))
    after: float = field(metadata=json_meta(key="decay_after", digits=6))
    archived: bool

    @property
    def notable(self) -> bool:
        """Archived, or moved by at least EVENT_STEP: what gets an event and a line in the report."""
        return self.archived or abs(self.after - self.before) >= EVENT_STEP


@dataclass
class DecayReport:
    json_keys: ClassVar[tuple[str, ...]] = (
        "now",
        "dry_run",
        "scanned",
        "changed",
        "archived",
        "silent_drifts",
        "evidence_pruned",
        "changes",
    )

    now: str
    dry_run: bool
    scanned: int = 0
    changes: list[Change] = field(default_factory=list)
    # Turns of conversations (evidence) deleted, or that a dry run would delete, for age or the cap.
    evidence_pruned: int = 0

    step: float = EVENT_STEP

    @property
    def changed(self) -> int:
        """How many scores moved, the small drifts included."""
        return len(self.changes)

    @property
    def archived(self) -> int:
        return sum(1 for c in self.changes if c.archived)

    @property
    def notable(self) -> list[Change]:
        """The changes worth telling a person about (see Change.notable)."""
        return [c for c in self.changes if c.notable]

    @property
    def silent_drifts(self) -> int:
        """Changes smaller than the step: applied, but not reported line by line."""
        return sum(1 for c in self.changes if not c.notable)


def run(
    store: Store,
    half_lives: dict[str, float],
    *,
    at: datetime | None = None,
    namespaces: list[str] | None = None,
    dry_run: bool = False,
    min_change: float = 0.0,
) -> DecayReport:
    """Recompute the decay of every active memory (in ``namespaces``, or all) as of ``at``.

    Changes smaller than ``min_change`` are left alone (compact uses this so that a
    run seconds after another does not rewrite every row for a rounding difference).
    """
    missing = set(MEMORY_TYPES) - set(half_lives)
    if missing:
        raise InvalidInput(f"no half-life configured for {', '.join(sorted(missing))}")
    moment = at or now()
    stamp = to_iso(moment)
    report = DecayReport(now=stamp, dry_run=dry_run)
    pks = store.memories.pks(Filters(namespaces=namespaces, statuses=["active"]), order="pk")
    for start in range(0, len(pks), BATCH):
        # A dry run only reads, so it also works on a read-only database.
        with store.read() if dry_run else store.write():
            rows = [r for r in store.memories.decay_inputs(pks[start : start + BATCH]) if r[1] == "active"]
            report.scanned += len(rows)
            moving = _may_change(rows, half_lives, moment, min_change)
            if not moving:
                continue
            if dry_run:
                # Nothing is written: the row's own columns decide, and only the changed rows' texts are read.
                wanted = set(moving)
                judged = [
                    (r, v) for r in rows if r[0] in wanted and (v := _judge(*r[2:], half_lives, moment, min_change))
                ]
                texts = store.memories.texts([r[0] for r, _ in judged])
                for r, (score, gone, _) in judged:
                    report.changes.append(Change(*texts[r[0]], r[4], score, gone))
                continue
            # Only the rows whose score may move are read whole and decided one by one, exactly as before.
            for memory in store.memories.load_many(moving).values():
                if memory.status != "active":
                    continue
                change = _decay_one(store, memory, half_lives, moment, stamp, dry_run, min_change)
                if change is not None:
                    report.changes.append(change)
    return report


# How far the vectorised scores may be from the exact ones and still decide nothing: they differ
# by a few units in the last place (numpy's power may round differently from the C library's).
_MARGIN = 1e-12


def _may_change(
    rows: Sequence[tuple[int, str, str, float, float, str]],
    half_lives: dict[str, float],
    moment: datetime,
    min_change: float,
) -> list[int]:
    """The pks of ``rows`` (pk, status, type, importance, decay_score, decay start) whose decay may move.

    The decay formula over all rows at once; a row is left out only when its new score is, beyond
    rounding, too close to the stored one to change and it would not be archived. Rows numpy cannot
    judge (a timestamp in another form, a type without a usable half-life) are kept, so
    :func:`_decay_one` decides (or fails) for them as it always did.
    """
    import numpy as np

    if not rows:
        return []
    pk, _, types, importance, stored, start = zip(*rows, strict=True)
    unsure = np.array([t not in half_lives or not float(half_lives[t]) > 0 for t in types], dtype=bool)
    unsure |= np.array([len(s) != 27 or s[-1] != "Z" for s in start], dtype=bool)
    try:
        begun = np.array([s[:-1] if len(s) == 27 else "NaT" for s in start], dtype="datetime64[us]")
    except ValueError:
        return list(pk)
    unsure |= np.isnat(begun)
    now64 = np.datetime64(moment.astimezone(UTC).replace(tzinfo=None), "us")
    elapsed = np.where(unsure, 0, (now64 - np.where(unsure, now64, begun)).astype(np.int64))
    days = elapsed.astype(np.float64) / 1e6 / 86400
    life = np.array([float(half_lives[t]) if not bad else 1.0 for t, bad in zip(types, unsure.tolist(), strict=True)])
    imp = np.asarray(importance, dtype=np.float64)
    raw = np.power(0.5, np.maximum(days, 0.0) / life)
    score = np.maximum(np.where(imp >= HIGH_IMPORTANCE, HIGH_FLOOR, LOW_FLOOR), np.minimum(1.0, raw))
    gone = (imp < HIGH_IMPORTANCE) & (score <= LOW_FLOOR + _MARGIN)
    moves = np.abs(score - np.asarray(stored, dtype=np.float64)) >= max(1e-9, min_change) - _MARGIN
    return [p for p, keep in zip(pk, (unsure | gone | moves).tolist(), strict=True) if keep]


def _judge(
    memory_type: str,
    importance: float,
    stored: float,
    start: str,
    half_lives: dict[str, float],
    moment: datetime,
    min_change: float,
) -> tuple[float, bool, float] | None:
    """A memory's new score, whether it is archived, and its days since ``start``; None when it stays as it is."""
    days = (moment - from_iso(start)).total_seconds() / 86400
    score = decay_score(importance, days, float(half_lives[memory_type]))
    gone = archives(importance, score)
    if abs(score - stored) < max(1e-9, min_change) and not gone:
        return None
    return score, gone, days


def _decay_one(
    store: Store,
    memory: Memory,
    half_lives: dict[str, float],
    moment: datetime,
    stamp: str,
    dry_run: bool,
    min_change: float = 0.0,
) -> Change | None:
    judged = _judge(memory.type, memory.importance, memory.decay_score, memory.decay_start, half_lives, moment,
                    min_change)  # fmt: skip
    if judged is None:
        return None
    score, gone, days = judged
    change = Change(memory.id, memory.content, memory.decay_score, score, gone)
    if dry_run:
        return change
    if gone:
        store.memories.set_status(memory, "archived", stamp, decay_score=score)
        store.events.add(
            memory.id, "archived", stamp,
            before={"status": "active", "decay_score": change.before},
            after={"status": "archived", "decay_score": score},
            note=f"faded: {days:.0f} days since it was last accessed or learned", actor="decay",
        )  # fmt: skip
    else:
        store.memories.update(memory, stamp, decay_score=score)
        if change.notable:
            store.events.add(
                memory.id, "decayed", stamp,
                before={"decay_score": change.before}, after={"decay_score": score}, actor="decay",
            )  # fmt: skip
    return change


def touch(store: Store, refs: list[str], *, at: datetime | None = None) -> list[Memory]:
    """Remembering again: access +1, last access now, decay back to 1.0, an archived memory restored."""
    if not refs:
        raise InvalidInput("no memory id given", hint="engram touch ID [ID …]")
    stamp = to_iso(at or now())
    out: list[Memory] = []
    with store.write():
        pks = list(dict.fromkeys(records.resolve_pk(store, ref) for ref in refs))
        for pk in pks:
            memory = store.memories.load(pk, with_sources=False)
            changes: dict[str, Any] = {
                "access_count": memory.access_count + 1,
                "last_access_at": stamp,
                "decay_score": 1.0,
            }
            if memory.status == "archived":
                holder = None if memory.key is None else store.memories.keyed(memory.namespace, memory.key)
                if holder is not None:
                    raise InvalidInput(
                        f"memory {memory.short_id} held key '{memory.key}', which another memory of "
                        f"'{memory.namespace}' holds now",
                        hint=f"`engram get {memory.key} -n {memory.namespace}` shows it; `engram set` changes it",
                    )
                store.memories.set_status(memory, "active", stamp, **changes)
                store.events.add(
                    memory.id, "restored", stamp,
                    before={"status": "archived", "decay_score": memory.decay_score},
                    after={"status": "active", "decay_score": 1.0}, note="touched", actor="user",
                )  # fmt: skip
            else:
                store.memories.update(memory, stamp, **changes)
            out.append(store.memories.load(pk))
    return out
