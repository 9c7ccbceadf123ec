"""How the loader keeps a session's conversation as evidence: one path for every source.

Planned and embedded before the file's transaction (reads only), written inside it with the file's
memories, so a file's turns, their links and its cursor commit together or not at all. The turns come
from messages the loader has already scrubbed and are redacted once more on the way in, as the
memories drawn from them are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engram_cli.ingest.base import Session
from engram_cli.ingest.extract import Item
from engram_cli.ingest.turns import TurnText
from engram_cli.lang import redact
from engram_cli.lang import text as textmod
from engram_cli.memory import evidence as evidencemod
from engram_cli.store.db import Store

# Distinct terms an item must share with a turn to count as made from it, when no message id ties them.
MIN_SHARED_TERMS = 2


@dataclass
class _New:
    namespace: str
    turn: TurnText
    seq: int
    passage: str


@dataclass
class _Refresh:
    """A stored turn whose next neighbour has just arrived: its passage (and vector) gain it."""

    pk: int
    namespace: str
    kind: str
    passage: str


@dataclass
class SessionTurns:
    """What one session of a file adds to the evidence."""

    source: str
    session: str
    namespace: str
    turns: list[TurnText]
    new: list[_New] = field(default_factory=list)
    refresh: list[_Refresh] = field(default_factory=list)
    pks: dict[str, list[int]] = field(default_factory=dict)  # message id -> its turns' pks (after writing)


def plan(store: Store, source: str, session: Session, namespace: str, turns: list[TurnText]) -> SessionTurns:
    """Which of ``turns`` are new, their passages, and the stored turn whose context they extend."""
    planned = SessionTurns(source, session.key, namespace, turns)
    last = store.evidence.last_of_session(source, session.key)
    seq = 0 if last is None else last[1]
    fresh: list[TurnText] = []
    for turn in turns:
        if store.evidence.pk_of(source, session.key, turn.key) is None and turn.key not in {t.key for t in fresh}:
            fresh.append(turn)
    texts = [t.content for t in fresh]
    for i, turn in enumerate(fresh):
        before = texts[i - 1] if i else ("" if last is None else last[2])
        after = texts[i + 1] if i + 1 < len(texts) else ""
        seq += 1
        planned.new.append(_New(namespace, turn, seq, evidencemod.passage(before, turn.content, after)))
    if last is not None and fresh:
        stored = store.evidence.load_many([last[0]])[last[0]]
        before, _ = store.evidence.neighbours(stored)
        planned.refresh.append(_Refresh(last[0], stored.namespace, stored.kind,
                                        evidencemod.passage(before, stored.content, texts[0])))  # fmt: skip
    return planned


def passages(plans: Sequence[SessionTurns]) -> list[str]:
    """Every passage the plans need embedded, in the order :func:`write` takes their vectors."""
    return [n.passage for p in plans for n in p.new] + [r.passage for p in plans for r in p.refresh]


def write(store: Store, plans: Sequence[SessionTurns], vectors: np.ndarray, model_id: str, at: str, *,
          contact: bool) -> int:  # fmt: skip
    """Store the planned turns (inside the caller's transaction); returns how many were new."""
    rows = iter(vectors)
    written = 0
    for p in plans:
        for new in p.new:
            content = redact.redact(textmod.clean(new.turn.content), contact=contact)[0]
            pk = store.evidence.insert(
                namespace=new.namespace, source=p.source, session=p.session, turn_key=new.turn.key, seq=new.seq,
                kind=new.turn.kind, content=content, content_hash=textmod.content_hash(content),
                occurred_at=new.turn.at, learned_at=at,
            )  # fmt: skip
            store.evidence.put_terms(pk, textmod.index_text(content))
            store.evidence.put_vector(model_id, pk, next(rows), namespace=new.namespace, kind=new.turn.kind)
            written += 1
    for p in plans:
        for refresh in p.refresh:
            store.evidence.put_vector(model_id, refresh.pk, next(rows), namespace=refresh.namespace, kind=refresh.kind)
    for p in plans:
        for turn in p.turns:
            found = store.evidence.pk_of(p.source, p.session, turn.key)
            if found is not None:
                p.pks.setdefault(turn.message_id, []).append(found)
    return written


def link(store: Store, planned: SessionTurns, item: Item, memory_pk: int) -> None:
    """Tie a memory to the turns it was made from: its message's, all of this part of the session for the
    episode, else the turn sharing most of its words."""
    if item.type == "episodic" or item.key == "episode":
        store.evidence.link([pk for pks in planned.pks.values() for pk in pks], memory_pk)
        return
    if item.message_id is not None and item.message_id in planned.pks:
        store.evidence.link(planned.pks[item.message_id], memory_pk)
        return
    words = set(textmod.query_terms(item.content))
    best: tuple[int, int] | None = None
    for turn in planned.turns:
        shared = len(words & set(textmod.query_terms(turn.content)))
        pks = planned.pks.get(turn.message_id)
        if pks and shared >= MIN_SHARED_TERMS and (best is None or shared > best[0]):
            best = (shared, pks[0])
    if best is not None:
        store.evidence.link([best[1]], memory_pk)
