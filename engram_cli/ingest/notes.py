"""A folder of Markdown (and plain text) notes: memories already, one per section.

There is no standard place for notes, so ``locate`` looks only where ``ENGRAM_NOTES_DIR`` points
(nothing when it is unset): pass ``--path DIR`` otherwise. ``.md``, ``.markdown`` and ``.txt`` files are
read, skipping hidden directories (``.git``, ``.obsidian``, ``.trash``) and ``node_modules``; files over
1 MB, binary files and files that are not UTF-8 are skipped and counted.

Each note becomes a session (key: its path relative to the folder given) holding ready-made
``records`` rather than messages. A short note (up to ~1,200 characters) or one without headings is
one record; a longer one is split at its Markdown headings, each section a record whose text starts
with its heading trail (``Setup › Database``) so it reads on its own; a heading with nothing under it
before the next one only names its children. Record keys are the relative path, plus ``#`` and the
heading's slug for sections (``-1``, ``-2`` for repeated headings), so a rewritten note is recognised.

- type: ``procedural`` when the section is a how-to: at least two numbered steps, or a code fence
  marked as shell (``sh``, ``bash``, ``console`` …) or holding ``$ `` prompts; else ``semantic``.
- tags: the front matter's ``tags:`` (a list or a comma-separated string) and ``#tags`` in the text
  outside code.
- created_at: the front matter's ``date:`` (or ``created:``), else the file's modification time.

Notes are edited in place, so the cursor is the file's size and mtime: an unchanged file returns
nothing; a changed one returns all its records again with ``restart=True`` (the loader recognises the
keys it already has).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram_cli.errors import InvalidInput
from engram_cli.ingest import files
from engram_cli.ingest.base import Batch, Cursor, Importer, Session, clip
from engram_cli.timeutil import parse_time, to_iso

SUFFIXES = (".md", ".markdown", ".txt")
MAX_NOTE_BYTES = 1024 * 1024
SHORT_NOTE_CHARS = 1200
MAX_RECORD_CHARS = 100_000  # what `engram add` accepts
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")  # "#" alone is an empty heading
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)")
NUMBERED_STEP = re.compile(r"^\s*\d{1,3}[.)]\s+\S")
HASHTAG = re.compile(r"(?<![\w#&/])#([^\W\d_][\w/-]*)")
SHELL_FENCES = {"sh", "bash", "zsh", "fish", "shell", "console", "shell-session", "shellsession", "powershell",
                "ps1", "pwsh", "ps", "cmd", "bat", "batch"}  # fmt: skip


@dataclass
class Section:
    """A heading and the lines under it, up to the next heading."""

    trail: list[str]  # the headings above it and its own; empty for text before the first heading
    level: int
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The ``---`` block at the top of a note as a dict of strings and lists, and the rest of the note.

    Only what notes use is understood (``key: value``, ``key: [a, b]``, ``key:`` followed by ``- item``
    lines); anything else is ignored rather than guessed at.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    closing = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if closing is None:
        return {}, text
    fields: dict[str, Any] = {}
    key: str | None = None
    for line in lines[1:closing]:
        item = re.match(r"^\s*-\s+(.*)$", line)
        if item and key is not None:
            previous = fields.get(key)
            fields[key] = [*(previous if isinstance(previous, list) else []), _scalar(item.group(1))]
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if not pair:
            continue
        key, value = pair.group(1).lower(), pair.group(2).strip()
        if value.startswith("[") and value.endswith("]"):
            fields[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            fields[key] = _scalar(value) if value else []
    return fields, "\n".join(lines[closing + 1 :])


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def sections(body: str) -> list[Section]:
    """The note cut at its headings (not at ``#`` lines inside code fences)."""
    found = [Section(trail=[], level=0)]
    fence: str | None = None
    for line in body.split("\n"):
        opening = FENCE.match(line)
        if opening and (fence is None or opening.group(1).startswith(fence)):
            fence = None if fence else opening.group(1)[:3]
        heading = None if fence or opening else HEADING.match(line)
        if heading and heading.group(2):
            level = len(heading.group(1))
            found.append(Section(trail=_trail(found, level, heading.group(2)), level=level))
        elif not heading:
            found[-1].lines.append(line)
    return found


def _trail(found: list[Section], level: int, title: str) -> list[str]:
    """The headings above a new heading of ``level``: the nearest shallower one's trail, then it."""
    for section in reversed(found):
        if 0 < section.level < level:
            return [*section.trail, title]
    return [title]


def slug(title: str) -> str:
    """A heading's anchor as Markdown renderers make it: lower case, punctuation gone, spaces as dashes."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return re.sub(r"\s+", "-", kept.strip()) or "section"


def _outside_code(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """The text outside code fences, and each fence's info string with its lines."""
    prose: list[str] = []
    fences: list[tuple[str, list[str]]] = []
    current: tuple[str, list[str]] | None = None
    marker = ""
    for line in text.split("\n"):
        opening = FENCE.match(line)
        if current is None and opening:
            marker, current = opening.group(1)[:3], (opening.group(2).lower(), [])
            fences.append(current)
        elif current is not None and opening and opening.group(1).startswith(marker):
            current = None
        elif current is not None:
            current[1].append(line)
        else:
            prose.append(re.sub(r"`[^`]*`", "", line))  # inline code is not a tag either
    return "\n".join(prose), fences


def memory_type(text: str) -> str:
    """``procedural`` for a how-to (numbered steps, shell commands), else ``semantic``."""
    prose, fences = _outside_code(text)
    if sum(1 for line in prose.split("\n") if NUMBERED_STEP.match(line)) >= 2:
        return "procedural"
    for info, lines in fences:
        if info in SHELL_FENCES or any(line.lstrip().startswith("$ ") for line in lines):
            return "procedural"
    return "semantic"


def hashtags(text: str) -> list[str]:
    prose, _ = _outside_code(text)
    return [tag.rstrip("/-") for tag in HASHTAG.findall(prose)]


def _listed(value: Any) -> list[str]:
    """Front-matter tags: a list, or one string separated by commas or spaces."""
    items = value if isinstance(value, list) else re.split(r"[,\s]+", value) if isinstance(value, str) else []
    return [str(item).strip().lstrip("#") for item in items if str(item).strip().lstrip("#")]


def _date(fields: Mapping[str, Any]) -> str | None:
    for key in ("date", "created", "created_at"):
        value = fields.get(key)
        if isinstance(value, str) and value:
            try:
                return to_iso(parse_time(value, what=key))
            except InvalidInput:
                continue
    return None


def _cut(text: str) -> str:
    return clip(text, MAX_RECORD_CHARS)


def records(text: str, rel: str, created_at: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The note's title and its records (see the module's docstring for the rules)."""
    fields, body = front_matter(text)
    parts = sections(body)
    title = fields.get("title") if isinstance(fields.get("title"), str) and fields.get("title") else None
    title = title or next((s.trail[-1] for s in parts if s.trail), None)
    created = _date(fields) or created_at
    file_tags = _listed(fields.get("tags"))
    out: list[dict[str, Any]] = []

    def record(key: str, content: str, section: str | None) -> None:
        metadata: dict[str, Any] = {"file": rel}
        if section:
            metadata["section"] = section
        tags = sorted({t.lower() for t in [*file_tags, *hashtags(content)]})
        out.append(
            {
                "key": key,
                "content": _cut(content),
                "type": memory_type(content),
                "tags": tags,
                "created_at": created,
                "metadata": metadata,
            }
        )

    whole = body.strip()
    if len(whole) <= SHORT_NOTE_CHARS or len(parts) == 1:
        if whole:
            record(rel, whole, None)
        return title, out
    used: dict[str, int] = {}
    for part in parts:
        if not part.text:
            continue  # a heading straight followed by a deeper one: it lives on in their trails
        if not part.trail:
            record(rel, part.text, None)
            continue
        anchor = slug(part.trail[-1])
        seen = used.get(anchor, 0)
        used[anchor] = seen + 1
        key = f"{rel}#{anchor}" if seen == 0 else f"{rel}#{anchor}-{seen}"
        record(key, f"{' › '.join(part.trail)}\n\n{part.text}", part.trail[-1])
    return title, out


def _skipped_dir(name: str) -> bool:
    return name.startswith(".") or name == "node_modules"


@dataclass
class NotesImporter:
    name: str = "notes"
    agent: str = "notes"
    description: str = "Markdown and text notes in a folder (--path DIR, or ENGRAM_NOTES_DIR)"
    # Where each file was found (files()/locate() know the folder, read() only gets the file): session
    # and record keys are paths relative to that folder, and the key is kept in the cursor thereafter.
    roots: dict[Path, Path] = field(default_factory=dict)

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        folder = env.get("ENGRAM_NOTES_DIR")
        if not folder:
            return []
        path = home / folder[2:] if folder == "~" or folder.startswith("~/") else Path(folder)
        return self.files(path) if path.is_dir() else []

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            found = [path] if path.suffix.lower() in SUFFIXES else []
            root = path.parent
        else:
            found = sorted(
                p
                for p in path.rglob("*")
                if p.suffix.lower() in SUFFIXES
                and files.candidate(p)
                and not any(_skipped_dir(part) for part in p.relative_to(path).parts[:-1])
            )
            root = path
        for note in found:
            self.roots[note] = root
        return found

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()
        if cursor is not None and cursor.unchanged(st):
            return Batch([], cursor)
        key = str(cursor.state.get("key")) if cursor is not None and cursor.state.get("key") else self._key(path)
        done = Cursor(path=str(path), inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, state={"key": key})
        batch = Batch([], done)
        where = str(path)
        if st.st_size > MAX_NOTE_BYTES:
            batch.skip("huge file", where)
            return batch
        raw = files.read_bytes(path)
        if b"\x00" in raw:
            batch.skip("binary data", where)
            return batch
        try:
            text = raw.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
        except UnicodeDecodeError:
            batch.skip("invalid UTF-8", where)
            return batch
        modified = to_iso(datetime.fromtimestamp(st.st_mtime, UTC))
        title, found = records(text, key, modified)
        created = found[0]["created_at"] if found else None
        batch.sessions.append(
            Session(
                source=self.name,
                key=key,
                path=str(path),
                title=title or path.stem,
                started_at=created,
                updated_at=modified,
                records=found,
                restart=cursor is not None,
            )
        )
        return batch

    def _key(self, path: Path) -> str:
        root = self.roots.get(path)
        if root is not None:
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                pass
        return path.name


IMPORTER: Importer = NotesImporter()
