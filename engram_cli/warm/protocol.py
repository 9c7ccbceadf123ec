"""The warm path's wire format: one request and one reply per connection, each a list of byte strings.

A message is ``MAGIC``, its length (4 bytes, big-endian), then its items, each its length (4 bytes)
and its bytes. Text travels as UTF-8 with lone surrogates passed through, so an argument or a path
that was not valid UTF-8 arrives exactly as the hook saw it. Anything else (a wrong magic, a length
past ``MAX_MESSAGE``, a short read) is :class:`ProtocolError`, and the hook runs the command itself.
"""

from __future__ import annotations

import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket

MAGIC = b"ENGRAMW\x01"
MAX_MESSAGE = 64 * 1024 * 1024
_LENGTH = struct.Struct(">I")


class ProtocolError(Exception):
    """The other side sent something that is not a message of this protocol (or sent nothing in time)."""


class Stream:
    """How the hook's own stream encodes text, so that the service writes the same bytes."""

    __slots__ = ("encoding", "errors")

    def __init__(self, encoding: str, errors: str) -> None:
        self.encoding = encoding
        self.errors = errors


class Request:
    """One run of the hook's command: its arguments, where and with what it runs, and its stdin.

    (Plain classes, not dataclasses: the hook imports this module, and dataclasses costs it ~20 ms.)
    """

    __slots__ = (
        "argv", "cwd", "deadline", "env", "prog_name", "stderr_stream", "stdin", "stdin_stream", "stdout_stream",
    )  # fmt: skip

    def __init__(
        self, argv: list[str], prog_name: str, cwd: str, env: dict[str, str], stdin: bytes,
        stdin_stream: Stream, stdout_stream: Stream, stderr_stream: Stream, deadline: float = 0.0,
    ) -> None:  # fmt: skip
        self.argv = argv
        self.prog_name = prog_name
        self.cwd = cwd
        self.env = env
        self.stdin = stdin
        self.stdin_stream = stdin_stream
        self.stdout_stream = stdout_stream
        self.stderr_stream = stderr_stream
        # When the hook stops waiting (seconds since the epoch; 0: it waits): a request found in the
        # queue after that is not run, since the hook has run the command itself by then.
        self.deadline = deadline


class Reply:
    """What the command did: its exit code and the bytes it wrote to stdout and stderr."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, code: int, stdout: bytes, stderr: bytes) -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr


def _text(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


def _str(value: bytes) -> str:
    try:
        return value.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"an item is not text: {exc}") from None


def pack(items: list[bytes]) -> bytes:
    body = b"".join(_LENGTH.pack(len(item)) + item for item in items)
    if len(body) > MAX_MESSAGE:
        raise ProtocolError("message too large")
    return MAGIC + _LENGTH.pack(len(body)) + body


def unpack(body: bytes) -> list[bytes]:
    items: list[bytes] = []
    at = 0
    while at < len(body):
        if at + 4 > len(body):
            raise ProtocolError("truncated item length")
        (size,) = _LENGTH.unpack_from(body, at)
        at += 4
        if at + size > len(body):
            raise ProtocolError("truncated item")
        items.append(body[at : at + size])
        at += size
    return items


def _recv_exact(sock: _socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed mid-message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock: _socket.socket) -> list[bytes]:
    """One message from ``sock`` (its timeout applies to each read), as its items."""
    head = _recv_exact(sock, len(MAGIC) + 4)
    if head[: len(MAGIC)] != MAGIC:
        raise ProtocolError("not an engram warm-path message")
    (size,) = _LENGTH.unpack_from(head, len(MAGIC))
    if size > MAX_MESSAGE:
        raise ProtocolError("message too large")
    return unpack(_recv_exact(sock, size))


def encode_request(request: Request) -> bytes:
    items = [_text(request.prog_name), _text(request.cwd), repr(request.deadline).encode()]
    for stream in (request.stdin_stream, request.stdout_stream, request.stderr_stream):
        items += [_text(stream.encoding), _text(stream.errors)]
    items.append(str(len(request.argv)).encode())
    items += [_text(arg) for arg in request.argv]
    items.append(str(len(request.env)).encode())
    for name, value in request.env.items():
        items += [_text(name), _text(value)]
    items.append(request.stdin)
    return pack(items)


def _count(item: bytes) -> int:
    if not item.isdigit() or len(item) > 6:
        raise ProtocolError("a count is not a small number")
    return int(item)


def decode_request(items: list[bytes]) -> Request:
    try:
        prog_name, cwd = _str(items[0]), _str(items[1])
        try:
            deadline = float(items[2].decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise ProtocolError("the deadline is not a number") from None
        streams = [Stream(_str(items[i]), _str(items[i + 1])) for i in (3, 5, 7)]
        at = 9
        argc = _count(items[at])
        argv = [_str(item) for item in items[at + 1 : at + 1 + argc]]
        at += 1 + argc
        envc = _count(items[at])
        pairs = items[at + 1 : at + 1 + 2 * envc]
        at += 1 + 2 * envc
        stdin = items[at]
        if len(argv) != argc or len(pairs) != 2 * envc or at + 1 != len(items):
            raise ProtocolError("the request's items do not add up")
    except IndexError:
        raise ProtocolError("the request is missing items") from None
    env = {_str(pairs[i]): _str(pairs[i + 1]) for i in range(0, len(pairs), 2)}
    return Request(argv, prog_name, cwd, env, stdin, streams[0], streams[1], streams[2], deadline)


def encode_reply(reply: Reply) -> bytes:
    return pack([str(reply.code).encode(), reply.stdout, reply.stderr])


def decode_reply(items: list[bytes]) -> Reply:
    if len(items) != 3:
        raise ProtocolError("a reply has three items")
    try:
        code = int(items[0].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError("the exit code is not a number") from None
    if not 0 <= code <= 255:
        raise ProtocolError("the exit code is out of range")
    return Reply(code, items[1], items[2])
