"""A per-database lock file for maintenance runs that must not overlap (ingest, compact).

SQLite's own locking keeps every transaction safe; this lock only stops two long
maintenance runs from planning against the same rows. An OS advisory lock (flock) is used
because it disappears with the process: an ingest killed by cron's timeout or by SIGKILL
never leaves a stale lock behind, whatever the file still says.

The lock belongs to the open file, though, not to the process: a child that inherited the
descriptor would keep it after its parent died. The descriptor is therefore never inherited
(close-on-exec), and a busy message says when the process recorded in the file is gone, so
that such a leftover holder can be found and ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from engram_cli.errors import BusyError, StoreError
from engram_cli.timeutil import iso_now


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def lock_path(db_path: Path, task: str) -> Path:
    return db_path.with_name(f"{db_path.name}.{task}.lock")


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (on Windows, assumed: there is no cheap check)."""
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return True
    return True


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _holder(fd: int) -> tuple[int | None, str | None]:
    """The pid and start time the holder wrote, when the file says (older versions wrote plain text)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 400).decode("utf-8", "replace")
        data = json.loads(raw)
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    pid, started = data.get("pid"), data.get("started")
    return (
        pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        started if isinstance(started, str) else None,
    )


def _busy(db_path: Path, task: str, fd: int) -> BusyError:
    path = lock_path(db_path, task)
    pid, started = _holder(fd)
    since = None
    if started:
        with contextlib.suppress(ValueError):
            moment = datetime.fromisoformat(started.replace("Z", "+00:00"))
            since = _duration((datetime.now(UTC) - moment).total_seconds())
    if pid is not None and not _alive(pid):
        return BusyError(
            f"the `engram {task}` lock on {db_path} is held, but the process that took it (pid {pid}) no longer "
            "exists: a process that inherited its lock file is holding it",
            hint=f"find the holder with `fuser -v {path}` (or `lsof {path}`) and end it; "
            f"or, once no engram is running, delete {path}",
        )
    who = f"pid {pid}" if pid is not None else "another process"
    return BusyError(
        f"another `engram {task}` is running on {db_path} ({who}" + (f", running for {since})" if since else ")"),
        hint=f"it finishes on its own; run `engram {task}` again later",
    )


@contextlib.contextmanager
def exclusive(db_path: Path, task: str) -> Iterator[None]:
    """Hold ``<db>.<task>.lock`` for the duration; raise BusyError at once if another process holds it."""
    path = lock_path(db_path, task)
    try:
        # Close-on-exec: a child (an extract.command, anything a library starts) must not keep the lock alive.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise StoreError(
            f"cannot create the lock file {path}: {exc.strerror}",
            hint="make the database's directory writable, or move the database with --db",
        ) from exc
    try:
        os.set_inheritable(fd, False)
        if not _try_lock(fd):
            raise _busy(db_path, task, fd)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps({"pid": os.getpid(), "started": iso_now(), "task": task}).encode())
        yield
    finally:
        os.close(fd)
