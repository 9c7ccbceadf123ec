"""Helpers several importers share: times, failures in output, tool calls on one line, digests, paths.

Each importer knows its own format; what is here is the small logic that several formats need the
same way. Where importers were written to differ in a detail that shows in what they return (a
time they accept, how a tool's input reads), the detail is a keyword argument, so that each keeps
returning exactly what it did and the difference stays visible at the call.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote, urlparse

from engram_cli.ingest import files
from engram_cli.ingest.base import Cursor, Message, clip
from engram_cli.lang import redact
from engram_cli.lang.text import clean
from engram_cli.timeutil import to_iso

if TYPE_CHECKING:
    import apsw

T = TypeVar("T")

# A session id as Claude Code and Codex write it, in file names and records.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
# A shell command is kept up to this many characters: heredocs can carry whole files.
COMMAND_LIMIT = 4000

# Fractional seconds past the sixth digit (nanosecond clocks), cut before parsing: a datetime holds microseconds.
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")


def iso_to_utc(value: object, *, lenient: bool = True) -> str | None:
    """An ISO 8601 timestamp as engram's UTC ``…Z`` text (no offset means UTC); None when it is not one.

    ``lenient`` also forgives white space around the value and cuts fractional seconds to six
    digits. ``lenient=False`` is the stricter reading the Gemini CLI and Cursor importers were
    written with: such a value is refused there, not repaired, and stays refused.
    """
    if not isinstance(value, str) or not value:
        return None
    text = value.strip() if lenient else value
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    if lenient:
        text = _LONG_FRACTION.sub(r"\1", text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return to_iso(moment)  # a naive time is read as UTC there


def epoch_to_utc(value: object, *, millis: bool = True) -> str | None:
    """A Unix time, in milliseconds (``millis=False``: seconds), as UTC ISO text; None when it is not one.

    Booleans are not times, though Python counts them as numbers; a value out of the range
    ``datetime`` can hold is None as well, not an error.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return to_iso(datetime.fromtimestamp(value / 1000 if millis else value, UTC))
    except (ValueError, OverflowError, OSError):
        return None


# A failure that a command's output shows though its exit code does not (``pytest | tail`` exits 0):
# a traceback, pytest's ``FAILED`` lines and ``N failed`` summary, npm's and compilers' error lines
# (rustc's ``error[E0308]:``). Claude Code, Codex and Copilot CLI read it in shell tools' output.
SHELL_FAILURE = re.compile(
    r"^(?:Traceback \(most recent call last\)|FAILED\b|npm ERR!|error(?:\[E\d+\])?:)|\b\d+ failed\b", re.M
)
# What Cursor and Continue read as a failure in any tool's output. Unlike SHELL_FAILURE it takes ``FAILED``
# anywhere in a line (unittest's ``test_x ... FAILED``) and git's ``fatal:``, but no npm or rustc lines:
# one pattern for both would make each importer flag outputs it did not flag before.
OUTPUT_FAILURE = re.compile(r"Traceback \(most recent call last\)|\bFAILED\b|\b\d+ failed\b|^(?:error|fatal):", re.M)


def render_input(
    arguments: object, *, limit: int, separator: str = ", ", fold_space: bool = True, tidy_cut: bool = True
) -> str:
    """A tool call's input on one line: ``key=value`` pairs, each value cut to ``limit`` characters + `` …``.

    A mapping gives its items, None gives "", anything else one ``input=…`` pair. A value that is
    not text is shown as JSON. ``fold_space`` turns each run of white space (newlines too) into
    one space; ``tidy_cut`` drops the white space a cut leaves before the `` …``. The importers
    were written with different choices for these and for ``limit`` and ``separator``, and the
    text is stored as the message, so each passes its own. The result is not excerpted.

    Values are redacted before they are cut (see :func:`~engram_cli.ingest.base.clip`), and a
    value under a key that names a secret (``password``, ``api_key`` …) is redacted whole.
    """
    if arguments is None:
        return ""
    items = arguments.items() if isinstance(arguments, Mapping) else [("input", arguments)]
    parts = []
    for key, value in items:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if fold_space:
            text = " ".join(text.split())
        named, _ = redact.redact_data({str(key): text})
        parts.append(f"{key}={clip(named[str(key)], limit, tidy=tidy_cut)}")
    return separator.join(parts)


