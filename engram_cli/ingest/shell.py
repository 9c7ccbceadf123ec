"""Shell history: bash, zsh and fish, one session per calendar day (UTC) of commands.

Formats (LOG-FORMATS.md §10):

- bash: ``$HISTFILE`` or ``~/.bash_history``, one command a line; with ``HISTTIMEFORMAT`` set, a
  ``#<epoch>`` line precedes each command.
- zsh: ``$HISTFILE``, ``~/.zsh_history``, ``~/.zhistory``, ``~/.histfile`` (and ``$ZDOTDIR``);
  ``EXTENDED_HISTORY`` lines are ``: <start>:<elapsed>;<command>``, a line ending in a backslash
  continues on the next (zsh writes one before each newline of a multi-line command and drops it on
  reading), and bytes are "metafied" (0x83 followed by the byte XOR 0x20) before UTF-8 decoding.
- fish: ``${XDG_DATA_HOME:-~/.local/share}/fish/${fish_history:-fish}_history``, YAML-like entries
  ``- cmd: <command>`` / ``  when: <epoch>`` / ``  paths:`` with ``\\\\`` and ``\\n`` escaped; lines that
  fit no entry are corrupt and skipped.

``HISTFILE`` is a shell variable that any shell may export, so bash takes it unless its name is a
zsh one and zsh takes it unless its name is a bash one.

Commands become ``shell`` messages (``text`` and ``command`` both the command) with ``at`` from the
timestamp when there is one. History has no working directory, so sessions have no project. A
command without a timestamp goes to the day the file was last written, the closest thing known.

Shells append to these files, but also trim them to ``HISTFILESIZE``/``SAVEHIST`` lines and rewrite
them (fish and zsh through a new file). The cursor keeps the byte offset plus a hash of the bytes
just before it: when those bytes are still there the file only grew, and reading resumes at the
offset. Otherwise the whole file is parsed again and only the entries after the watermark (a hash of
the last command read, and its timestamp) are returned; older entries are never returned twice, so
sessions do not restart. The watermark is a hash because the cursor is stored: a command line can
carry a password (``mysql -pPASS``) that no pattern recognises. Ids are ``L<n>``, n counting every
entry ever read from the file, so that trimming the top of the file does not make two different
commands share an id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from engram_cli.ingest import files
from engram_cli.ingest.base import SHELL, Batch, Cursor, Importer, Message, Session, complete_lines, decode
from engram_cli.ingest.common import epoch_to_utc, utf8

BASH_STAMP = re.compile(r"#(\d{1,12})\s*")
ZSH_EXTENDED = re.compile(r": *(\d{1,12}):(\d+);(.*)", re.DOTALL)
FISH_WHEN = re.compile(r"  when: *(\S*)\s*")
TAIL_BYTES = 256  # how much of the file before the offset must still be there for it to have only grown
# Epochs outside this range are not times a command was typed (a stray "#1" line, a corrupt entry).
MIN_EPOCH, MAX_EPOCH = 86_400, 10**11


@dataclass
class Entry:
    """One command as the history file holds it."""

    command: str
    epoch: int | None
    end: int  # byte offset just after its last line
    line: int  # line number of its last line


@dataclass
class Parsed:
    """Complete entries, and how far the file was consumed (never into an unfinished entry)."""

    entries: list[Entry] = field(default_factory=list)
    end: int = 0
    lines: int = 0


Lines = Iterator[tuple[int, int, bytes]]  # (line number, end offset, raw line) from complete_lines
Parser = Callable[[Lines, Parsed, Batch, Path], None]


def _epoch(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if MIN_EPOCH <= value < MAX_EPOCH else None


def parse_bash(lines: Lines, parsed: Parsed, batch: Batch, path: Path) -> None:
    """bash: a ``#<epoch>`` line stamps the command on the next line (bash saves one line per command)."""
    stamp: int | None = None
    for lineno, end, raw in lines:
        text = decode(raw, batch, f"{path}:{lineno}")
        if text is not None:
            text = text.rstrip("\r\n")
            if match := BASH_STAMP.fullmatch(text):
                stamp = _epoch(match.group(1))
                continue  # consumed with its command: an offset must not split them
            if text.strip():
                parsed.entries.append(Entry(text, stamp, end, lineno))
        stamp = None
        parsed.end, parsed.lines = end, lineno


