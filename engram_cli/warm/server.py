"""The service's side of the warm path: listen on the private socket, run each hook's command, stop when idle.

One request at a time, in the main thread (the command's own time limit is a SIGALRM). Each request
runs the command the hook was given as that process would have: with the hook's stdin, its working
directory and the variables that decide the output (``locate.forwarded_env``), and its streams'
encodings; what the command writes is captured and sent back with its exit code.

The service stops itself when it has been idle for ``idle_seconds()`` (re-read as it waits: the
setting may change), when its database file is deleted or replaced, when engram's installed
version changes under it, or when its socket file is removed. A crash costs only speed: the hook
then runs the command itself, and the next service removes the stale socket.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Protocol

from engram_cli.warm import locate
from engram_cli.warm.client import peer_uid
from engram_cli.warm.protocol import ProtocolError, Reply, Request, decode_request, encode_reply, receive

log = logging.getLogger(__name__)

# How often an idle service looks at its clock, its database file and engram's version.
POLL_S = 1.0
# How much lower than the requests' the background job's CPU priority is (a nice increment).
BACKGROUND_NICE = 10
# A connected hook sends its whole request at once; one that does not is dropped.
REQUEST_TIMEOUT_S = 5.0

# Python decodes argv with surrogateescape: the CLI replaces such lone surrogates before parsing.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Command(Protocol):
    """The CLI's root command (a click command): what the service runs for each request."""

    def main(self, *, args: list[str], prog_name: str, standalone_mode: bool) -> Any: ...


class Captured:
    """The bytes a command wrote to its stdout and stderr."""

    def __init__(self, request: Request) -> None:
        self._out = io.BytesIO()
        self._err = io.BytesIO()
        self.stdin = io.TextIOWrapper(io.BytesIO(request.stdin), request.stdin_stream.encoding,
                                      request.stdin_stream.errors)  # fmt: skip
        self.stdout = io.TextIOWrapper(self._out, request.stdout_stream.encoding, request.stdout_stream.errors,
                                       write_through=True)  # fmt: skip
        self.stderr = io.TextIOWrapper(self._err, request.stderr_stream.encoding, request.stderr_stream.errors,
                                       write_through=True)  # fmt: skip

    def reply(self, code: int) -> Reply:
        self.stdout.flush()
        self.stderr.flush()
        return Reply(code, self._out.getvalue(), self._err.getvalue())


@contextlib.contextmanager
def borrowed(request: Request) -> Iterator[Captured]:
    """This process as the hook's process, for the duration of the block: its stdio, variables and directory."""
    captured = Captured(request)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_env = locate.forwarded_env(os.environ)
    saved_cwd = os.getcwd()
    try:
        for name in saved_env:
            if name not in request.env:
                del os.environ[name]
        os.environ.update(request.env)
        os.chdir(request.cwd)
        sys.stdin, sys.stdout, sys.stderr = captured.stdin, captured.stdout, captured.stderr
        yield captured
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for name in locate.forwarded_env(os.environ):
            if name not in saved_env:
                del os.environ[name]
        os.environ.update(saved_env)
        os.chdir(saved_cwd)


def exit_code(code: object) -> int:
    """The status a process ending with ``SystemExit(code)`` has (a message is printed and means 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def run_command(command: Command, request: Request) -> Reply:
    """Run the CLI for ``request`` as the hook's own process would, capturing its output and exit code."""
    # catch_warnings: a warning shown once per process is shown again for each request, as in a fresh process.
    with borrowed(request) as captured, warnings.catch_warnings():
        argv = [_LONE_SURROGATE.sub("\ufffd", arg) for arg in request.argv]
        try:
            command.main(args=argv, prog_name=request.prog_name, standalone_mode=True)
            code = 0
        except SystemExit as exc:
            code = exit_code(exc.code)
        return captured.reply(code)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _version_stamp() -> tuple[int, int, int] | None:
    try:
        info = os.stat(locate.version_file())
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


class _Stop(BaseException):
    """SIGTERM: not an Exception, so that no handler of the command's mistakes takes it for one."""


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise _Stop("terminated")


