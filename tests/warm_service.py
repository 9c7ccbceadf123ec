"""Shared pieces of the warm-service tests (tests/test_warm.py, tests/test_index_build.py): the service of
``engram_cli.warm.server`` in a thread of the test, its socket, and waiting on it without timing anything."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from engram_cli.warm import locate, server
from engram_cli.warm.protocol import Reply, Request


def socket_for(db: Path) -> str:
    """The socket a service of the database at ``db`` listens on (under XDG_RUNTIME_DIR)."""
    path = locate.socket_path(locate.database(str(db), os.environ), os.environ)
    assert path is not None
    return path


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether ``condition`` holds within ``seconds``: a bound on waiting on a busy machine, not a timing."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def listening(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


@contextlib.contextmanager
def serving(
    db: Path,
    answer: Callable[[Request], Reply],
    *,
    idle: float = 60.0,
    background: Callable[[], None] | None = None,
    within: float = 10.0,
) -> Iterator[tuple[str, list[str]]]:
    """``server.serve`` in a thread, answering with ``answer``; yields the socket path and, once it has stopped,
    why. ``within`` bounds the wait for it to listen and, at the end, to stop."""
    path = socket_for(db)
    stopped: list[str] = []
    thread = threading.Thread(
        target=lambda: stopped.append(server.serve(path, str(db), answer, lambda: idle, background=background))
    )
    thread.start()
    try:
        assert wait_for(lambda: listening(path) or bool(stopped), within), stopped
        yield path, stopped
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a removed socket file stops the service
        thread.join(within)
