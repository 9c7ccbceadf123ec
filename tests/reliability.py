"""Shared pieces of the reliability suite (tests/test_reliability.py): scale, corpora, processes, scans.

The suite has a short variant, run by the normal `pytest`, and a long one, run by `nox -s reliability`
(``ENGRAM_RELIABILITY=long``). Both run the same tests; only the counts differ.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import string
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

LONG = os.environ.get("ENGRAM_RELIABILITY", "short") == "long"


@dataclass(frozen=True)
class Scale:
    writers: int  # concurrent writer processes
    adds: int  # memories each writer adds
    kill_trials: int  # kill -9 trials per command
    mutations: int  # random corruptions of each sample log
    in_process: bool  # hostile inputs through the CLI runner (fast) rather than one process each


SCALE = (
    Scale(writers=8, adds=150, kill_trials=50, mutations=20, in_process=False)
    if LONG
    else Scale(writers=3, adds=6, kill_trials=2, mutations=2, in_process=True)
)

ROOT = Path(__file__).resolve().parent
AGENT_LOGS = ROOT / "fixtures" / "agent-logs"
INGEST = ROOT / "fixtures" / "ingest"

# Every sample log of every source, as `engram ingest SOURCE --path P` takes it.
SAMPLES: dict[str, list[Path]] = {
    "claude-code": [AGENT_LOGS / "claude-code", INGEST / "claude-code"],
    "codex": [AGENT_LOGS / "codex", INGEST / "codex"],
    "gemini-cli": sorted((AGENT_LOGS / "gemini-cli").iterdir()),
    "aider": [AGENT_LOGS / "aider" / "aider_repo_chat-history_excerpt.md"],
    "cursor": [AGENT_LOGS / "cursor" / "derived_workspace_state_subset.vscdb"],
    "cline": [INGEST / "cline"],
    "roo-code": [AGENT_LOGS / "roo-code"],
    "opencode": [INGEST / "opencode"],
    "continue": [INGEST / "continue"],
    "copilot-cli": sorted((AGENT_LOGS / "copilot-cli").iterdir()),
    "bash": [AGENT_LOGS / "shell-history" / "atuin_test_bash_history_timestamps"],
    "zsh": [AGENT_LOGS / "shell-history" / "atuin_test_zsh_history"],
    "fish": [AGENT_LOGS / "shell-history" / "atuin_test_fish_history"],
    "notes": [INGEST / "notes"],
    "jsonl": [INGEST / "records" / "memories.jsonl"],
}

# A file name each source's importer accepts when given the file itself with --path.
TARGET_NAMES: dict[str, str] = {
    "claude-code": "0b0e2a6c-1111-4a2b-9c3d-5e6f7a8b9c0d.jsonl",
    "codex": "rollout-2026-01-01T00-00-00-0b0e2a6c-1111-4a2b-9c3d-5e6f7a8b9c0d.jsonl",
    "gemini-cli": "session-2026-01-01.json",
    "aider": ".aider.chat.history.md",
    "cursor": "state.vscdb",
    "cline": "api_conversation_history.json",
    "roo-code": "api_conversation_history.json",
    "opencode": "opencode.db",
    "continue": "0b0e2a6c-1111-4a2b-9c3d-5e6f7a8b9c0d.json",
    "copilot-cli": "events.jsonl",
    "bash": ".bash_history",
    "zsh": ".zsh_history",
    "fish": "fish_history",
    "notes": "note.md",
    "jsonl": "records.jsonl",
}


# -- hostile inputs -------------------------------------------------------------------------------


def hostile_payloads() -> dict[str, bytes]:
    """Byte contents no log should ever hold, each a case every importer must survive."""
    message = {"type": "user", "message": {"role": "user", "content": "fix the build"}, "timestamp": "2026-01-01"}
    surrogate = json.dumps({**message, "message": {"role": "user", "content": "bad \ud800 \udfff half"}})
    huge_token = json.dumps({**message, "message": {"role": "user", "content": "x" * 100_000}})
    return {
        "invalid-utf8": b'{"type": "user", "message": {"content": "caf\xe9 \xff\xfe"}}\n\xc3\x28 \xa0\xa1\n',
        "lone-surrogate": (surrogate + "\n").encode("utf-8"),
        "huge-line": b'{"message": "' + b"a" * (9 * 1024 * 1024) + b'"}\n',
        "deep-nesting": b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "nul-bytes": b'{"type": "user"\x00, "message": "\x00\x00"}\n\x00\x00\x00\n',
        "binary-junk": random.Random(7).randbytes(64 * 1024),
        "truncated": json.dumps(message).encode()[:40],
        "empty": b"",
        "huge-token": (huge_token + "\n").encode(),
        "not-sqlite": b"SQLite format 3\x00" + b"\xff" * 4096,
        "crlf-and-controls": b'{"message": "line\\r\\n\\u0007\\u001b[31m"}\r\n\x1b[2J\r\n',
    }


def mutations(data: bytes, count: int, seed: int) -> Iterator[tuple[str, bytes]]:
    """Seeded random damage to a real log: flipped bytes, cut tails, spliced-in junk, repeated lines."""
    rng = random.Random(seed)
    for n in range(count):
        kind = rng.choice(["flip", "cut", "splice", "repeat"])
        buf = bytearray(data)
        if not buf:
            yield f"{kind}-{n}", bytes(buf)
            continue
        if kind == "flip":
            for _ in range(max(1, len(buf) // 200)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif kind == "cut":
            del buf[rng.randrange(len(buf)) :]
        elif kind == "splice":
            at = rng.randrange(len(buf))
            buf[at:at] = rng.randbytes(rng.randrange(1, 300))
        else:
            lines = bytes(buf).splitlines(keepends=True)
            if lines:
                pick = rng.randrange(len(lines))
                lines[pick:pick] = [lines[pick]] * rng.randrange(2, 6)
            buf = bytearray(b"".join(lines))
        yield f"{kind}-{n}", bytes(buf)


def special_files(directory: Path, name: str) -> list[str]:
    """A FIFO, a socket, self-referencing and dangling links and a link to a directory, named like a log."""
    import socket

    directory.mkdir(parents=True, exist_ok=True)
    made: list[str] = []

    def spot(tag: str) -> Path:
        return directory / (f"{tag}-{name}" if not name.startswith(".") else f"{name}-{tag}")

    os.mkfifo(spot("fifo"))
    made.append("fifo")
    path = spot("sock")
    if len(str(path)) < 100:  # AF_UNIX paths are short
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
        made.append("socket")
    loop = spot("loop")
    loop.symlink_to(loop.name)
    made.append("self-link")
    spot("dangling").symlink_to(directory / "nowhere" / name)
    made.append("dangling-link")
    (directory / "a-dir").mkdir(exist_ok=True)
    spot("dirlink").symlink_to(directory / "a-dir")
    made.append("link-to-directory")
    return made


# -- secrets planted in every position ------------------------------------------------------------


class Planter:
    """Hands out unique fake secrets in formats the detector knows, and remembers each raw value."""

    def __init__(self, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.raw: list[str] = []

    def _chars(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def next(self) -> str:
        """A sentence fragment holding one secret; the secret's raw value is remembered."""
        alnum = string.ascii_letters + string.digits
        kind = len(self.raw) % 6
        if kind == 0:
            value = "ghp_" + self._chars(alnum, 36)
            text = f"token {value}"
        elif kind == 1:
            value = "AKIA" + self._chars(string.ascii_uppercase + string.digits, 16)
            text = f"key id {value}"
        elif kind == 2:
            value = "sk-ant-api03-" + self._chars(alnum, 40)
            text = f"Authorization: Bearer {value}"
        elif kind == 3:
            value = self._chars(string.ascii_lowercase, 6) + self._chars(string.digits, 4) + "Qz"
            text = f"password={value}"
        elif kind == 4:
            value = self._chars(alnum, 14)
            text = f"mysql -u root -p{value} shop"
        else:
            value = "npm_" + self._chars(alnum, 36)
            text = f"publish with {value}"
        self.raw.append(value)
        return text


