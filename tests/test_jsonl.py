"""The one JSON Lines reader: every line an object or a stable reason, never an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram_cli import jsonl

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@given(st.lists(st.one_of(objects, st.just("")), max_size=8))
def test_objects_come_back_numbered_as_lines_and_blank_lines_are_passed_over(rows: list[Any]) -> None:
    lines = ["  \t" if row == "" else json.dumps(row, ensure_ascii=False) for row in rows]
    expected = [(n, row) for n, row in enumerate(rows, start=1) if row != ""]
    assert list(jsonl.read(lines)) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"content": "caf\xe9"}', jsonl.NOT_UTF8),
        (b'{"content": "a\x00b"}', jsonl.BINARY),
    ],
)
def test_bytes_that_are_not_text_say_why(raw: bytes, reason: str) -> None:
    assert jsonl.decode(raw) == jsonl.Problem(reason)


def test_utf8_text_is_decoded_as_it_is() -> None:
    assert jsonl.decode('{"content": "部署 ✓"}\n'.encode()) == '{"content": "部署 ✓"}\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1', jsonl.Problem(jsonl.NOT_JSON, "Expecting ',' delimiter", 8)),
        ("not json", jsonl.Problem(jsonl.NOT_JSON, "Expecting value", 1)),
        ("[1, 2]", jsonl.Problem(jsonl.NOT_OBJECT)),
        ('"text"', jsonl.Problem(jsonl.NOT_OBJECT)),
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", jsonl.Problem(jsonl.TOO_DEEP)),
    ],
)
def test_a_line_that_is_not_an_object_says_why(text: str, expected: jsonl.Problem) -> None:
    assert jsonl.parse(text) == expected


def test_json_python_will_not_convert_is_not_json_rather_than_an_exception() -> None:
    problem = jsonl.parse('{"n": ' + "7" * 5000 + "}")
    assert isinstance(problem, jsonl.Problem) and problem.reason == jsonl.NOT_JSON
    assert "digits" in problem.detail and problem.column is None


def test_a_depth_limit_is_checked_before_the_object_and_without_recursion() -> None:
    assert jsonl.parse('{"a": [[1]]}', max_depth=3) == {"a": [[1]]}
    assert jsonl.parse('{"a": [[[1]]]}', max_depth=3) == jsonl.Problem(jsonl.TOO_DEEP)
    assert jsonl.parse("[[[[1]]]]", max_depth=3) == jsonl.Problem(jsonl.TOO_DEEP)  # too deep, not "not an object"
    assert jsonl.deeper_than([[[]]] * 2, 3) is False
    deep: Any = 0
    for _ in range(50_000):  # deeper than Python would recurse: the check walks a stack of its own
        deep = [deep]
    assert jsonl.deeper_than(deep, 1000) is True


def test_read_passes_the_depth_limit_to_every_line() -> None:
    found = list(jsonl.read(['{"a": {"b": {}}}', "", '{"a": 1}'], max_depth=2))
    assert found == [(1, jsonl.Problem(jsonl.TOO_DEEP)), (3, {"a": 1})]
