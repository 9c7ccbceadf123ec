"""The hook's side of the warm path: ask the service, or start it for next time.

Every failure (no socket, a dead or slow service, a reply that does not parse, a socket or directory
that another user could have made) is None from :func:`ask`: the hook then runs the command itself.
"""

from __future__ import annotations

# _socket, the C module under socket: the hook needs none of what the Python module adds (enums,
# selectors), which costs it ~25 ms on every prompt.
import _socket
import os
import struct
import sys
import time

from engram_cli.warm import locate
from engram_cli.warm.protocol import ProtocolError, Reply, Request, decode_reply, encode_request, receive

# A live service accepts at once; waiting longer only delays the cold path.
CONNECT_TIMEOUT_S = 0.05
# Under hooks.prompt_time_limit_s's default (5 s): the service applies the configured limit itself, so
# this only guards against a service that hangs (stopped, swapping), leaving time for the cold path.
READ_TIMEOUT_S = 4.0

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer_uid(sock: _socket.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket (Linux's SO_PEERCRED)."""
    _pid, uid, _gid = _UCRED.unpack(sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _UCRED.size))
    return int(uid)


def ask(path: str, request: Request, *, read_timeout: float = READ_TIMEOUT_S) -> Reply | None:
    """The service's reply to ``request``, or None when it cannot give one (for whatever reason)."""
    if not locate.private_dir(os.path.dirname(path), create=False):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(path)
        # The directory is private, but the peer is checked anyway: the prompt goes only to this user.
        if peer_uid(sock) != os.getuid():
            return None
        sock.settimeout(read_timeout)
        request.deadline = time.time() + read_timeout
        sock.sendall(encode_request(request))
        sock.shutdown(_socket.SHUT_WR)
        return decode_reply(receive(sock))
    except (OSError, ProtocolError):
        return None
    finally:
        sock.close()


def start_service(db: str | None, path: str) -> bool:
    """Start the service for ``db`` in the background, unless one runs or is starting; True if started.

    The lock file is held by whoever starts the service and then by the service for as long as it
    lives (the child inherits the locked descriptor), so concurrent hooks start it once.
    """
    import fcntl
    import subprocess

    if not locate.private_dir(os.path.dirname(path), create=True):
        return False
    try:
        fd = os.open(locate.lock_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a service runs, or another hook is starting one
        command = [sys.executable, "-m", "engram_cli"]
        if db is not None:
            command += ["--db", db]
        command += ["hooks", "serve", "--lock-fd", str(fd)]
        try:
            subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(fd,), start_new_session=True, cwd="/",
                # os.environ, not the C environment a library may have changed behind it (readline sets
                # COLUMNS and LINES): the service must see the variables its socket's name was made from.
                env=dict(os.environ),
            )  # fmt: skip
        except OSError:
            return False
        return True
    finally:
        os.close(fd)
