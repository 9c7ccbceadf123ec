"""The file system as importers meet it: only regular files are ever opened, and listing never trips.

A log folder can hold anything. Opening a FIFO for reading waits for a writer that may never
come (with the ingest lock held, so every later hook and cron run gives up); a socket or a
device is no log either; a symlink to itself or a ring of symlinks makes ``Path.resolve``
raise; a symlink can point at a directory or at nothing. Importers list candidates by name
with :func:`candidate` and :func:`unique`, the loader skips whatever :func:`irregular` says is
not a regular file (with a note), and every read goes through :func:`open_binary`, which opens
without blocking and checks the opened file itself, so a file swapped for a FIFO between the
check and the read fails instead of hanging.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

# Flags that keep an open from blocking (a FIFO), from taking a terminal, and from leaking into
# child processes. Windows has none of the first three and needs binary mode said out loud.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device, directory or broken link: nothing an importer reads."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def irregular(path: Path) -> str | None:
    """None when ``path`` is a regular file (symlinks followed); else what it is instead, in a few words."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        if os.path.islink(path):
            return "a dangling symlink"
        return "missing" if exc.errno == errno.ENOENT else (exc.strerror or "unreadable").lower()
    except ValueError:  # a NUL byte in the name
        return "an impossible file name"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode) and os.path.islink(path):
        return "a symlink to a directory"
    return _kind(mode)


def candidate(path: Path) -> bool:
    """A listing leaf worth handing to the loader: a file, or anything in a file's place but a real directory.

    FIFOs, sockets, devices, looping, dangling and directory symlinks are kept so that the
    loader can say it skipped them; a real directory that happens to match a pattern is not a
    file anyone put there as a log.
    """
    try:
        return os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path))
    except ValueError:
        return False


def glob(root: Path, pattern: str) -> list[Path]:
    """The :func:`candidate` entries matching ``pattern`` under ``root``, sorted.

    ``Path.glob`` drops a looping or dangling link whose name is spelled out in the pattern
    (``*/events.jsonl``), while ``*.jsonl`` lists it: such names are looked up one by one here,
    so that the loader can say it skipped them either way.
    """
    head, _, last = pattern.rpartition("/")
    if any(c in last for c in "*?["):
        return sorted(p for p in root.glob(pattern) if candidate(p))
    parents = root.glob(head) if head else iter([root])
    return sorted(p / last for p in parents if p.is_dir() and candidate(p / last))


def unique(paths: Iterable[Path], *, resolved: bool = False) -> list[Path]:
    """``paths`` without the ones that are the same file under another name (a linked directory).

    Never raises on symlink loops, unlike ``Path.resolve`` before Python 3.13. With ``resolved``
    the real paths are returned for regular files (the importers that always did so keep their
    cursor keys); anything else keeps the name it was found under, which is what a note shows.
    """
    found: dict[str, Path] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real not in found:
            found[real] = Path(real) if resolved and irregular(path) is None else path
    return list(found.values())


def children(directory: Path) -> list[Path]:
    """The entries of a directory, sorted; [] when it cannot be listed."""
    try:
        return sorted(directory.iterdir())
    except OSError:
        return []


def open_binary(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes, only if it is a regular file; never waits on a FIFO."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"{_kind(mode)}, not a regular file", str(path))
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    return handle


def read_bytes(path: Path) -> bytes:
    """The whole content of a regular file (see :func:`open_binary`)."""
    with open_binary(path) as fh:
        return fh.read()
