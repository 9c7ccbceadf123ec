"""store/ingest_state: the statements behind cursors, session digests and extracted items."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engram_cli.store.ingest_state import CursorRow, KnownItem

INGEST = Path(__file__).resolve().parent.parent / "engram_cli" / "ingest"


def _save(store: Any, **changes: Any) -> None:
    fields: dict[str, Any] = {
        "path": "/logs/s-1.jsonl", "inode": 42, "size": 900, "mtime_ns": 17, "offset": 880,
        "last_id": "u9", "last_at": "2026-11-02T09:00:00Z", "state": '{"lines":9}',
    }  # fmt: skip
    with store.write():
        store.ingest.save_cursor("claude-code", **{**fields, **changes})


def test_a_cursor_is_saved_read_back_and_replaced_in_place(engram: Any) -> None:
    store = engram.store
    assert store.ingest.cursor("/logs/s-1.jsonl") is None
    _save(store)
    first = store.ingest.cursor("/logs/s-1.jsonl")
    assert first is not None and first == CursorRow(
        "/logs/s-1.jsonl", 42, 900, 17, 880, "u9", "2026-11-02T09:00:00Z", '{"lines":9}', first.updated_at
    )
    _save(store, size=1200, offset=1200, state='{"lines":12}', inode=None)
    again = store.ingest.cursor("/logs/s-1.jsonl")
    assert again is not None and (again.inode, again.size, again.offset, again.state) == (
        None,
        1200,
        1200,
        '{"lines":12}',
    )
    assert store.scalar("SELECT count(*) FROM ingest_cursors") == 1


def test_a_digest_is_none_until_saved_and_keeps_its_text(engram: Any) -> None:
    store = engram.store
    assert store.ingest.digest("codex", "s-1") is None
    text = json.dumps({"task": "修复登录测试", "v": 1}, ensure_ascii=False)
    with store.write():
        store.ingest.save_digest("codex", "s-1", path="/a.jsonl", namespace="webshop", digest=text)
        store.ingest.save_digest("codex", "s-1", path="/b.jsonl", namespace="webshop", digest="{}")
    assert store.ingest.digest("codex", "s-1") == "{}"
    assert store.ingest.digest("claude-code", "s-1") is None  # digests are per source
    assert store.rows("SELECT path, namespace FROM ingest_sessions") == [("/b.jsonl", "webshop")]


def test_items_are_known_by_source_session_and_key_and_counted_per_source(engram: Any) -> None:
    store = engram.store
    assert store.ingest.known_item("aider", "s-1", "episode") is None
    with store.write():
        store.ingest.remember_item("aider", "s-1", "episode", memory_id="m1", content_hash="h1", at="t1")
        store.ingest.remember_item("aider", "s-1", "episode", memory_id="m1", content_hash="h2", at="t2")
        store.ingest.remember_item("aider", "s-2", "pref:u1", memory_id="m2", content_hash="h3", at="t2")
        store.ingest.save_digest("aider", "s-1", path="/h.md", namespace="default", digest="{}")
    assert store.ingest.known_item("aider", "s-1", "episode") == KnownItem("m1", "h2")
    assert store.ingest.known_item("codex", "s-1", "episode") is None
    assert store.ingest.counts("aider") == (1, 2)
    assert store.ingest.counts("codex") == (0, 0)


def test_the_ingest_engine_leaves_every_statement_to_the_store() -> None:
    for name in ("loader.py", "listing.py"):
        source = (INGEST / name).read_text(encoding="utf-8")
        assert not re.search(r"\b(?:SELECT|INSERT|UPDATE|DELETE)\s", source), name
