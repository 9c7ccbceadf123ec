"""A per-database lock file for maintenance runs that must not overlap (compact).

SQLite's own locking keeps every transaction safe; this lock only stops two long
maintenance runs from planning against the same rows. An OS advisory lock is used
because it disappears with the process: a compact killed by cron's timeout never
leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
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


@contextlib.contextmanager
def exclusive(db_path: Path, task: str) -> Iterator[None]:
    """Hold ``<db>.<task>.lock`` for the duration; raise BusyError at once if another process holds it."""
    path = db_path.with_name(f"{db_path.name}.{task}.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreError(
            f"cannot create the lock file {path}: {exc.strerror}",
            hint="make the database's directory writable, or move the database with --db",
        ) from exc
    try:
        if not _try_lock(fd):
            os.lseek(fd, 0, os.SEEK_SET)
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
            raise BusyError(
                f"another `engram {task}` is running on {db_path} ({holder})",
                hint=f"it finishes on its own; run `engram {task}` again later",
            )
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"pid {os.getpid()}, started {iso_now()}".encode())
        yield
    finally:
        os.close(fd)
