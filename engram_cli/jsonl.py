"""The one reader of JSON Lines: each line an object, or the reason it is not one.

Logs, export files, evaluation datasets and the output of ``extract.command`` are all one
JSON object per line. A line that is not one is never an exception here: it comes back as a
:class:`Problem` with a short, stable reason, and each caller words it for its own reader
(a count under that reason for an importer, ``line N: …`` for ``engram import``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

NOT_UTF8 = "invalid UTF-8"
BINARY = "binary data"
NOT_JSON = "invalid JSON"
TOO_DEEP = "nested too deeply"
NOT_OBJECT = "not an object"


@dataclass(frozen=True)
class Problem:
    """Why a line holds no usable object."""

    reason: str  # NOT_UTF8 | BINARY | NOT_JSON | TOO_DEEP | NOT_OBJECT
    detail: str = ""  # the parser's own words, for NOT_JSON
    column: int | None = None  # where the parser stopped, for NOT_JSON when it says


def decode(raw: bytes) -> str | Problem:
    """A raw line as text; NUL bytes mean the file is not text, whatever its encoding."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Problem(NOT_UTF8)
    if "\x00" in text:
        return Problem(BINARY)
    return text


def parse(text: str, *, max_depth: int | None = None) -> dict[str, Any] | Problem:
    """The JSON object on one line.

    JSON nested deeper than Python's parser goes is TOO_DEEP, and so is JSON nesting objects
    and lists more than ``max_depth`` levels when a limit is given (checked before the object
    is, so a deep list is too deep rather than not an object).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        return Problem(TOO_DEEP)
    except json.JSONDecodeError as exc:
        return Problem(NOT_JSON, exc.msg, exc.colno)
    except ValueError as exc:  # valid JSON Python will not convert, such as an integer of 5,000 digits
        return Problem(NOT_JSON, str(exc))
    if max_depth is not None and deeper_than(value, max_depth):
        return Problem(TOO_DEEP)
    if not isinstance(value, dict):
        return Problem(NOT_OBJECT)
    return value


def read(lines: Iterable[str], *, max_depth: int | None = None) -> Iterator[tuple[int, dict[str, Any] | Problem]]:
    """(line number, object or problem) for every line that is not blank; numbers count the blank lines too."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, parse(line, max_depth=max_depth)


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and lists more than ``limit`` levels (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False
