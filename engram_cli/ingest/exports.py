"""What the data-export importers share: one JSON file of many conversations, read whole, remembered per conversation.

A chat app's data export (ChatGPT's, Claude.ai's) is a file the person downloads and hands over
with ``engram ingest <source> PATH``. Nothing is looked for in default places: an export lands
wherever a browser put it, under a name shared with other tools' files, and a run from cron or
a hook should not read a few hundred megabytes of someone's chats because a file of that name
appeared in ~/Downloads. Conversations belong to no repository, so they go to the default
namespace (the global scope unless one is configured) unless ``--namespace`` says where.

The cursor remembers, per conversation, the app's own "last updated" value and how many of its
messages were returned with a digest of them. A later export (the same path rewritten, or a new
download elsewhere) then yields only what is new: a conversation whose update time is unchanged
is not even walked, one that grew yields its new messages, and one whose earlier messages
changed (an edited prompt in ChatGPT switches the branch) is returned whole with ``restart``.
A conversation this cursor has never seen is returned whole with ``restart`` as well: it may
have come in through another export already, and the loader recognises the memories it has.

A file that is not an export of this kind at all (not JSON, not a list of conversations, the
other app's export) is the file's error, in words that say what to do, never a traceback; a
conversation in it that cannot be used is skipped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_cli.ingest import files
from engram_cli.ingest.base import MAX_JSON_BYTES, Batch, Cursor, Message, Session, UnusableFile, decode
from engram_cli.ingest.common import messages_digest, prefix_unchanged

# The cursor keeps a short digest per conversation: an export holds thousands of them.
_DIGEST_CHARS = 16


def short_digest(messages: Sequence[Message]) -> str:
    return messages_digest(messages)[:_DIGEST_CHARS]


@dataclass
class Conversation:
    """One conversation of an export, as its format's parser reads it."""

    key: str  # the app's conversation id
    version: str  # the app's "last updated" value, as JSON text: unchanged means nothing new
    messages: Callable[[], list[Message]]  # the messages worth keeping, in order (walked only when needed)
    title: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    model: str | None = None


class Unusable(ValueError):
    """One conversation of an export cannot be used; ``str(exc)`` is the short reason it is counted under."""


@dataclass
class ExportFormat:
    """What tells one app's export apart: its parser and how to recognise its conversations."""

    what: str  # "a ChatGPT data export"
    parse: Callable[[Mapping[str, Any]], Conversation]  # raises Unusable
    looks_like: Callable[[Mapping[str, Any]], bool]  # a conversation object of this format
    # Other formats a file might be instead, with the command that reads it: (looks_like, command).
    others: list[tuple[Callable[[Mapping[str, Any]], bool], str]] = field(default_factory=list)


def read_export(source: str, fmt: ExportFormat, path: Path, cursor: Cursor | None) -> Batch:
    """The conversations of ``path`` that are new or grew since ``cursor``; raises UnusableFile for a foreign file."""
    st = path.stat()  # before reading: a write that lands meanwhile makes the next run read again
    if cursor is not None and cursor.unchanged(st):
        return Batch([], cursor)
    fresh = Cursor(path=str(path), inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, offset=st.st_size)
    batch = Batch([], fresh)
    items = _conversations(fmt, path, st.st_size, batch)
    before: dict[str, Any] = dict(cursor.state.get("conversations", {})) if cursor is not None else {}
    after: dict[str, list[Any]] = {}
    usable = 0
    for index, obj in enumerate(items, 1):
        where = f"{path} (conversation {index})"
        if not isinstance(obj, dict):
            batch.skip("not a conversation", where)
            continue
        try:
            conv = fmt.parse(obj)
        except Unusable as exc:
            batch.skip(str(exc), where)
            continue
        usable += 1
        prev = before.get(conv.key)
        known = isinstance(prev, list) and len(prev) == 3 and isinstance(prev[1], int)
        if known and prev is not None and conv.version and prev[0] == conv.version:
            after[conv.key] = prev  # the app says nothing changed: not even walked
            continue
        messages = conv.messages()
        after[conv.key] = [conv.version, len(messages), short_digest(messages)]
        if known and prev is not None and prefix_unchanged(messages, prev[1], prev[2], short_digest):
            new, restart = messages[prev[1] :], False
        else:
            new, restart = messages, True
        if not new:
            continue
        session = Session(
            source=source, key=conv.key, path=str(path), messages=new, title=conv.title,
            started_at=conv.started_at, updated_at=conv.updated_at, model=conv.model, restart=restart,
        )  # fmt: skip
        batch.sessions.append(session)
    if items and not usable:
        raise UnusableFile(_foreign(fmt, items, batch))
    fresh.state = {"conversations": after}
    return batch