def _prose(value: str) -> bool:
    # Free text (a message, a command, an output), not an identifier, enum or timestamp that a
    # parser relies on: only such strings get a secret, so the logs still parse.
    return " " in value.strip() and not value.strip()[:4].isdigit()


def plant_json(value: Any, planter: Planter) -> Any:
    if isinstance(value, str):
        return f"{value} {planter.next()}" if _prose(value) else value
    if isinstance(value, dict):
        return {k: plant_json(v, planter) for k, v in value.items()}
    if isinstance(value, list):
        return [plant_json(v, planter) for v in value]
    return value


_DATE = re.compile(rb"\d{4}-\d{2}-\d{2}")


def _plant_text_line(line: bytes, planter: Planter) -> bytes:
    body = line.rstrip(b"\r\n")
    ending = line[len(body) :]
    head, _, rest = body.partition(b":")
    if not body.strip() or (rest.strip().isdigit() and b" " not in head.strip()) or _DATE.search(body):
        return line  # a blank line, a `when: 1639162832` field, a dated header: structure, not text
    return body + b" " + planter.next().encode() + ending


def plant_file(path: Path, planter: Planter) -> None:
    """Put a secret into every free-text position of one log file, keeping its format readable."""
    data = path.read_bytes()
    if data.startswith(b"SQLite format 3\x00"):
        _plant_sqlite(path, planter)
        return
    try:
        whole = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        whole = None
    if isinstance(whole, dict | list):
        path.write_text(json.dumps(plant_json(whole, planter), ensure_ascii=False, indent=1), encoding="utf-8")
        return
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        try:
            parsed = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            out.append(_plant_text_line(line, planter))
            continue
        ending = b"\n" if line.endswith(b"\n") else b""
        out.append(json.dumps(plant_json(parsed, planter), ensure_ascii=False).encode("utf-8") + ending)
    path.write_bytes(b"".join(out))


