"""Where hooks' failures go: a small log in engram's data directory that `engram doctor` reads.

A hook runs detached, with its output sent to /dev/null, so that it never slows or fails a
commit or a session. Without a trace somewhere, a hook that fails every time (a moved database,
a broken install) would fail silently forever. engram appends one line per failure here when it
runs with ``--hook NAME`` (the commands that `engram hooks install` writes pass it); the git hook
script also notes here when the engram it was installed with has gone.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from engram_cli.errors import InvalidInput
from engram_cli.serialize import json_meta
from engram_cli.timeutil import from_iso, iso_now

LOG_FILE = "hooks.log"
# The log is for the latest failures, not an archive: past this size the older half goes.
MAX_BYTES = 256 * 1024
MESSAGE_CHARS = 500


@dataclass(frozen=True)
class Failure:
    at: str
    hook: str
    code: int = field(metadata=json_meta(key="exit_code"))
    message: str


def _one_line(text: str) -> str:
    from engram_cli.lang import redact

    flat = " ".join(text.split())
    # An error may quote input; redact before clipping so no cut secret survives.
    flat, _ = redact.redact(flat)
    return flat if len(flat) <= MESSAGE_CHARS else flat[: MESSAGE_CHARS - 1] + "…"


def record(path: Path, hook: str, code: int, message: str) -> None:
    """Append one failure. Never raises: a log that cannot be written must not become the hook's failure."""
    line = f"{iso_now()}\t{_one_line(hook)}\t{code}\t{_one_line(message)}\n"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > MAX_BYTES:
            _trim(path)


def _trim(path: Path) -> None:
    data = path.read_bytes()
    keep = data[len(data) // 2 :]
    keep = keep[keep.find(b"\n") + 1 :]  # start at a whole line
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, keep)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read(path: Path, since: datetime | None = None) -> list[Failure]:
    """The failures in the log (at or after ``since``), oldest first; lines that do not parse are skipped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[Failure] = []
    for line in text.splitlines():
        parts = line.split("\t", 3)
        if len(parts) != 4:
            continue
        at, hook, code, message = parts
        try:
            when = from_iso(at)
            number = int(code)
        except (InvalidInput, ValueError):
            continue
        if since is None or when >= since:
            out.append(Failure(at, hook, number, message))
    return out
