"""Atomic file writes: whoever reads the file sees the old version or the new one, never a mix.

The one mechanism engram uses to replace a file it writes (exports, config.toml, hooks and
settings files): a temporary file beside the target, flushed to disk, then renamed over it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

NEW_FILE_MODE = 0o600


@contextlib.contextmanager
def replace_file(path: str | os.PathLike[str], *, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary handle whose bytes replace ``path`` in one rename when the block ends without an error.

    ``mode`` forces the file's permissions; without it a new file is 0600 (whatever the umask) and
    an existing one keeps its mode. A symlink is followed, so the link stays and its target is
    replaced. Something that is not a regular file (a FIFO, /dev/stdout) is written in place:
    renaming over it would put a plain file where the pipe or device was. On any error, or an
    interrupt, the temporary file is removed and ``path`` is left as it was.
    """
    target = Path(os.path.realpath(path))
    try:
        existing: os.stat_result | None = target.stat()
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(target, "wb") as handle:
            yield handle
        return
    if mode is None:
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (see :func:`replace_file` for modes, symlinks and errors)."""
    with replace_file(path, mode=mode) as handle:
        handle.write(data)