def unmetafy(raw: bytes) -> bytes:
    """zsh's on-disk bytes to plain ones: 0x83 marks the next byte as XOR-ed with 0x20."""
    if b"\x83" not in raw:
        return raw
    out = bytearray()
    flip = False
    for byte in raw:
        if flip:
            out.append(byte ^ 0x20)
            flip = False
        elif byte == 0x83:
            flip = True
        else:
            out.append(byte)
    return bytes(out)


def parse_zsh(lines: Lines, parsed: Parsed, batch: Batch, path: Path) -> None:
    """zsh: extended ``: start:elapsed;command`` lines (or plain ones), backslash-newline continuations."""
    pending: list[str] = []
    stamp: int | None = None
    for lineno, end, raw in lines:
        text = decode(unmetafy(raw.rstrip(b"\n")), batch, f"{path}:{lineno}")
        if text is None:
            pending, stamp = [], None  # a command with an undecodable line is dropped whole
            parsed.end, parsed.lines = end, lineno
            continue
        if not pending:
            match = ZSH_EXTENDED.fullmatch(text)
            stamp = _epoch(match.group(1)) if match else None
            text = match.group(3) if match else text
            if not match and not text.strip():
                parsed.end, parsed.lines = end, lineno
                continue
        if text.endswith("\\"):
            pending.append(text[:-1])
            continue  # the command goes on: the cursor stays before its first line
        pending.append(text)
        command = "\n".join(pending)
        if command.strip():
            parsed.entries.append(Entry(command, stamp, end, lineno))
        pending, stamp = [], None
        parsed.end, parsed.lines = end, lineno


def fish_unescape(text: str) -> str:
    """fish's history escapes: ``\\\\`` is a backslash, ``\\n`` a newline; anything else stays."""
    out: list[str] = []
    i = 0
    while i < len(text):
        pair = text[i : i + 2]
        if pair == "\\\\":
            out.append("\\")
            i += 2
        elif pair == "\\n":
            out.append("\n")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_fish(lines: Lines, parsed: Parsed, batch: Batch, path: Path) -> None:
    """fish: ``- cmd:`` starts an entry, indented ``when:``/``paths:`` lines belong to it."""
    current: Entry | None = None
    corrupt = False  # inside an entry that has no ``cmd``: its indented lines go with it
    for lineno, end, raw in lines:
        parsed.end, parsed.lines = end, lineno  # fish writes whole entries: all complete lines are done
        text = decode(raw, batch, f"{path}:{lineno}")
        if text is None:
            continue
        text = text.rstrip("\r\n")
        if text.startswith("- cmd:"):
            if current is not None and current.command.strip():
                parsed.entries.append(current)
            current, corrupt = Entry(fish_unescape(text[6:].lstrip(" ")), None, end, lineno), False
        elif text.startswith(" ") and (current is not None or corrupt):
            if current is not None:
                current.end, current.line = end, lineno
                if when := FISH_WHEN.fullmatch(text):
                    current.epoch = _epoch(when.group(1))
        elif text.strip():
            if current is not None and current.command.strip():
                parsed.entries.append(current)
            current = None
            if not (corrupt and text.startswith(" ")):
                batch.skip("corrupt entry", f"{path}:{lineno}")
            corrupt = text.startswith("- ")
    if current is not None and current.command.strip():
        parsed.entries.append(current)


def _mark(command: str) -> str:
    """What the cursor keeps of the last command read: enough to find it again, nothing to read back."""
    return hashlib.sha256(utf8(command)).hexdigest()[:24]


def _tail(path: Path, offset: int) -> str:
    """Hash of the bytes just before ``offset``: if they change, the file was rewritten, not appended to."""
    if offset <= 0:
        return ""
    start = max(0, offset - TAIL_BYTES)
    with files.open_binary(path) as fh:
        fh.seek(start)
        return hashlib.sha256(fh.read(offset - start)).hexdigest()


