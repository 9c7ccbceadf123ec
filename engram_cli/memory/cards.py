"""The card a new session starts with: what matters most now in the project and the person's scope.

No query: at session start nobody has asked anything yet. Each active memory of the scopes gets a
strength, importance x decay x recency, and the strongest go on the card:

- importance: how much it matters, as stored (and as raised by access and merges);
- decay: 0.5 ^ (days since it was learned or last used / its type's half-life), with decay's own
  floors, computed now rather than read from the column the nightly ``decay`` last wrote, so a
  store nobody runs ``decay`` on ranks the same;
- recency: 0.5 ^ (days since it happened / RECENCY_HALF_LIFE_DAYS), never below a floor that
  depends on the type. What happened last week (an episode) is worth more than what happened
  last year; a fact or procedure learned long ago is still true, so its floor is high.

Both scopes compete on strength, but the person's scope takes at most GLOBAL_SHARE of the places
while the project has memories to fill them, so a large global store cannot push the project off
its own card. Near-copies (most words shared) keep only the strongest one.
A memory faded so far that the next ``decay`` would archive it is left off. Reading a card is not
an access: nothing is bumped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from engram_cli.lang import text as textmod
from engram_cli.memory.decay import archives, decay_score
from engram_cli.memory.model import Memory
from engram_cli.store.db import Store
from engram_cli.timeutil import from_iso

RECENCY_HALF_LIFE_DAYS = 30.0
RECENCY_FLOOR = {"semantic": 0.6, "procedural": 0.6, "episodic": 0.2, "working": 0.2}
# How many of the strongest memories of each scope are read before ranking: the stored
# importance x decay_score orders them well enough to find the top few among thousands.
POOL = 200
GLOBAL_SHARE = 0.5
COPY_OVERLAP = 0.8


class Carded(Protocol):
    """What a card shows of a memory: a recall hit, or an entry of a session's card (no relevance)."""

    @property
    def memory(self) -> Memory: ...

    @property
    def scope(self) -> str: ...

    @property
    def relevance(self) -> float | None: ...


@dataclass
class CardEntry:
    """One memory on a session's card and why it is there."""

    memory: Memory
    strength: float
    factors: dict[str, float]
    scope: str = "other"  # seen from the session's project: "project", "global" or "other" (the facade sets it)

    @property
    def relevance(self) -> float | None:
        """None: no question chose it, so there is no chance of being relevant to speak of."""
        return None


def strength(memory: Memory, moment: datetime, half_lives: Mapping[str, float]) -> tuple[float, dict[str, float]]:
    """importance x decay x recency of ``memory`` at ``moment``, with the three factors."""
    unused_days = max(0.0, (moment - from_iso(memory.decay_start)).total_seconds() / 86400)
    age_days = max(0.0, (moment - from_iso(memory.occurred_at)).total_seconds() / 86400)
    decay = decay_score(memory.importance, unused_days, float(half_lives[memory.type]))
    recency = max(RECENCY_FLOOR.get(memory.type, 0.2), 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS))
    factors = {"importance": memory.importance, "decay": decay, "recency": recency}
    return memory.importance * decay * recency, factors


def _copy_of(terms: set[str], kept: Sequence[set[str]]) -> bool:
    return any(terms and other and len(terms & other) / len(terms | other) >= COPY_OVERLAP for other in kept)


def session_card(
    store: Store,
    namespaces: Sequence[str],
    *,
    k: int,
    moment: datetime,
    half_lives: Mapping[str, float],
    global_namespace: str | None = None,
) -> list[CardEntry]:
    """The ``k`` strongest memories of ``namespaces`` for a new session, strongest first.

    ``global_namespace`` (when among ``namespaces``) is held to GLOBAL_SHARE of the places while the
    others have memories to fill them.
    """
    pks: list[int] = []
    for namespace in dict.fromkeys(namespaces):
        pks.extend(store.memories.strongest(namespace, POOL))
    loaded = store.memories.load_many(pks)
    entries = [CardEntry(m, *strength(m, moment, half_lives)) for m in loaded.values()]
    # What the next `decay` would archive (faded to the floor) has no place at the start of a session.
    live = [e for e in entries if not archives(e.memory.importance, e.factors["decay"])]
    ranked = sorted(live, key=lambda e: (-e.strength, e.memory.pk))
    global_cap = k if global_namespace is None else max(1, int(k * GLOBAL_SHARE))
    chosen: list[CardEntry] = []
    kept_terms: list[set[str]] = []

    def take(entry: CardEntry) -> bool:
        terms = set(textmod.query_terms(entry.memory.content))
        if _copy_of(terms, kept_terms):
            return False
        chosen.append(entry)
        kept_terms.append(terms)
        return True

    # First with the person's scope held to its share, then (places left: the project had too
    # little) without, so an empty place never stands beside a memory that could fill it.
    n_global = 0
    for entry in ranked:
        if len(chosen) >= k:
            break
        is_global = entry.memory.namespace == global_namespace
        if is_global and n_global >= global_cap:
            continue
        if take(entry) and is_global:
            n_global += 1
    for entry in ranked:
        if len(chosen) >= k:
            break
        if all(entry is not c for c in chosen):
            take(entry)
    chosen.sort(key=lambda e: (-e.strength, e.memory.pk))
    return chosen
