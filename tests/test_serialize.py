"""The one rule that turns result objects into JSON, and the declarations that bend it."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from engram_cli.serialize import json_meta, to_json


@dataclass
class Inner:
    name: str
    where: Path | None = None


@dataclass
class Plain:
    count: int
    ratio: float
    inner: Inner
    spans: list[tuple[int, int | None]] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)


@dataclass
class Declared:
    json_keys: ClassVar[tuple[str, ...]] = ("id", "score", "double")

    pk: int
    id: str
    score: float = field(metadata=json_meta(key="relevance", digits=3))
    secret: str = field(default="", metadata=json_meta(omit=True))

    @property
    def double(self) -> float:
        return self.score * 2


@dataclass
class Omitting:
    shown: int
    hidden: int = field(default=0, metadata=json_meta(omit=True))


@dataclass
class Shaped:
    value: int

    def json_form(self, *, verbose: bool = False, **options: Any) -> dict[str, Any]:
        return {"value": self.value, **({"why": "asked"} if verbose else {})}


def test_a_dataclass_is_its_fields_in_order_with_values_made_plain() -> None:
    value = Plain(3, 0.5, Inner("x", Path("/tmp/a")), [(1, None)], Counter({"b": 2}))
    assert to_json(value) == {
        "count": 3,
        "ratio": 0.5,
        "inner": {"name": "x", "where": "/tmp/a"},
        "spans": [[1, None]],
        "kinds": {"b": 2},
    }
    assert json.loads(json.dumps(to_json(value))) == to_json(value)


def test_declarations_rename_round_order_compute_and_omit() -> None:
    data = to_json(Declared(pk=7, id="m1", score=0.123456, secret="s"))
    assert list(data.items()) == [("id", "m1"), ("relevance", 0.123), ("double", 0.246912)]
    assert to_json(Omitting(1, 2)) == {"shown": 1}


def test_a_json_form_is_used_as_it_is_and_options_reach_it_inside_lists() -> None:
    assert to_json([Shaped(1)]) == [{"value": 1}]
    assert to_json({"items": [Shaped(2)]}, verbose=True) == {"items": [{"value": 2, "why": "asked"}]}


def test_something_without_a_json_form_is_refused_rather_than_guessed() -> None:
    with pytest.raises(TypeError, match="object has no JSON form"):
        to_json(object())
