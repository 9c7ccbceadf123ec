"""Real engram databases with chosen pages overwritten, for test_damage and test_recover.

The pages to damage are found with SQLite's dbstat table; which rows a damaged page held is
read from the page bytes of the undamaged copy, so the tests never ask SQLite, the thing under
test, what was lost.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import os
import random
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

PAGE = 4096
MEMORIES = 300
TOPICS = ["deploy", "backup", "billing", "search", "auth", "queue", "cache", "metrics", "release", "schema"]
ZH_TOPICS = ["部署", "备份", "账单", "搜索", "登录", "队列", "缓存", "监控", "发布", "迁移"]


def records(n: int = MEMORIES) -> list[dict[str, Any]]:
    """Distinct memories, one in five in Chinese, each with a tag and the word ``marker<i>``."""
    out = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        if i % 5 == 4:
            text = (
                f"第{i}条记录：{ZH_TOPICS[i % len(ZH_TOPICS)]}的负责人是第{i % 17}组，每周{i % 7 + 1}检查一次 marker{i}"
            )
        else:
            text = (
                f"Note {i} about {topic}: the {topic} job for service-{i % 13} runs on host-{i % 29} "
                f"every {i % 11 + 1} hours and pages team-{i % 7} when it fails (marker{i})"
            )
        out.append({"content": text, "tags": [topic, f"n{i % 3}"], "type": "episodic" if i % 4 == 0 else "semantic"})
    return out


def build(path: Path, n: int = MEMORIES) -> None:
    """An engram database of ``n`` memories made through the API, checkpointed and closed."""
    from engram_cli import Engram

    with pytest.MonkeyPatch.context() as mp:
        for name in [v for v in os.environ if v.startswith("ENGRAM_")]:
            mp.delenv(name)
        mp.setenv("ENGRAM_HOME", str(path.parent / "home"))
        mp.setenv("HOME", str(path.parent / "home"))
        # Opened outside any git repository, so the memories are in the global scope the tests read.
        with Engram.open(path, cwd=path.parent) as mem:
            mem.add_many(records(n), no_merge=True)
            mem.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def pristine(factory: pytest.TempPathFactory) -> Path:
    """One undamaged database per test session, shared by the test files that damage copies of it."""
    path = factory.getbasetemp() / "pristine" / "engram.db"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        building = path.with_name("building.db")
        build(building)
        building.rename(path)
    return path


def place(pristine: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pristine, target)
    target.chmod(0o600)
    return target


def raw(path: Path) -> apsw.Connection:
    """A connection that reads the file as it is, leaving nothing beside it."""
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    return apsw.Connection(f"{path.absolute().as_uri()}?immutable=1", flags=flags)


def pages(path: Path, name: str, pagetype: str | None = None) -> list[int]:
    """The pages of a table or index, in key order (dbstat's path), optionally only one type."""
    conn = raw(path)
    try:
        rows = conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND (? IS NULL OR pagetype = ?) ORDER BY path",
            (name, pagetype, pagetype),
        ).fetchall()
    finally:
        conn.close()
    return [int(r[0]) for r in rows]


def root_page(path: Path, name: str) -> int:
    conn = raw(path)
    try:
        return int(conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0])
    finally:
        conn.close()


def corrupt(path: Path, numbers: list[int], seed: int = 7) -> None:
    """Overwrite whole pages with random bytes, the way a bad disk sector or a stray write would."""
    rnd = random.Random(seed)
    with open(path, "r+b") as fh:
        for number in numbers:
            fh.seek((number - 1) * PAGE)
            fh.write(rnd.randbytes(PAGE))


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = data[at + i]
        if i == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    raise AssertionError("unreachable")


def rowids_on(path: Path, number: int) -> list[int]:
    """The rowids a table leaf page holds, parsed from the file's bytes (SQLite's file format, 1.6)."""
    with open(path, "rb") as fh:
        fh.seek((number - 1) * PAGE)
        data = fh.read(PAGE)
    base = 100 if number == 1 else 0
    assert data[base] == 0x0D, f"page {number} is not a table leaf"
    cells = int.from_bytes(data[base + 3 : base + 5], "big")
    out = []
    for i in range(cells):
        pointer = int.from_bytes(data[base + 8 + 2 * i : base + 10 + 2 * i], "big")
        _, after_size = _varint(data, pointer)
        out.append(_varint(data, after_size)[0])
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- read-only files, also for root ------------------------------------------------------------

_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS, _FS_IMMUTABLE_FL = 0x80086601, 0x40086602, 0x10


def _immutable(path: Path, on: bool) -> None:
    import fcntl

    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        flags = array.array("i", [0])
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, flags, True)
        flags[0] = flags[0] | _FS_IMMUTABLE_FL if on else flags[0] & ~_FS_IMMUTABLE_FL
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, flags)
    finally:
        os.close(fd)


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make a file or directory unwritable for this process: by its mode, and for root (whom modes do
    not stop) by the file system's immutable flag; skip the test where neither can be done."""
    if path.is_dir() and sys.platform == "win32":
        pytest.skip("Windows has no read-only directories")
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod(mode & ~0o222)
    immutable = False
    try:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            try:
                _immutable(path, True)
                immutable = True
            except OSError:
                pytest.skip("running as root on a file system without an immutable flag")
        assert not os.access(path, os.W_OK)
        yield
    finally:
        if immutable:
            _immutable(path, False)
        path.chmod(mode)
