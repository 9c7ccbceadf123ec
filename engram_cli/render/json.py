"""What scripts read: one JSON document on stdout, JSON Lines for exports, and the error envelope."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from engram_cli.render.console import note, out
from engram_cli.serialize import to_json


def document(value: Any, **options: Any) -> None:
    """``value``'s JSON form, indented, on stdout (``options`` go to the types that take them)."""
    out(json.dumps(to_json(value, **options), ensure_ascii=False, indent=2))


def error(kind: str, message: str, hint: str | None, exit_code: int) -> None:
    """The one shape of every failure under --json: {"error": {"type", "message", "hint", "exit_code"}}.

    ``kind`` is the error's class (``InvalidInput``, ``DatabaseDamaged`` …; ``UsageError`` for a wrong
    command line, ``Interrupted``, ``InternalError``); ``exit_code`` is the process's own.
    """
    document({"error": {"type": kind, "message": message, "hint": hint, "exit_code": exit_code}})


def export(records: Iterable[dict[str, Any]], path: str | None) -> None:
    """`engram export`: the records as JSON Lines on stdout, or into the file ``path`` (and how many, on stderr)."""
    count = jsonl(records, path)
    if path not in (None, "-"):
        note(f"exported {count} memories to {path}")


def jsonl(records: Iterable[dict[str, Any]], path: str | None) -> int:
    """Write one JSON object per line to stdout (no path, or ``-``) or to ``path``; returns the count.

    A file is written atomically and created 0600 (memories are private): an error at any point
    leaves no partial file and no temporary file behind.
    """
    rows = iter(records)
    try:
        return _write_jsonl(rows, path)
    finally:
        # A generator reading the store is closed now, even after a failed write, so its read
        # transaction ends while the store is open rather than whenever it is garbage-collected.
        close = getattr(rows, "close", None)
        if close is not None:
            close()


def _write_jsonl(rows: Iterator[dict[str, Any]], path: str | None) -> int:
    from engram_cli.atomic import replace_file
    from engram_cli.errors import InvalidInput

    count = 0
    if path is None or path == "-":
        for record in rows:
            sys.stdout.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
        sys.stdout.flush()
        return count
    try:
        with replace_file(path) as fh:
            for record in rows:
                fh.write((json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
                count += 1
    except OSError as exc:
        raise InvalidInput(
            f"cannot write {path}: {exc.strerror or exc}", hint="check that its directory exists and is writable"
        ) from exc
    return count
