"""--max-seconds bounds a run inside one file too: line readers stop at a line boundary and the next run goes
on from there; a file whose read is stuck past the deadline and a grace period is abandoned."""

from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.ingest import base, importer, limits, loader
from engram_cli.ingest.base import Batch, Cursor
from engram_cli.ingest.report import SourceReport

SESSION = "5d1e0c7a-8b2f-4e3d-9a6c-1f0e2d3c4b5a"


@dataclass(frozen=True)
class AfterChecks(limits.Deadline):
    """A deadline that passes after so many checks: where a read stops no longer depends on the clock."""

    at: float = float("inf")
    limit: int = 0
    checks: list[int] = field(default_factory=lambda: [0])

    def passed(self) -> bool:
        self.checks[0] += 1
        return self.checks[0] > self.limit


def _line(n: int) -> str:
    kind = "user" if n % 2 == 0 else "assistant"
    message: dict[str, Any] = {"role": kind, "content": f"Remember that service {n} listens on port {8000 + n}."}
    if kind == "assistant":
        message = {"id": f"m{n}", "role": kind, "model": "x", "content": [{"type": "text", "text": f"Noted {n}."}]}
    record = {
        "type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": SESSION,
        "cwd": "/home/dev/webshop", "timestamp": f"2026-11-02T09:{n // 60:02d}:{n % 60:02d}.000Z", "message": message,
    }  # fmt: skip
    return json.dumps(record) + "\n"


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "p" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(_line(n) for n in range(120)), encoding="utf-8")
    return path


def _run(engram: Engram, path: Path, deadline: limits.Deadline | None) -> tuple[loader.Loader, SourceReport]:
    load = loader.Loader(engram.ingest_port(), dry_run=False, namespace=None, progress=None, deadline=deadline)
    report = SourceReport("claude-code")
    load.run_source(importer("claude-code"), [path], report)
    return load, report


def _state(engram: Engram) -> list[tuple[Any, ...]]:
    memories = engram.store.rows("SELECT memory_type, content, importance FROM memories ORDER BY content")
    items = engram.store.rows("SELECT session_key, item_key FROM ingest_items ORDER BY item_key")
    return [tuple(r) for r in memories] + [tuple(r) for r in items]


def test_the_deadline_stops_a_long_log_at_a_line_and_the_next_run_finishes_it(
    transcript: Path, tmp_path: Path, engram: Engram
) -> None:
    reference = Engram.open(tmp_path / "reference.db")
    try:
        _run(reference, transcript, None)
        expected = _state(reference)
    finally:
        reference.close()

    # One check before the file, then one per line: the read stops after 10 lines.
    first, report = _run(engram, transcript, AfterChecks(limit=11))
    assert first.stopped_early and report.errors == []
    row = engram.store.one("SELECT size, byte_offset, state FROM ingest_cursors WHERE path = ?", (str(transcript),))
    assert row is not None
    size, offset, state = row
    lines = transcript.read_bytes().splitlines(keepends=True)
    assert offset == sum(len(line) for line in lines[:10]) and json.loads(state)["lines"] == 10
    assert size == -1  # never taken for "unchanged", though the file stays exactly as it is
    assert 0 < len(_state(engram)) < len(expected)

    second, report = _run(engram, transcript, None)
    assert not second.stopped_early and report.errors == []
    row = engram.store.one("SELECT size, byte_offset FROM ingest_cursors WHERE path = ?", (str(transcript),))
    assert row == (transcript.stat().st_size, transcript.stat().st_size)
    assert _state(engram) == expected
    _, report = _run(engram, transcript, None)
    assert report.changed == 0 and _state(engram) == expected


def test_complete_lines_ends_where_the_deadline_passes(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"a\nb\nc\nd\n")
    batch = Batch([], Cursor(str(path)))
    with limits.reading_until(AfterChecks(limit=2)):
        got = list(base.complete_lines(path, 0, batch))
    assert [raw for _, _, raw in got] == [b"a\n", b"b\n"] and batch.stopped
    rest = Batch([], Cursor(str(path)))
    assert [raw for _, _, raw in base.complete_lines(path, got[-1][1], rest, 2)] == [b"c\n", b"d\n"]
    assert not rest.stopped


