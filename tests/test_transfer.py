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
    mem.add("From now on send the weekly report via WeCom instead of email", namespace="global")
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
    only_global = cli("export").stdout.splitlines()  # outside a git repository: the global scope
    assert [json.loads(x)["namespace"] for x in only_global] == ["global"]
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


GOOD = json.dumps({"content": "The staging database runs on port 5433"})


def test_a_deeply_nested_line_is_a_bad_line_like_any_other(engram: Engram) -> None:
    past_the_parser = '{"content": "x", "metadata": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    past_our_limit = '{"content": "y", "metadata": {"a": ' + "[" * 150 + "]" * 150 + "}}"
    report = engram.import_lines([past_the_parser, GOOD, past_our_limit])
    assert report.imported == 1
    assert [e["line"] for e in report.errors] == [1, 3]
    assert all("nested too deeply" in e["error"] for e in report.errors)


def test_minimal_records_are_completed_like_add(engram: Engram, rows: Any) -> None:
    everything = {
        "content": "Fixed the flaky login test", "type": "episodic", "namespace": "webapp", "agent": "claude-code",
        "importance": 0.8, "at": "2026-03-01T10:00:00+02:00", "metadata": {"ticket": "WEB-9"}, "session": "s-42",
        "summary": "login test fix", "source": "notes.md:12",
    }  # fmt: skip
    lines = [
        json.dumps({"content": "Run migrations with make migrate", "tags": ["DB"], "type": "procedural"}),
        json.dumps(everything),
    ]
    report = engram.import_lines(lines)
    assert report.imported == 2 and report.errors == []
    by_text = {m.content: engram.get(m.id) for m in engram.list(all_namespaces=True, limit=5)}
    first, second = by_text["Run migrations with make migrate"], by_text["Fixed the flaky login test"]
    assert first.type == "procedural" and first.tags == ["db"] and first.namespace == "global"
    assert first.agent == "user" and first.access_count == 0 and first.decay_score == 1.0 and len(first.id) == 36
    assert first.embedding_model == engram.active_model
    assert (second.namespace, second.agent, second.session, second.summary) == (
        "webapp",
        "claude-code",
        "s-42",
        "login test fix",
    )
    assert second.created_at == "2026-03-01T08:00:00.000000Z" and second.importance == 0.8
    assert second.metadata == {"ticket": "WEB-9"}
    assert [(s.kind, s.ref) for s in second.sources] == [("import", "notes.md:12")]
    assert [e.kind for e in engram.history(second.id)[1]] == ["created"]
    assert engram.recall("how do I run migrations", k=1)[0].memory.id == first.id
    again = engram.import_lines(lines)  # the same text in the same namespace and agent is already there
    assert again.imported == 0 and again.skipped_existing == 2


def test_a_minimal_record_with_a_field_add_does_not_take_says_what_it_takes(engram: Engram) -> None:
    report = engram.import_lines([json.dumps({"content": "x", "status": "archived"})])
    (error,) = report.errors
    assert "status" in error["error"] and "`engram add` takes" in error["error"] and "'id'" in error["error"]


SECRET = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"


def test_import_redacts_every_text_before_it_is_stored(tmp_path: Path) -> None:
    with Engram.open(tmp_path / "a.db") as a:
        a.add("Deploys go through make release", summary="release", metadata={"k": "v"})
        line = _export(a)[0]
    line["content"] = f"Deploys use the token {SECRET}"
    line["summary"] = f"token {SECRET}"
    line["metadata"] = {"api_key": "zz-top-secret-value", "nested": [f"see {SECRET}"]}
    line["sources"][0].update(content=f"raw {SECRET}", ref=f"https://bob:s3cretPassw0rd@example.com/{SECRET}",
                              metadata={"password": "hunter2hunter2"})  # fmt: skip
    line["events"][0].update(note=f"by {SECRET}", after={"content": f"was {SECRET}"}, before={"x": SECRET})
    minimal = {"content": f"password=hunter2hunter2 and {SECRET}", "metadata": {"token": "abcdefabcdef12"}}
    target = tmp_path / "b.db"
    with Engram.open(target) as b:
        report = b.import_lines([json.dumps(line), json.dumps(minimal)])
        assert report.imported == 2 and report.redacted == 2
        stored = _export(b)
        assert stored[0]["content"] == "Deploys use the token [REDACTED:github-token]"
        b.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    everything = json.dumps(stored)
    for secret in (SECRET, "zz-top-secret-value", "s3cretPassw0rd", "hunter2hunter2", "abcdefabcdef12"):
        assert secret not in everything
        assert secret.encode() not in target.read_bytes()


def test_lone_surrogates_and_invalid_utf8_are_replaced_not_fatal(cli: Any, tmp_path: Path, engram: Engram) -> None:
    lines = [json.dumps({"content": "caf\ud800 au lait"}), GOOD]  # json.dumps spells the surrogate \\ud800
    report = engram.import_lines(lines)
    assert report.imported == 2 and report.errors == []
    assert {m.content for m in engram.list(limit=5)} == {"caf\ufffd au lait", "The staging database runs on port 5433"}
    raw = tmp_path / "latin1.jsonl"
    raw.write_bytes(b'{"content": "cr\xe8me br\xfbl\xe9e"}\n' + GOOD.encode() + b"\n")
    summary = json.loads(cli("--db", str(tmp_path / "c.db"), "import", str(raw), "--json").stdout)
    assert summary["imported"] == 2 and summary["errors"] == []


def test_import_fails_when_every_line_is_bad(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nope": 1}\n\nnot json\n', encoding="utf-8")
    result = cli("import", str(bad), ok=False)
    assert result.exit_code == 1
    assert "line 1:" in result.stderr and "line 3:" in result.stderr and "nothing was imported" in result.stderr
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(GOOD + "\nnot json\n", encoding="utf-8")
    assert cli("import", str(mixed)).exit_code == 0
