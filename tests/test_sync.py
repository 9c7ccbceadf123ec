"""Export/import as a sync: two databases that diverge and exchange exports both ways end up equal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from engram_cli import Engram
from engram_cli.errors import NotFound


def _lines(mem: Engram) -> list[str]:
    return [json.dumps(line, ensure_ascii=False, sort_keys=True) for line in mem.export(all_namespaces=True)]


def _send(source: Engram, dest: Engram) -> Any:
    report = dest.import_lines(_lines(source))
    assert report.errors == []
    return report


def _rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The tables as sets of rows without their local row numbers (pks differ between two databases)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        queries = {
            "memories": "SELECT id, namespace, agent_id, memory_type, content, content_hash, importance, status, "
            "version, updated_at, superseded_by, consolidated_into, mkey, metadata FROM memories",
            "tags": "SELECT m.id, t.tag FROM tags t JOIN memories m ON m.pk = t.memory_pk",
            "sources": "SELECT m.id, s.kind, s.ref, s.content, s.metadata, s.created_at "
            "FROM sources s JOIN memories m ON m.pk = s.memory_pk",
            "events": "SELECT memory_id, kind, at, note, before, after FROM events",
            "keywords": "SELECT m.id FROM memories m WHERE m.pk IN (SELECT rowid FROM memory_fts)",
        }
        return {name: sorted(conn.execute(sql).fetchall(), key=repr) for name, sql in queries.items()}
    finally:
        conn.close()


@pytest.fixture
def pair(tmp_path: Path) -> Any:
    with Engram.open(tmp_path / "laptop.db") as a, Engram.open(tmp_path / "desktop.db") as b:
        yield a, b


def test_two_databases_that_diverge_end_equal_after_exchanging_exports_both_ways(pair: Any, tmp_path: Path) -> None:
    a, b = pair
    # A shared start: everything A knows, B imports.
    node = a.add("CI uses Node 20", namespace="webshop", tags=["ci"])
    report = a.add("Send the weekly report by email", namespace="global")
    printer = a.add("The office printer is on floor two", namespace="global")
    token = a.add("The staging password is hunter2 on the old box", namespace="webshop")
    port = a.add("The staging database runs on port 5433", namespace="webshop")
    a.set("user:tz", "Europe/Berlin", namespace="global")
    _send(a, b)
    assert _lines(a) == _lines(b)

    # Laptop: a correction that supersedes, an edit, a forget, a key update.
    a.add("CI uses Node 22 now, not Node 20", namespace="webshop", supersedes=node.id)
    a.edit(report.id, text="Send the weekly report via WeCom", tags=["ops"])
    a.forget(printer.id, all_namespaces=True)
    a.set("user:tz", "Europe/Paris", namespace="global")
    a.set("user:editor", "vim", namespace="global")  # set on both machines, apart
    a.add("数据库迁移脚本放在 scripts/migrate 目录下", namespace="webshop")

    # Desktop: a purge, an edit of another field, the same fact learned again, the same key set later.
    b.forget(token.id, hard=True, all_namespaces=True)
    b.edit(port.id, importance=0.9, type="procedural")
    b.add("数据库迁移脚本放在 scripts/migrate 目录下", namespace="webshop")
    b.set("user:editor", "helix", namespace="global")
    b.set("deploy:geo-tiles", "make tiles && make publish", namespace="webshop", type="procedural")

    _send(a, b)
    _send(b, a)
    assert _lines(a) == _lines(b)
    assert _rows(tmp_path / "laptop.db") == _rows(tmp_path / "desktop.db")

    # What each change became on both sides.
    for mem in (a, b):
        assert mem.get(node.id).status == "superseded"
        assert mem.get(report.id).content == "Send the weekly report via WeCom"
        assert mem.get(printer.id).status == "archived"
        assert mem.get(port.id).importance == 0.9
        assert mem.lookup("user:tz", namespace="global", touch=False).value == "Europe/Paris"
        assert mem.lookup("user:editor", namespace="global", touch=False).value == "helix"  # set later
        assert mem.lookup("deploy:geo-tiles", namespace="webshop", touch=False).type == "procedural"
        # Learned on both machines: one memory.
        assert [m.content for m in mem.list(namespace="webshop", limit=50) if "迁移" in m.content] == [
            "数据库迁移脚本放在 scripts/migrate 目录下"
        ]
        assert "hunter2" not in "".join(_lines(mem))
        with pytest.raises(NotFound):
            mem.get(token.id)

    # A second exchange changes nothing.
    before = _lines(a)
    assert _send(a, b).updated == 0 and _send(b, a).updated == 0
    assert _lines(a) == _lines(b) == before


def test_a_tombstone_purges_the_memory_and_keeps_it_from_coming_back(pair: Any, tmp_path: Path) -> None:
    a, b = pair
    secret = a.add("The deploy key is kept in the blue binder", namespace="ops")
    kept = a.add("Deploys happen on Tuesdays", namespace="ops")
    _send(a, b)
    old_export = _lines(b)

    a.forget(secret.id, hard=True, all_namespaces=True)
    tombstones = [json.loads(line) for line in _lines(a) if '"tombstone": true' in line]
    assert [(t["id"], t["version"] > secret.memory.version) for t in tombstones] == [(secret.id, True)]
    assert "blue binder" not in "".join(_lines(a))

    report = _send(a, b)
    assert report.purged == 1
    db = tmp_path / "desktop.db"
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT count(*) FROM memories WHERE id = ?", (secret.id,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'binder'").fetchone() == (0,)
        kinds = [r[0] for r in conn.execute("SELECT kind FROM events WHERE memory_id = ?", (secret.id,))]
        assert "deleted" in kinds
    finally:
        conn.close()
    assert b.get(kept.id).status == "active"
    assert b.recall("where is the deploy key kept", namespace="ops", bump=False)[0].memory.id == kept.id

    # An export made before the purge cannot bring it back.
    again = b.import_lines(old_export)
    assert again.imported == 0
    assert all(line.find(secret.id) == -1 or '"tombstone": true' in line for line in _lines(b))