def take_lock(path: str, lock_fd: int | None) -> int | None:
    """The locked descriptor of the service's lock (inherited from its starter, or taken now); None if taken."""
    import fcntl

    fd = lock_fd
    if fd is None:
        try:
            fd = os.open(locate.lock_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
    try:
        # Taking again a lock this open file already holds succeeds; another holder's fails.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        with contextlib.suppress(OSError):  # a --lock-fd that was never open
            os.close(fd)
        return None
    os.set_inheritable(fd, False)
    return fd


def serve(
    path: str,
    db: str,
    answer: Callable[[Request], Reply],
    idle_seconds: Callable[[], float],
    *,
    lock_fd: int | None = None,
    warm_up: Callable[[], None] | None = None,
    background: Callable[[], None] | None = None,
) -> str:
    """Answer requests on the socket at ``path`` until a reason to stop; returns the reason.

    ``db`` is the database file it serves (its deletion or replacement stops the service);
    ``answer`` turns a request into a reply; ``warm_up`` loads what the first request would, before
    listening; ``background`` runs in a thread of its own while the service listens (once; a failure
    is logged and the service goes on).
    """
    if not locate.private_dir(os.path.dirname(path), create=True):
        return f"{os.path.dirname(path)} is not a private directory"
    lock = take_lock(path, lock_fd)
    if lock is None:
        return "another service holds the lock"
    listener: socket.socket | None = None
    mine: tuple[int, int] | None = None
    # SIGTERM ends the loop cleanly, socket removed (signals reach the main thread only).
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_term) if main_thread else None
    try:
        database = _identity(db)
        version = _version_stamp()
        if database is None:
            return "no database"
        if idle_seconds() <= 0:
            return "the warm path is off (hooks.warm_idle_s = 0)"
        if warm_up is not None:
            log.info("warming up")
            warm_up()
        if background is not None:
            # A daemon: a service that stops does not wait for it (what it writes is renamed into place whole).
            threading.Thread(target=_in_background, args=(background,), name="engram-background", daemon=True).start()
        # The lock is ours, so a socket file left here is a dead service's.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(mask)
        os.chmod(path, 0o600)
        mine = _identity(path)
        listener.listen(16)
        log.info("listening on %s", path)
        listener.settimeout(POLL_S)
        last = time.monotonic()
        while True:
            limit = idle_seconds()
            if limit <= 0 or time.monotonic() - last >= limit:
                return "idle"
            if _identity(db) != database:
                return "the database file was deleted or replaced"
            if _version_stamp() != version:
                return "engram was upgraded"
            if _identity(path) != mine:
                return "the socket file was removed"
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                _handle(conn, answer)
            last = time.monotonic()
    except _Stop as stop:
        return str(stop)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        if listener is not None:
            listener.close()
            if _identity(path) == mine:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        os.close(lock)


def _in_background(job: Callable[[], None]) -> None:
    # Linux gives each thread its own nice value: the requests come first on a busy machine.
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    try:
        job()
    except Exception:
        # Only speed is lost: the requests go on without what it would have made.
        log.exception("the background job failed")
    else:
        log.info("the background job is done")


def _handle(conn: socket.socket, answer: Callable[[Request], Reply]) -> None:
    """One connection: check the peer, read the request, send the reply. A failure sends nothing."""
    try:
        if peer_uid(conn) != os.getuid():
            log.warning("refused a connection from another user")
            return
        conn.settimeout(REQUEST_TIMEOUT_S)
        request = decode_request(receive(conn))
    except (OSError, ProtocolError) as exc:
        log.info("dropped a request: %s", exc)
        return
    if request.deadline and time.time() > request.deadline:
        log.info("dropped a request its hook no longer waits for")
        return
    try:
        reply = answer(request)
    except Exception:
        # The hook gets no reply and runs the command itself, which reports whatever this was.
        log.exception("a request failed")
        return
    with contextlib.suppress(OSError):
        conn.sendall(encode_reply(reply))
