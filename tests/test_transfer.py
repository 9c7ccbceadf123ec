"""export and import: JSONL round trips, bad lines, --atomic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli import Engram
from engram_cli.errors import InvalidInput


def _export(mem: Engram, **kw: Any) -> list[dict[str, Any]]:
    return list(mem.export(all_namespaces=True, **kw))


def _populate(mem: Engram) -> None:
    mem.add("Send the weekly report by email", tags=["ops"], metadata={"k": [1, "二"]})
    mem.add("From now on send the weekly report via WeCom instead of email", namespace="default")
    mem.add("数据库迁移脚本放在 scripts/migrate 目录下", namespace="zh", source={"kind": "file", "ref": "notes.md:3"})
    gone = mem.add("The office printer is on floor two")
    mem.forget(gone.id)


def test_export_import_export_is_identical(tmp_path: Path) -> None:
    with Engram.open(tmp_path / "a.db") as a:
        _populate(a)
        first = _export(a)
    with Engram.open(tmp_path / "b.db") as b:
        report = b.import_lines(json.dumps(line, ensure_ascii=False) for line in first)
        assert report.imported == len(first) and report.errors == []
        second = _export(b)
        assert second == first
        # The imported store works: recall finds the correction, not what it superseded.
        assert b.recall("how do I send the weekly report", k=1)[0].memory.content.startswith("From now on")


def test_vectors_travel_when_asked(tmp_path: Path) -> None:
    with Engram.open(tmp_path / "a.db") as a:
        a.add("The staging database runs on port 5433")
        lines = _export(a, with_vectors=True)
    assert lines[0]["vector"]["dim"] == 384
    with Engram.open(tmp_path / "b.db") as b:
        b.import_lines(json.dumps(line) for line in lines)
        assert _export(b, with_vectors=True)[0]["vector"] == lines[0]["vector"]


def test_bad_lines_are_reported_and_the_rest_imported(tmp_path: Path) -> None:
    with Engram.open(tmp_path / "a.db") as a:
        a.add("The staging database runs on port 5433")
        good = json.dumps(_export(a)[0])
    bad_count = json.loads(good) | {"id": "y", "content": "other", "access_count": "many"}
    broken = ["{not json", json.dumps({"id": "x", "content": ""}), "\udcff bad bytes", json.dumps(bad_count)]
    with Engram.open(tmp_path / "b.db") as b:
        report = b.import_lines([broken[0], good, broken[1], broken[2], broken[3]])
        assert report.imported == 1
        assert [e["line"] for e in report.errors] == [1, 3, 4, 5]
        assert "access_count" in report.errors[3]["error"]
        assert "UTF-8" in report.errors[2]["error"]
        again = b.import_lines([good])
        assert again.imported == 0 and again.skipped_existing == 1


def test_atomic_imports_nothing_when_a_line_is_bad(tmp_path: Path) -> None:
    with Engram.open(tmp_path / "a.db") as a:
        a.add("The staging database runs on port 5433")
        good = json.dumps(_export(a)[0])
    with Engram.open(tmp_path / "b.db") as b:
        with pytest.raises(InvalidInput, match="line 2"):
            b.import_lines([good, "{oops"], atomic=True)
        assert _export(b) == []


def test_cli_export_and_import(cli: Any, tmp_path: Path) -> None:
    cli("add", "Deploys go through make release", "-t", "ops")
    cli("add", "alpha uses Helm", "-n", "alpha")
    out = tmp_path / "dump.jsonl"
    cli("export", str(out), "--all-namespaces")
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2
    only_default = cli("export").stdout.splitlines()
    assert [json.loads(x)["namespace"] for x in only_default] == ["default"]
    other = tmp_path / "other.db"
    summary = json.loads(cli("--db", str(other), "import", str(out), "--json").stdout)
    assert summary["imported"] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(out.read_bytes() + b"{broken\n")
    result = cli("--db", str(tmp_path / "third.db"), "import", str(bad), "--atomic", ok=False)
    assert result.exit_code == 1 and "line 3" in result.stderr


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda s: s.strip()
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.tuples(texts, st.dictionaries(st.text(max_size=5), st.text(max_size=8), max_size=2)),
                      min_size=1, max_size=3, unique_by=lambda t: t[0].strip().casefold()))  # fmt: skip
def test_round_trip_property(tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, dict[str, str]]]) -> None:
    base = tmp_path_factory.mktemp("rt")
    with Engram.open(base / "a.db") as a:
        for content, meta in items:
            a.add(content, metadata=meta, no_merge=True)
        first = _export(a)
    with Engram.open(base / "b.db") as b:
        b.import_lines(json.dumps(line, ensure_ascii=False) for line in first)
        assert _export(b) == first