def _plant_sqlite(path: Path, planter: Planter) -> None:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            listed = ", ".join(f'"{c}"' for c in columns)
            for rowid, *values in list(conn.execute(f'SELECT rowid, {listed} FROM "{table}"')):
                changed = {}
                for column, value in zip(columns, values, strict=True):
                    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                    if not isinstance(text, str):
                        continue
                    try:
                        planted = json.dumps(plant_json(json.loads(text), planter), ensure_ascii=False)
                    except ValueError:
                        planted = plant_json(text, planter)
                    if planted != text:
                        changed[column] = planted.encode() if isinstance(value, bytes) else planted
                if changed:
                    sets = ", ".join(f'"{c}" = ?' for c in changed)
                    conn.execute(f'UPDATE "{table}" SET {sets} WHERE rowid = ?', [*changed.values(), rowid])
        conn.commit()
    finally:
        conn.close()


def copy_sample(sample: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    target = into / sample.name
    if sample.is_dir():
        shutil.copytree(sample, target)
    else:
        shutil.copyfile(sample, target)
    return target


def files_under(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())


# -- what the database holds ----------------------------------------------------------------------


def all_text(db: Path) -> str:
    """Every value of every column of every table (virtual-table internals included), as one string."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        parts: list[str] = []
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            try:
                rows = list(conn.execute(f'SELECT * FROM "{name}"'))
            except apsw.Error:
                continue  # a virtual table that needs its extension; its shadow tables are read instead
            for row in rows:
                for value in row:
                    if isinstance(value, bytes):
                        parts.append(value.decode("utf-8", "replace"))
                    elif value is not None:
                        parts.append(str(value))
        return "\n".join(parts)
    finally:
        conn.close()


def db_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")) if p.is_file())


def integrity(db: Path) -> str:
    conn = apsw.Connection(str(db))
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    from engram_cli.store import connect

    store = connect(db)
    try:
        return [tuple(r) for r in store.rows(sql, params)]
    finally:
        store.close()


# -- processes ------------------------------------------------------------------------------------


def engram(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engram_cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def start(*args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "engram_cli", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


@dataclass
class Trial:
    delay: float
    mid_run: bool  # the process was still running when it was killed


def kill_after(proc: subprocess.Popen[bytes], delay: float) -> Trial:
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    mid_run = proc.poll() is None
    if mid_run:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return Trial(delay, mid_run)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    value = fn()
    return value, time.monotonic() - started
