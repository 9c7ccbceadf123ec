"""Ingest reads files a window at a time and embeds the window's texts together; it ends as file by file would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.ingest import loader


def _chat(path: Path, session: str, lines: list[tuple[str, str]], day: int) -> None:
    rows = [
        {"session": session, "role": role, "text": text, "time": f"2026-11-{day:02d}T09:{i:02d}:00Z",
         "id": f"{path.stem}-{i}"}
        for i, (role, text) in enumerate(lines)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _logs(folder: Path) -> Path:
    """Three files; the conversation "deploys" goes on from a.jsonl in c.jsonl."""
    folder.mkdir()
    _chat(folder / "a.jsonl", "deploys", [
        ("user", "Remember that we always deploy with `make release`."), ("assistant", "Noted."),
        ("user", "We decided to use pnpm instead of npm in the frontend."), ("assistant", "Understood."),
    ], 1)  # fmt: skip
    _chat(folder / "b.jsonl", "billing", [
        ("user", "Remember that invoices are generated on the first of the month."), ("assistant", "Noted."),
    ], 2)  # fmt: skip
    _chat(folder / "c.jsonl", "deploys", [
        ("user", "Actually, we deploy with `make ship` now, not `make release`."), ("assistant", "Noted."),
        ("user", "Remember that we always deploy with `make release`."), ("assistant", "Noted."),
    ], 3)  # fmt: skip
    return folder


def _state(db: Path) -> dict[str, Any]:
    with Engram.open(db) as mem:
        memories = sorted(
            (m.namespace, m.type, m.status, m.content)
            for m in mem.list(all_namespaces=True, limit=100, include_superseded=True)
        )
        items = sorted(
            (r[0], r[1], r[2])
            for r in mem.store.rows("SELECT source, session_key, item_key FROM ingest_items")
        )  # fmt: skip
        digests = sorted(tuple(r) for r in mem.store.rows("SELECT source, session_key, digest FROM ingest_sessions"))
    return {"memories": memories, "items": items, "digests": digests}


def test_a_window_ends_as_writing_each_file_before_reading_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _logs(tmp_path / "chats")
    with Engram.open(tmp_path / "windowed.db") as mem:
        report = mem.ingest("chat", path=folder)
    assert report.sources[0].files == 3 and not report.sources[0].errors
    monkeypatch.setattr(loader, "WINDOW_FILES", 1)
    with Engram.open(tmp_path / "one-by-one.db") as mem:
        mem.ingest("chat", path=folder)
    windowed = _state(tmp_path / "windowed.db")
    assert windowed["memories"] and windowed == _state(tmp_path / "one-by-one.db")


def test_a_file_continuing_a_session_of_the_window_waits_for_the_window_to_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _logs(tmp_path / "chats")
    flushed: list[list[str]] = []
    flush = loader.Loader._flush

    def spy(self: loader.Loader, imp: Any, window: Any, report: Any) -> None:
        if window.plans:
            flushed.append([Path(p.path).name for p in window.plans])
        flush(self, imp, window, report)

    monkeypatch.setattr(loader.Loader, "_flush", spy)
    with Engram.open(tmp_path / "e.db") as mem:
        mem.ingest("chat", path=folder)
    assert flushed == [["a.jsonl", "b.jsonl"], ["c.jsonl"]]


def test_a_window_flushes_at_its_text_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _logs(tmp_path / "chats")
    monkeypatch.setattr(loader, "WINDOW_TEXTS", 1)
    flushed: list[int] = []
    flush = loader.Loader._flush

    def spy(self: loader.Loader, imp: Any, window: Any, report: Any) -> None:
        if window.plans:
            flushed.append(len(window.plans))
        flush(self, imp, window, report)

    monkeypatch.setattr(loader.Loader, "_flush", spy)
    with Engram.open(tmp_path / "e.db") as mem:
        mem.ingest("chat", path=folder)
    assert flushed == [1, 1, 1]


def test_the_model_loads_in_a_thread_while_files_are_read_and_only_when_there_is_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from engram_cli.embed.onnx import OnnxEmbedder

    folder = _logs(tmp_path / "chats")
    calls: list[str] = []
    warm = OnnxEmbedder.warm

    def recorded(self: OnnxEmbedder) -> None:
        calls.append(threading.current_thread().name)
        warm(self)

    monkeypatch.setattr(OnnxEmbedder, "warm", recorded)
    with Engram.open(tmp_path / "warm.db") as mem:
        assert mem.ingest("chat", path=folder, dry_run=True).sources[0].files == 3
        assert calls == []  # a dry run embeds nothing
        report = mem.ingest("chat", path=folder)
        assert calls == ["engram-model-warm-up"]
        assert not any(t.name == "engram-model-warm-up" for t in threading.enumerate())  # joined
        assert report.sources[0].memories
        mem.ingest("chat", path=folder)  # nothing new: nothing to load
        assert calls == ["engram-model-warm-up"]