@dataclass
class ShellImporter:
    name: str
    agent: str
    description: str
    parse: Parser

    def locate(self, env: Mapping[str, str], home: Path) -> list[Path]:
        candidates: list[Path] = []
        histfile = env.get("HISTFILE")
        if self.name == "bash":
            if histfile and "zsh" not in Path(histfile).name and "zhist" not in Path(histfile).name:
                candidates.append(Path(histfile))
            candidates.append(home / ".bash_history")
        elif self.name == "zsh":
            if histfile and "bash" not in Path(histfile).name:
                candidates.append(Path(histfile))
            zdotdir = Path(env["ZDOTDIR"]) if env.get("ZDOTDIR") else home
            candidates += [zdotdir / ".zsh_history", home / ".zsh_history", home / ".zhistory", home / ".histfile"]
        else:
            data = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
            # ``fish_history`` names the history session; set empty, fish keeps no history at all.
            session = env.get("fish_history", "fish")
            if session:
                candidates.append(data / "fish" / f"{session}_history")
        return files.unique([p for p in candidates if files.candidate(p)], resolved=True)

    def files(self, path: Path) -> list[Path]:
        if path.is_file():
            return [path]
        names = {"bash": ("*bash_history*",), "zsh": ("*zsh_history*", ".zhistory", ".histfile")}
        patterns = names.get(self.name, ("[!.]*_history",))  # fish: <session>_history, never hidden
        found = {p for pattern in patterns for p in files.glob(path, pattern)}
        return sorted(found)

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        st = path.stat()  # taken first: bytes appended while reading make the next run look again
        if cursor is not None and cursor.unchanged(st):
            return Batch([], cursor)
        batch = Batch([], cursor or Cursor(path=str(path)))
        state = dict(cursor.state) if cursor is not None else {}
        grown = cursor is not None and not cursor.replaced(st) and _tail(path, cursor.offset) == state.get("tail", "")
        start, first_line = (cursor.offset, int(state.get("lines", 0))) if grown and cursor else (0, 0)
        parsed = Parsed(end=start, lines=first_line)
        self.parse(complete_lines(path, start, batch, first_line), parsed, batch, path)
        entries = parsed.entries if grown or cursor is None else self._after_watermark(parsed.entries, state)
        count = int(state.get("n", 0))
        day_of_file = datetime.fromtimestamp(st.st_mtime, UTC).date().isoformat()
        sessions: dict[str, Session] = {}
        for entry in entries:
            count += 1
            at = epoch_to_utc(entry.epoch, millis=False)
            day = at[:10] if at else day_of_file
            session = sessions.get(day)
            if session is None:
                # The day alone is not unique: two history files of one shell share their days.
                session = sessions[day] = Session(
                    source=self.name, key=f"{day}@{path}", path=str(path), title=f"{self.name} commands on {day}"
                )
            message = Message(role=SHELL, text=entry.command, id=f"L{count}", at=at, command=entry.command)
            session.messages.append(message)
        for session in sessions.values():
            times = [m.at for m in session.messages if m.at]
            session.started_at, session.updated_at = (min(times), max(times)) if times else (None, None)
        batch.sessions = list(sessions.values())
        if entries:
            state.pop("cmd", None)  # the raw command older versions kept
            state.update(mark=_mark(entries[-1].command), epoch=entries[-1].epoch)
        state.update(lines=parsed.lines, n=count, tail=_tail(path, parsed.end))
        last_id, last_at = (cursor.last_id, cursor.last_at) if cursor is not None else (None, None)
        if entries:
            last_id = f"L{count}"
            last_at = epoch_to_utc(entries[-1].epoch, millis=False)
        batch.cursor = Cursor(
            path=str(path),
            inode=st.st_ino,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            offset=parsed.end,
            last_id=last_id,
            last_at=last_at,
            state=state,
        )
        return batch

    @staticmethod
    def _after_watermark(entries: list[Entry], state: Mapping[str, object]) -> list[Entry]:
        """The entries of a trimmed or rewritten file that come after the last one read before."""
        mark, legacy, epoch = state.get("mark"), state.get("cmd"), state.get("epoch")
        if mark is None and legacy is None:
            return entries
        for index in range(len(entries) - 1, -1, -1):
            entry = entries[index]
            same = _mark(entry.command) == mark if mark is not None else entry.command == legacy
            if same and entry.epoch == epoch:
                return entries[index + 1 :]
        if isinstance(epoch, int):
            # The watermark itself was trimmed away (or deduplicated): later timestamps are new.
            return [e for e in entries if e.epoch is not None and e.epoch > epoch]
        return entries  # no timestamps and no watermark: nothing tells old from new


IMPORTERS: dict[str, Importer] = {
    "bash": ShellImporter("bash", "bash", "bash history ($HISTFILE or ~/.bash_history)", parse_bash),
    "zsh": ShellImporter("zsh", "zsh", "zsh history ($HISTFILE, ~/.zsh_history, ~/.zhistory)", parse_zsh),
    "fish": ShellImporter("fish", "fish", "fish history (~/.local/share/fish/fish_history)", parse_fish),
}