def _conversations(fmt: ExportFormat, path: Path, size: int, batch: Batch) -> list[Any]:
    """The list of conversation objects in the file; UnusableFile when it is not such a list."""
    if size > MAX_JSON_BYTES:
        raise UnusableFile(
            f"is {size // 2**20} MB, more than the {MAX_JSON_BYTES // 2**20} MB an export is read up to; "
            "newer exports split conversations into conversations-NNN.json files: give the folder instead"
        )
    text = decode(files.read_bytes(path), batch, str(path))
    if text is None:
        raise UnusableFile(f"is not UTF-8 text, so not {fmt.what}; give the conversations.json from the export")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnusableFile(
            f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}), so not {fmt.what}; "
            "was the download cut short? Download the export again"
        ) from None
    except RecursionError:
        raise  # the loader skips a file nested past the parser until it changes
    except ValueError as exc:
        raise UnusableFile(f"is not valid JSON ({exc}), so not {fmt.what}") from None
    if isinstance(doc, dict) and (fmt.looks_like(doc) or any(like(doc) for like, _ in fmt.others)):
        doc = [doc]  # one conversation saved on its own
    if not isinstance(doc, list):
        raise UnusableFile(f"is not {fmt.what}: expected a JSON list of conversations, found a JSON {_kind(doc)}")
    return doc


def _foreign(fmt: ExportFormat, items: list[Any], batch: Batch) -> str:
    """Why a list none of whose conversations could be used is not this export, and what to run instead."""
    sample = [obj for obj in items if isinstance(obj, dict)]
    for like, command in fmt.others:
        if sample and like(sample[0]):
            return f"is not {fmt.what}; it looks like one that `{command}` reads"
    reasons = ", ".join(f"{n} {reason}" for reason, n in batch.skipped.most_common(3))
    return f"is not {fmt.what}: none of its {len(items)} entries is a conversation ({reasons})"


def _kind(value: Any) -> str:
    return {dict: "object", str: "string", bool: "true/false", type(None): "null"}.get(type(value), "number")


def version_of(value: Any) -> str:
    """The app's update time as stable text for the cursor ('' when absent: then the messages are compared)."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    return json.dumps(value)


def text_or_none(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def export_files(path: Path, names: Sequence[str]) -> list[Path]:
    """A file given is read whatever its name (a foreign one is its error); in a folder, the files named
    like an export's, there or one level down (a folder of unpacked exports)."""
    if not path.is_dir():
        return [path]
    return sorted({p for name in names for pattern in (name, f"*/{name}") for p in files.glob(path, pattern)})


@dataclass
class ExportImporter:
    """The importer of a chat app's data export: read only from a path given, with the format's parser.

    An export is downloaded on purpose and handed over, so no default location is searched.
    """

    name: str
    description: str
    fmt: ExportFormat
    names: tuple[str, ...]  # how the export's files are named, for a folder given
    agent: str = field(init=False)  # the app's memories are recorded under its own name

    def __post_init__(self) -> None:
        self.agent = self.name

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return []

    def files(self, path: Path) -> list[Path]:
        return export_files(path, self.names)

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        return read_export(self.name, self.fmt, path, cursor)