@dataclass
class Stuck:
    """An importer whose read never ends (a parse that does not come back, a read that blocks)."""

    name: str = "claude-code"
    agent: str = "claude-code"
    description: str = "a stuck reader"
    reads: list[Path] = field(default_factory=list)

    def locate(self, env: Any, home: Path) -> list[Path]:
        return []

    def files(self, path: Path) -> list[Path]:
        return [path.parent / "a.jsonl", path.parent / "b.jsonl"]

    def read(self, path: Path, cursor: Cursor | None) -> Batch:
        self.reads.append(path)
        give_up = time.monotonic() + 60  # the test fails rather than hangs if the backstop never fires
        while time.monotonic() < give_up:
            time.sleep(0.01)
        return Batch([], Cursor(str(path)))


def test_a_read_stuck_past_the_deadline_and_grace_is_abandoned_and_the_run_ends(
    tmp_path: Path, engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "HARD_STOP_GRACE_S", 0.3)
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text("{}\n")
    stuck = Stuck()
    before = signal.getsignal(signal.SIGALRM)
    load = loader.Loader(
        engram.ingest_port(), dry_run=False, namespace=None, progress=None, deadline=limits.Deadline.after(0.2)
    )
    report = SourceReport("claude-code")
    started = time.monotonic()
    load.run_source(stuck, stuck.files(tmp_path / "a.jsonl"), report)
    assert time.monotonic() - started < 30
    assert load.abandoned == [str(tmp_path / "a.jsonl")] and load.stopped_early
    assert stuck.reads == [tmp_path / "a.jsonl"]  # the run ended there: b was not started
    assert any("left for the next run" in note for note in report.notes)
    assert engram.store.scalar("SELECT count(*) FROM ingest_cursors") == 0  # nothing of it written
    assert signal.getsignal(signal.SIGALRM) == before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_cli_says_which_file_it_gave_up_on_and_exits_0(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "HARD_STOP_GRACE_S", 0.3)
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text("{}\n")
    monkeypatch.setattr(loader, "importer", lambda name: Stuck())
    args = ("ingest", "claude-code", "--path", str(tmp_path / "a.jsonl"), "--max-seconds", "0.2")
    result = cli(*args)
    assert f"gave up on {tmp_path / 'a.jsonl'}" in result.stderr and "read again on the next run" in result.stderr
    assert "stopped at --max-seconds" in result.stderr
    report = json.loads(cli(*args, "--json").stdout)
    assert report["stopped_early"] is True and report["abandoned"] == [str(tmp_path / "a.jsonl")]


def test_the_backstop_does_nothing_outside_the_main_thread() -> None:
    outcome: list[str] = []

    def work() -> None:
        with limits.hard_stop(0.01):
            time.sleep(0.1)
        outcome.append("finished")

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(10)
    assert outcome == ["finished"]


def test_the_backstop_interrupts_the_main_thread_and_cleans_up() -> None:
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(limits.Abandoned), limits.hard_stop(0.05):
        time.sleep(10)
    assert signal.getsignal(signal.SIGALRM) == before
    with limits.hard_stop(5):
        pass  # finishing in time raises nothing, and leaves no timer running
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def _swallowing(busy_s: float, keep: int | None) -> tuple[int, float]:
    """Work for up to ``busy_s`` under a 10 ms backstop, swallowing the first ``keep`` alarms (None: every one), as
    Python does with an exception raised in a garbage collection callback or a finaliser. Returns how many were
    swallowed and the seconds the block took; the backstop must end it with Abandoned, its timer stopped."""
    swallowed = 0
    began = time.monotonic()
    with pytest.raises(limits.Abandoned), limits.hard_stop(0.01):
        while time.monotonic() - began < busy_s:
            try:
                time.sleep(0.001)
            except limits.Abandoned:
                if keep is not None and swallowed >= keep:
                    raise
                swallowed += 1
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    return swallowed, time.monotonic() - began


def test_the_backstop_rings_again_when_an_alarm_is_swallowed() -> None:
    swallowed, took = _swallowing(5, keep=1)
    assert swallowed == 1 and took < 2


def test_a_block_that_ends_after_a_swallowed_alarm_is_abandoned_as_it_leaves() -> None:
    # Every alarm is swallowed, and the block ends on its own past its time.
    swallowed, _ = _swallowing(0.2, keep=None)
    assert swallowed >= 1