def clip_command(command: str) -> str:
    """A shell command, redacted, then cut to COMMAND_LIMIT characters, with `` …`` when it was longer."""
    return clip(command, COMMAND_LIMIT, tidy=False)


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 for hashing: a lone surrogate (JSON can escape one) is U+FFFD, never an error."""
    return clean(text).encode("utf-8")


def loose_json(value: object, *, keep_too_deep: bool = True) -> Any:
    """The value of a string holding JSON (tools log call arguments and results so); else the value as it is.

    A string that is not JSON stays the string, and so does JSON nested too deep for the parser,
    unless ``keep_too_deep`` is False: the Cursor and Continue importers were written letting that
    RecursionError through, and keep doing so.
    """
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
    except RecursionError:
        if keep_too_deep:
            return value
        raise


# A source rewritten in place (a whole-JSON session, a database) is compared with what the cursor
# remembers of the last read: how many items were returned, and a digest of them. The three digests
# are not interchangeable: each is stored in the cursors of the importers that use it, and another
# one would make every stored cursor look changed (the whole session read again, as a restart).


def lines_digest(lines: Sequence[str]) -> str:
    """SHA-256 of items as canonical JSON texts, one a line (Codex and Copilot CLI whole-file sessions)."""
    return hashlib.sha256(utf8("\n".join(lines))).hexdigest()


def chain_digest(messages: Iterable[Message]) -> str:
    """A short chained SHA-1 of messages as read (Cursor and Continue)."""
    digest = hashlib.sha1()
    for m in messages:
        digest.update(utf8("\x1f".join([m.id or "", m.role, m.text, m.tool or "", m.command or "", str(m.is_error)])))
        digest.update(b"\x1e")
    return digest.hexdigest()[:16]


def messages_digest(messages: Iterable[Message]) -> str:
    """SHA-256 of messages as read, as JSON rows (Cline, Roo Code and OpenCode)."""
    rows = [[m.id, m.role, m.text, m.tool, m.command, m.is_error] for m in messages]
    return hashlib.sha256(utf8(json.dumps(rows, ensure_ascii=False))).hexdigest()


def prefix_unchanged(items: Sequence[T], count: int, mark: object, digest: Callable[[Sequence[T]], str]) -> bool:
    """The first ``count`` items are what an earlier read returned: they are there still, and hash to ``mark``.

    When they are, only the items after them are new; when not, something already returned was
    edited, removed or reordered, and the importer returns the whole session with ``restart``.
    """
    return count <= len(items) and digest(items[:count]) == mark


def whole_file_progress(
    items: Sequence[object], cursor: Cursor | None, *, key: str
) -> tuple[int, bool, dict[str, Any]]:
    """For a session file rewritten whole (Codex and Copilot CLI JSON): (seen, restart, state).

    ``seen``: how many of ``items`` an earlier read returned and are unchanged, so not new;
    ``restart``: the earlier ones changed, so all are returned again; ``state``: the cursor state
    to save, the count under ``key`` and the digest of the items as canonical JSON.
    """
    canonical = [json.dumps(item, sort_keys=True, ensure_ascii=False) for item in items]
    before = cursor.state if cursor is not None else {}
    count = before.get(key, 0)
    unchanged = (
        isinstance(count, int) and count > 0 and prefix_unchanged(canonical, count, before.get("digest"), lines_digest)
    )
    seen = count if unchanged else 0
    restart = cursor is not None and seen == 0 and bool(before.get(key))
    return seen, restart, {key: len(items), "digest": lines_digest(canonical)}


def since_last_read(
    items: list[T], count: int, mark: object, digest: Callable[[Sequence[T]], str]
) -> tuple[list[T], bool]:
    """(what is new, restart) for a read whose predecessor returned ``count`` items hashing to ``mark``.

    The items after those when they are unchanged; else all of them, with ``restart`` set.
    """
    if prefix_unchanged(items, count, mark, digest):
        return items[count:], False
    return items, True


def uri_path(uri: str, *, drive_letters: bool = True) -> str | None:
    """The path of a ``file://`` (or remote) URI, or the text itself when it is a plain path; None when empty.

    Windows drive paths lose the slash a URI puts before them (``/C:/src`` is ``C:/src``). With
    ``drive_letters`` a one-letter scheme is taken for a drive (``C:\\src`` is a plain path): older
    Continue versions store plain paths. The Cursor importer passes False and reads such text as
    a URI, as it always has.
    """
    parsed = urlparse(uri)
    if not parsed.scheme or (drive_letters and len(parsed.scheme) == 1):
        return uri or None
    path = unquote(parsed.path)
    if re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    return path or None


def open_read_only(path: Path) -> apsw.Connection:
    """The SQLite database at ``path``, opened read-only: the tool that owns it may be writing it now.

    Only a regular file is opened (SQLite itself would wait on a FIFO): anything else raises
    ``apsw.CantOpenError``, which the callers already treat as an unreadable database.
    """
    import apsw  # only the importers of SQLite stores need it

    if (kind := files.irregular(path)) is not None:
        raise apsw.CantOpenError(f"{path} is {kind}, not a database file")
    return apsw.Connection(f"file:{quote(str(path))}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
