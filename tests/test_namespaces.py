"""A namespace is one name wherever it is typed: trimmed and NFC on every path, or refused with a hint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

NOW = "2027-01-01T00:00:00Z"
FACT = "Deploys go through make release"


def _json(cli: Any, *args: str) -> Any:
    return json.loads(cli(*args, "--json").stdout)


def test_every_verb_trims_the_namespace_as_add_does(cli: Any, rows: Any, tmp_path: Path) -> None:
    memory_id = _json(cli, "add", FACT, "-n", "A ")["id"]
    assert rows("SELECT namespace FROM memories") == [("A",)]
    assert [h["id"] for h in _json(cli, "recall", "release", "-n", "A ")] == [memory_id]
    assert [h["id"] for h in _json(cli, "recall", "release", "-n", " A")] == [memory_id]
    assert [m["id"] for m in _json(cli, "list", "-n", "\u3000A ")] == [memory_id]  # an ideographic space too
    exported = cli("export", "-n", "A ").stdout.splitlines()
    assert [json.loads(line)["id"] for line in exported] == [memory_id]
    assert _json(cli, "decay", "-n", "A ", "--dry-run", "--now", NOW)["scanned"] == 1
    assert _json(cli, "compact", "-n", " A ", "--dry-run", "--now", NOW)["scanned"] == 1
    assert _json(cli, "audit", "-n", "A ")["namespaces"] == ["A"]


def test_a_namespace_is_compared_in_nfc(cli: Any, rows: Any) -> None:
    cli("add", FACT, "-n", "cafe\u0301")  # e + combining acute accent
    assert rows("SELECT namespace FROM memories") == [("caf\u00e9",)]
    assert len(_json(cli, "recall", "release", "-n", "caf\u00e9")) == 1


def test_the_configured_namespace_is_trimmed_too(cli: Any, rows: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_NAMESPACE", " webshop ")
    cli("add", FACT)
    assert rows("SELECT namespace FROM memories") == [("webshop",)]
    assert len(_json(cli, "recall", "release")) == 1
    assert len(_json(cli, "recall", "release", "-n", "webshop")) == 1


def test_ingest_stores_under_the_trimmed_namespace(cli: Any, rows: Any, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text("# Deploy\n\nDeploys go through make release after a green CI run.\n")
    cli("ingest", "notes", "--path", str(notes), "-n", " docs ")
    assert {r[0] for r in rows("SELECT namespace FROM memories")} == {"docs"}
    assert len(_json(cli, "recall", "release", "-n", "docs ")) == 1


BAD_NAMES = [
    ("", "must not be empty"),
    ("   ", "must not be empty"),
    ("a\tb", "control character"),
    ("a\nb", "control character"),
    ("x" * 201, "characters long (limit 200)"),
]
VERBS = [
    ("add", FACT),
    ("recall", "release"),
    ("list",),
    ("export",),
    ("decay", "--dry-run"),
    ("compact", "--dry-run"),
    ("audit",),
]


@pytest.mark.parametrize("verb", VERBS, ids=[v[0] for v in VERBS])
@pytest.mark.parametrize(("name", "message"), BAD_NAMES, ids=["empty", "blank", "tab", "newline", "long"])
def test_a_bad_namespace_is_refused_with_a_hint(
    cli: Any, rows: Any, verb: tuple[str, ...], name: str, message: str
) -> None:
    result = cli(*verb, "-n", name, ok=False)
    assert result.exit_code == 1
    assert "Error: namespace" in result.stderr and message in result.stderr and "Hint:" in result.stderr
    assert "Traceback" not in result.output


def test_ingest_refuses_a_bad_namespace_before_reading(cli: Any, rows: Any, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text("# Deploy\n\nDeploys go through make release.\n")
    result = cli("ingest", "notes", "--path", str(notes), "-n", " ", ok=False)
    assert result.exit_code == 1 and "namespace must not be empty" in result.stderr
    assert not (tmp_path / "engram-home" / "engram.db").exists() or rows("SELECT count(*) FROM memories") == [(0,)]


def test_import_trims_the_namespace_of_each_record(cli: Any, rows: Any) -> None:
    cli("add", FACT, "-n", "alpha")
    (record,) = [json.loads(line) for line in cli("export", "-A").stdout.splitlines()]
    cli("forget", record["id"], "--hard", "-n", "alpha")
    # A purged memory's id is tombstoned (an import never brings it back): the record comes back under a new id.
    record["id"] = "1" * 8 + record["id"][8:]
    record["namespace"] = " beta "
    bad = dict(record, id="0" * 8 + record["id"][8:], namespace="\t")
    cli("import", "-", input=json.dumps(record) + "\n" + json.dumps(bad) + "\n", ok=False)
    assert rows("SELECT namespace FROM memories") == [("beta",)]


def test_eval_queries_use_the_trimmed_namespace(cli: Any, tmp_path: Path) -> None:
    dataset = tmp_path / "tiny"
    dataset.mkdir()
    memories = [
        {"id": "m1", "content": "The office printer is on floor two", "namespace": "infra "},
        {"id": "m2", "content": "The office printer in Berlin is on floor five", "namespace": "berlin"},
    ]
    (dataset / "memories.jsonl").write_text("".join(json.dumps(m) + "\n" for m in memories))
    query = {"query": "which floor is the printer on", "namespace": " infra", "expected": {"ids": ["m1"]}}
    (dataset / "queries.jsonl").write_text(json.dumps(query) + "\n")
    assert _json(cli, "eval", "--dataset", str(dataset), "--k", "1")["recall@1"] == 1.0
    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps(dict(query, namespace=" ")) + "\n")
    result = cli("eval", str(blank), ok=False)
    assert result.exit_code == 1 and "line 1: namespace must not be empty" in result.stderr
