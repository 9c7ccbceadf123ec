"""Recall beyond plain fusion: near-copies do not crowd the top k."""

from __future__ import annotations

from typing import Any


def test_near_copies_go_behind_distinct_hits(engram: Any) -> None:
    first = engram.add("The user prefers tabs over spaces for indentation.", no_merge=True).memory
    engram.add("The user prefers tabs over spaces for indentation!", no_merge=True)
    engram.add("The user prefers tabs over spaces for indentation", no_merge=True)
    other = engram.add("Indentation in the Makefile must use tabs, never spaces", no_merge=True).memory
    ids = [h.memory.id for h in engram.recall("tabs or spaces for indentation?", k=2, bump=False)]
    assert first.id in ids and other.id in ids
    engram.config.values["recall"]["diversify"] = False
    plain = [h.memory.id for h in engram.recall("tabs or spaces for indentation?", k=2, bump=False)]
    assert other.id not in plain  # without the check, two copies fill the top two
