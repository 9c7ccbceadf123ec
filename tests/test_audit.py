"""audit: each check finds the problem planted for it, says nothing on a clean store, and --fix repairs what is safe."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import engram_cli.memory.audit as auditmod
from engram_cli import Engram
from engram_cli.embed import load_embedder
from engram_cli.errors import StoreError
from engram_cli.lang import text as textmod
from engram_cli.memory.audit import NOT_SCANNED, SCANNED, index_table
from engram_cli.memory.audit import beside as besidemod
from engram_cli.memory.model import Source
from engram_cli.store.maintenance import Maintenance

E5 = "multilingual-e5-small-q4-v1"
MINILM = "all-minilm-l6-v2-q8-v1"
CHECKS = [
    "integrity", "secrets", "missing_index", "orphan_index", "vector_index", "counts", "other_model",
    "near_duplicates", "conflicts", "stale", "low_confidence", "never_accessed",
]  # fmt: skip
FACTS = [
    "The staging database runs on port 5433",
    "Deploys go through make release",
    "The CI pipeline runs on GitHub Actions",
    "用户喜欢用 pnpm 管理依赖",
]
# Fake credentials in real formats. The password is one lower-case word with no prefix in common with
# the other terms, so the keyword index would store it whole (FTS5 stores a term as a suffix of the one
# before it): the byte check below sees it if a stale index segment still holds it.
AWS_ID = "AKIAQ3EXAMPLEKEYID77"
GITHUB = "ghp_Zq8Wv2Xr5Tn1Ym4Lk7Jh0Gf3Ds6Ap9Cb2Ne5"
PASSWORD = "zorblaxquint7"
URL_PASSWORD = "Tr0ub4dorAnd3"
CARD = "4111 1111 1111 1111"
RAW = [AWS_ID, GITHUB, PASSWORD, URL_PASSWORD, CARD]


def _counts(report: Any) -> dict[str, int]:
    return {c.name: c.count for c in report.checks}


def _table(engram: Engram, model: str = E5) -> str:
    table = engram.store.vectors.table_for(model)
    assert table is not None
    return table


def _audit_json(cli: Any, *args: str, ok: bool = True) -> dict[str, Any]:
    result = cli("audit", "--json", *args, ok=ok)
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_clean_store_reports_nothing(engram: Engram, cli: Any) -> None:
    engram.add_many([{"content": f} for f in FACTS])
    report = engram.audit()
    assert [c.name for c in report.checks] == CHECKS
    assert _counts(report) == dict.fromkeys(CHECKS, 0)
    assert report.problems == [] and report.actions == []
    result = cli("audit", "--strict")
    assert result.exit_code == 0 and "no problems" in result.stdout


def test_json_shape(cli: Any) -> None:
    cli("add", FACTS[0])
    data = _audit_json(cli)
    assert set(data) == {
        "database", "now", "namespaces", "fix", "quick", "ok", "problems", "checks", "actions", "left_for_a_person",
    }  # fmt: skip
    assert data["ok"] is True and data["problems"] == [] and data["fix"] is False and data["namespaces"] is None
    assert [c["name"] for c in data["checks"]] == CHECKS
    for check in data["checks"]:
        assert set(check) == {
            "name", "title", "severity", "problem", "count", "found", "fixed", "skipped", "hint", "details", "examples",
        }  # fmt: skip
        assert check["severity"] in ("info", "warning", "error")
    assert data["checks"][0]["details"] == {"mode": "integrity_check"}


def test_integrity_reports_broken_foreign_keys(engram: Engram, cli: Any) -> None:
    engram.add(FACTS[0])
    engram.store.execute("PRAGMA foreign_keys = OFF")
    engram.store.execute("INSERT INTO tags (memory_pk, tag) VALUES (4242, 'lost')")
    engram.store.execute("PRAGMA foreign_keys = ON")
    check = engram.audit().check("integrity")
    assert check.count == 1 and check.problem
    assert "tags row" in check.examples[0]["detail"] and "memories" in check.examples[0]["detail"]
    assert cli("audit", "--strict", ok=False).exit_code == 1


def test_integrity_and_secrets_run_beside_the_other_checks_or_on_the_store_without_a_second_connection(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    engram.add(FACTS[0])
    engram.add(f"CI deploys with key {AWS_ID} and password={PASSWORD}", keep_secrets=True)
    engram.store.execute("PRAGMA foreign_keys = OFF")
    engram.store.execute("INSERT INTO tags (memory_pk, tag) VALUES (4242, 'lost')")
    engram.store.execute("PRAGMA foreign_keys = ON")
    # Per check run: whether it read through the store's own connection.
    on_store: dict[str, list[bool]] = {"integrity": [], "secrets": []}
    problems, memory_text = Maintenance.integrity_problems, Maintenance.memory_text

    def integrity_spy(self: Maintenance, quick: bool = False) -> list[str]:
        on_store["integrity"].append(self.store is engram.store)
        return problems(self, quick)

    def text_spy(self: Maintenance, *args: Any) -> Any:
        if args[0] == "memories":
            on_store["secrets"].append(self.store is engram.store)
        return memory_text(self, *args)

    monkeypatch.setattr(Maintenance, "integrity_problems", integrity_spy)
    monkeypatch.setattr(Maintenance, "memory_text", text_spy)
    beside = engram.audit()
    monkeypatch.setattr(besidemod, "open_reader", _no_second_connection)
    alone = engram.audit()
    assert on_store == {"integrity": [False, True], "secrets": [False, True]}
    for report in (beside, alone):
        check = report.check("integrity")
        assert check.count == 1 and "tags row" in check.examples[0]["detail"]
        assert check.details == {"mode": "integrity_check"}
    assert beside.check("secrets").count == alone.check("secrets").count == 1
    assert [c.name for c in beside.checks] == [c.name for c in alone.checks] == CHECKS
    # What --fix would repair is the same either way.
    fixed = engram.audit(fix=True)
    assert fixed.check("secrets").fixed == 1 and engram.audit().check("secrets").count == 0


def _no_second_connection(path: Path) -> Any:
    raise StoreError(f"cannot open {path} again")


def test_an_audit_that_fails_stops_the_checks_beside_it(engram: Engram, monkeypatch: pytest.MonkeyPatch) -> None:
    engram.add(FACTS[0])
    started: list[Any] = []
    start = besidemod.Beside.__init__

    def spy(self: Any, *args: Any) -> None:
        start(self, *args)
        started.append(self)

    def broken(*args: Any) -> Any:
        raise RuntimeError("a check failed")

    monkeypatch.setattr(besidemod.Beside, "__init__", spy)
    monkeypatch.setattr(auditmod, "_pair_checks", broken)
    with pytest.raises(RuntimeError, match="a check failed"):
        engram.audit()
    assert len(started) == 2 and not any(b._thread.is_alive() for b in started)


def _plant_secrets() -> str:
    """A memory with secrets in its text, summary, metadata, a source and its history, and a purged one's tombstone."""
    with Engram.open() as mem:
        mem.add(FACTS[1])
        leaky = mem.add(
            f"CI deploys with key {AWS_ID} and password={PASSWORD}",
            summary=f"deploy credentials incl. {GITHUB}",
            metadata={"token": "abc123xyz", "ticket": "OPS-7"},
            source={"kind": "cli", "ref": f"https://deploy:{URL_PASSWORD}@git.example.com/infra.git"},
            keep_secrets=True,  # planted as an older engram (or --keep-secrets) would have stored them
        ).memory
        with mem.store.write():
            mem.store.sources.add(leaky.pk, Source(kind="chat", content=f"paid with card {CARD}"), leaky.created_at)
            mem.store.events.add(
                leaky.id, "merged", leaky.created_at,
                before={"content": f"old wording with {GITHUB}"}, after={"importance": 0.55}, actor="cli",
            )  # fmt: skip
            mem.store.events.add(
                "0badc0de-0000-4000-8000-000000000000", "deleted", leaky.created_at,
                note=f"purged; it mentioned {AWS_ID}", actor="user",
            )  # fmt: skip
        return leaky.id


def test_secrets_are_found_everywhere_and_fix_leaves_no_raw_byte(cli: Any, db_path: Path, rows: Any) -> None:
    leaky_id = _plant_secrets()
    before = cli("audit", "--json")
    report = json.loads(before.stdout)
    secrets = report["checks"][1]
    assert secrets["name"] == "secrets" and secrets["count"] == 2 and report["problems"] == ["secrets"]
    assert secrets["details"]["kinds"] == {
        "aws-access-key-id": 2, "card-number": 1, "github-token": 2, "password-assignment": 2, "url-password": 1,
    }  # fmt: skip
    assert secrets["details"]["categories"] == {"personal": 1, "secret": 7}
    leaky = next(e for e in secrets["examples"] if e["id"] == leaky_id[:8])
    assert leaky["where"] == ["content", "events", "metadata", "sources", "summary"]
    assert "[REDACTED:aws-access-key-id]" in leaky["text"]
    assert any(e["purged"] for e in secrets["examples"])
    for raw in RAW:  # the report never shows a secret
        assert raw not in before.stdout and raw not in cli("audit").stdout

    fixed = _audit_json(cli, "--fix")
    secrets = fixed["checks"][1]
    assert (secrets["found"], secrets["fixed"], secrets["count"]) == (2, 2, 0)
    assert fixed["ok"] and [a["name"] for a in fixed["actions"]] == ["redacted", "decayed"]
    assert _counts_from(fixed)["missing_index"] == 0  # keyword row and vector rebuilt for the new text

    content, summary, metadata = rows("SELECT content, summary, metadata FROM memories WHERE id = ?", (leaky_id,))[0]
    assert content == "CI deploys with key [REDACTED:aws-access-key-id] and password=[REDACTED:password-assignment]"
    assert summary == "deploy credentials incl. [REDACTED:github-token]"
    assert json.loads(metadata) == {"token": "[REDACTED:password-assignment]", "ticket": "OPS-7"}
    assert rows("SELECT ref FROM sources WHERE ref IS NOT NULL") == [
        ("https://deploy:[REDACTED:url-password]@git.example.com/infra.git",)
    ]
    (event,) = rows("SELECT after, note, actor FROM events WHERE memory_id = ? AND kind = 'updated'", (leaky_id,))
    assert json.loads(event[0]) == {
        "fields": ["content", "events", "metadata", "sources", "summary"],
        "redacted": ["aws-access-key-id", "card-number", "github-token", "password-assignment", "url-password"],
    }
    assert event[2] == "audit"

    # No raw secret is left anywhere in the file: not in rows, history, the keyword index, free pages or the WAL.
    files = [p for p in db_path.parent.glob(db_path.name + "*") if p.is_file()]
    blob = b"".join(p.read_bytes() for p in files)
    for raw in RAW:
        for form in {raw, raw.lower(), raw.replace(" ", "")}:
            assert form.encode() not in blob, form
    assert cli("audit", "--strict").exit_code == 0


def _text_columns(engram: Engram) -> dict[str, set[str]]:
    """Every table of the file and its columns that can hold text (declared TEXT or JSON, or no type at all)."""
    vector_tables = [table for _, table in engram.store.vectors.in_use()]
    found: dict[str, set[str]] = {}
    for (table,) in engram.store.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
        if index_table(table, vector_tables):
            continue
        declared = {str(c[1]): str(c[2]).upper() for c in engram.store.rows(f'PRAGMA table_xinfo("{table}")')}
        found[table] = {c for c, t in declared.items() if t in ("", "ANY") or "TEXT" in t or "JSON" in t or "CHAR" in t}
    return found


def test_every_text_column_of_the_schema_is_scanned_or_said_why_not(engram: Engram) -> None:
    engram.add(FACTS[0])  # a vector table and its shadow tables exist from the first memory on
    ((model, dim),) = engram.store.rows("SELECT model_id, dim FROM embedding_models")
    engram.store.evidence.ensure(str(model), int(dim))  # and the model's table of evidence vectors
    found = _text_columns(engram)
    assert {"memories", "sources", "events", "ingest_sessions", "ingest_cursors", "ingest_items"} <= set(found)
    listed = {t: set(SCANNED.get(t, {})) | set(NOT_SCANNED.get(t, {})) for t in set(SCANNED) | set(NOT_SCANNED)}
    unlisted = {t: sorted(cols - listed.get(t, set())) for t, cols in found.items() if cols - listed.get(t, set())}
    assert unlisted == {}, f"text columns audit does not know about: {unlisted}"
    stale = {t: sorted(cols - found.get(t, set())) for t, cols in listed.items() if cols - found.get(t, set())}
    assert stale == {}, f"columns listed for audit that the schema does not have: {stale}"
    assert not any(set(SCANNED[t]) & set(NOT_SCANNED.get(t, {})) for t in SCANNED)
    assert all(why.strip() for columns in NOT_SCANNED.values() for why in columns.values())
    # The excepted tables are the keyword index, the vector tables and SQLite's own: nothing else.
    names = [str(r[0]) for r in engram.store.rows("SELECT name FROM sqlite_master WHERE type = 'table'")]
    skipped = sorted(set(names) - set(found))
    assert "evidence" in found and "evidence_fts" in skipped  # the turns kept as evidence are scanned, their index not
    assert skipped and all(
        n.startswith(("memory_fts", "evidence_fts", "vec_")) or n == "sqlite_sequence" for n in skipped
    )
    assert index_table("memory_notes", []) is None and index_table("vec_x_chunks", ["vec_x"]) is not None


def _secret_for(place: str) -> str:
    """A GitHub token of its own for every column, so the report and the bytes say which one leaked."""
    return "ghp_" + hashlib.sha256(place.encode()).hexdigest()[:36]


ANTHROPIC = "sk-ant-api03-Qm7Rt2Vx9Yz4Bc6Df8Gh1Jk3Lm5Np7Qr9St2Uv4Wx6"
DIGEST_PASSWORD = "plumvortex88"


def _plant_in_every_column(engram: Engram) -> list[str]:
    """Secrets written with SQL into every column SCANNED lists (a memory's, a tombstone's, ingest state's)."""
    memory = engram.add(FACTS[0], tags=["ops"], source={"kind": "cli", "ref": "notes.md"}).memory
    raw: dict[str, str] = {f"{t}.{c}": _secret_for(f"{t}.{c}") for t, columns in SCANNED.items() for c in columns}

    def value(place: str) -> str:
        table, column = place.split(".")
        if SCANNED[table][column] == "json":
            return json.dumps({"detail": f"pushed with {raw[place]}"})
        return f"pushed with {raw[place]}"

    digest = {
        "v": 1,
        "task": f"first prompt: push with {raw['ingest_sessions.digest']}",
        "open": [{"id": "c1", "cmd": f"curl -H 'Authorization: Bearer {ANTHROPIC}' https://api.example.com"}],
        "programs": {f"aws configure set key {AWS_ID}": 2},  # a secret in a key, not a value
        "summary": f"logged in with password={DIGEST_PASSWORD}",
    }
    store = engram.store
    with store.write():
        store.execute(
            "UPDATE memories SET content = ?, summary = ?, metadata = ?, session_id = ? WHERE pk = ?",
            (*(value(f"memories.{c}") for c in ("content", "summary", "metadata", "session_id")), memory.pk),
        )
        store.execute("INSERT INTO tags (memory_pk, tag) VALUES (?, ?)", (memory.pk, value("tags.tag")))
        store.execute(
            "UPDATE sources SET kind = ?, ref = ?, message_id = ?, session_id = ?, content = ?, metadata = ? "
            "WHERE memory_pk = ?",
            (*(value(f"sources.{c}") for c in ("kind", "ref", "message_id", "session_id", "content", "metadata")),
             memory.pk),
        )  # fmt: skip
        store.execute(
            "UPDATE events SET actor = ?, before = ?, after = ? WHERE memory_id = ?",
            (value("events.actor"), value("events.before"), value("events.after"), memory.id),
        )
        store.events.add(
            "0badc0de-0000-4000-8000-000000000000", "deleted", memory.created_at,
            note=value("events.note"), actor="user",
        )  # fmt: skip
        store.execute("INSERT INTO settings (key, value) VALUES ('planted', ?)", (value("settings.value"),))
        store.execute(
            "INSERT INTO ingest_sessions (source, session_key, path, namespace, digest, updated_at) "
            "VALUES ('claude-code', ?, ?, 'default', ?, ?)",
            (
                value("ingest_sessions.session_key"),
                value("ingest_sessions.path"),
                json.dumps(digest),
                memory.created_at,
            ),
        )
        store.execute(
            "INSERT INTO ingest_cursors (path, source, last_id, state, updated_at) VALUES (?, 'codex', ?, ?, ?)",
            (value("ingest_cursors.path"), value("ingest_cursors.last_id"), value("ingest_cursors.state"),
             memory.created_at),
        )  # fmt: skip
        store.execute(
            "INSERT INTO ingest_items (source, session_key, item_key, memory_id, content_hash, created_at) "
            "VALUES ('codex', ?, ?, ?, 'h', ?)",
            (value("ingest_items.session_key"), value("ingest_items.item_key"), memory.id, memory.created_at),
        )
        # A turn kept as evidence, with its keyword row holding the secret's terms as ingest would index them.
        turn = store.evidence.insert(
            namespace="global", source="codex", session=value("evidence.session_key"),
            turn_key=value("evidence.turn_key"), seq=1, kind="request", content=value("evidence.content"),
            content_hash="h", occurred_at=None, learned_at=memory.created_at,
        )  # fmt: skip
        store.evidence.put_terms(turn, textmod.index_text(value("evidence.content")))
    return [*raw.values(), ANTHROPIC, AWS_ID, DIGEST_PASSWORD]


def test_fix_redacts_every_table_and_leaves_no_raw_byte(engram: Engram, cli: Any, db_path: Path) -> None:
    secrets = _plant_in_every_column(engram)
    check = engram.audit().check("secrets")
    # One memory, one tombstone, and one row each of settings, the three ingest tables and evidence.
    assert check.count == 7 and check.problem
    assert set(check.details["columns"]) == {f"{t}.{c}" for t, columns in SCANNED.items() for c in columns}
    assert check.details["kinds"]["anthropic-key"] == 1 and check.details["kinds"]["aws-access-key-id"] == 1
    assert {e.get("table") for e in check.examples} >= {"settings", "ingest_sessions"}
    session = next(e for e in check.examples if e.get("table") == "ingest_sessions")
    assert session["columns"] == ["ingest_sessions.digest", "ingest_sessions.path", "ingest_sessions.session_key"]
    memory = next(e for e in check.examples if "id" in e and not e["purged"])
    assert "memories.content" in memory["columns"] and "tags.tag" in memory["columns"]
    shown = json.dumps([e for e in check.examples]) + cli("audit").stdout + cli("audit", "--json", ok=False).stdout
    assert "ingest_sessions.digest" in cli("audit").stdout
    for raw in secrets:  # the report says where, never what
        assert raw not in shown

    fixed = engram.audit(fix=True)
    assert (fixed.check("secrets").found, fixed.check("secrets").fixed, fixed.check("secrets").count) == (7, 7, 0)
    assert fixed.problems == []
    (digest,) = engram.store.rows("SELECT digest FROM ingest_sessions")[0]
    digest = json.loads(digest)
    assert digest["programs"] == {"aws configure set key [REDACTED:aws-access-key-id]": 2}
    assert (
        digest["open"][0]["cmd"] == "curl -H 'Authorization: Bearer [REDACTED:anthropic-key]' https://api.example.com"
    )
    assert digest["summary"] == "logged in with password=[REDACTED:password-assignment]"
    assert engram.store.rows("SELECT tag FROM tags ORDER BY tag") == [
        ("ops",),
        ("pushed with [REDACTED:github-token]",),
    ]

    exported = cli("export", "--all-namespaces").stdout
    assert "[REDACTED:github-token]" in exported
    files = [p for p in db_path.parent.glob(db_path.name + "*") if p.is_file()]
    blob = b"".join(p.read_bytes() for p in files)
    for raw in secrets:
        for form in (raw, raw.lower(), raw[-24:].lower()):
            assert form.encode() not in blob, form
            assert form not in exported, form
    assert engram.audit().check("secrets").count == 0
    # The redacted turn is found by its words again (re-indexed, re-embedded), and no longer by the secret.
    ((pk, _),) = engram.store.evidence.search(["pushed"], None, 5)
    turn = engram.store.evidence.load_many([pk])[pk]
    assert turn.content == "pushed with [REDACTED:github-token]" and turn.embedding_model == engram.active_model
    assert engram.store.evidence.search(textmod.query_terms(_secret_for("evidence.content")), None, 5) == []


def test_a_redacted_key_that_meets_its_twin_replaces_it(engram: Engram, rows: Any) -> None:
    """Two cursors whose paths differ only by their secret read the same once redacted: one row is left."""
    with engram.store.write():
        for token in (GITHUB, "ghp_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2Mm"):
            engram.store.execute(
                "INSERT INTO ingest_cursors (path, source, state, updated_at) VALUES (?, 'shell', '{}', 'now')",
                (f"/logs/{token}/history",),
            )
    assert engram.audit().check("secrets").count == 2
    assert engram.audit(fix=True).check("secrets").count == 0
    assert rows("SELECT path FROM ingest_cursors") == [("/logs/[REDACTED:github-token]/history",)]


def test_namespace_scope_covers_ingest_sessions_by_their_namespace(engram: Engram) -> None:
    with engram.store.write():
        for namespace in ("alpha", "beta"):
            engram.store.execute(
                "INSERT INTO ingest_sessions (source, session_key, path, namespace, digest, updated_at) "
                "VALUES ('codex', ?, '/p', ?, ?, 'now')",
                (namespace, namespace, json.dumps({"task": f"use {GITHUB}"})),
            )
    assert engram.audit(namespace="alpha").check("secrets").count == 1
    assert engram.audit().check("secrets").count == 2


def _counts_from(data: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c["count"] for c in data["checks"]}


def test_redacted_vector_is_made_from_the_redacted_text(engram: Engram) -> None:
    memory = engram.add(f"The release bot authenticates with {GITHUB}").memory
    report = engram.audit(fix=True)
    assert report.check("secrets").count == 0
    redacted = engram.get(memory.id)
    assert redacted.content == "The release bot authenticates with [REDACTED:github-token]"
    stored = engram.store.vectors.get(E5, [memory.pk])[memory.pk]
    expected = load_embedder(E5).embed_batch([redacted.content], kind="passage")[0]
    assert float(np.dot(stored, expected)) > 0.99
    hit = engram.recall("how does the release bot authenticate", k=1, bump=False)[0]
    assert hit.memory.id == memory.id and hit.explain["keyword"] is not None


def test_redaction_that_makes_two_memories_identical_folds_them(engram: Engram, rows: Any) -> None:
    first = engram.add("The deploy token is ghp_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2Mm", keep_secrets=True).id
    second = engram.add(
        "The deploy token is ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8Nn", no_merge=True, keep_secrets=True
    ).id
    report = engram.audit(fix=True)
    assert report.check("secrets").count == 0
    assert rows("SELECT id, content FROM memories") == [(first, "The deploy token is [REDACTED:github-token]")]
    assert rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk DESC LIMIT 1", (second,)) == [("deleted",)]


def test_missing_index_rows_are_rebuilt_and_recall_finds_the_rows_again(engram: Engram, rows: Any) -> None:
    no_vector, no_keywords, drifted, _ = (r.memory for r in engram.add_many([{"content": f} for f in FACTS]))
    table = _table(engram)
    with engram.store.write():
        engram.store.vectors.delete(E5, no_vector.pk)
        engram.store.execute("DELETE FROM memory_fts WHERE rowid = ?", (no_keywords.pk,))
        engram.store.vectors.set_status(E5, drifted.pk, "archived")
    check = engram.audit().check("missing_index")
    assert check.count == 3
    assert check.details == {"vectors": 1, "keyword_rows": 1, "outdated_vector_filters": 1}
    assert {e["id"]: e["missing"] for e in check.examples} == {
        no_vector.id[:8]: ["vector"], no_keywords.id[:8]: ["keyword row"], drifted.id[:8]: ["outdated vector filters"],
    }  # fmt: skip
    # Broken: the drifted memory is invisible to vector search, the others miss one retriever.
    # No floor: a memory without its vector has only its words to show, too little to clear it.
    broken = engram.recall("which port does staging use", k=4, bump=False, min_relevance=0.0)
    hits = {h.memory.id: h for h in broken}
    assert hits[no_vector.id].explain["vector"] is None

    report = engram.audit(fix=True)
    fixed = report.check("missing_index")
    assert (fixed.found, fixed.fixed, fixed.count) == (3, 3, 0)
    assert rows(f"SELECT count(*) FROM {table} WHERE memory_pk = ?", (no_vector.pk,)) == [(1,)]
    assert rows("SELECT count(*) FROM memory_fts_docsize WHERE id = ?", (no_keywords.pk,)) == [(1,)]
    assert rows(f"SELECT status FROM {table} WHERE memory_pk = ?", (drifted.pk,)) == [("active",)]
    hit = engram.recall("which port does staging use", k=1, bump=False)[0]
    assert hit.memory.id == no_vector.id and hit.explain["vector"] is not None
    hit = engram.recall("make release deploys", k=1, bump=False)[0]
    assert hit.memory.id == no_keywords.id and hit.explain["keyword"] is not None
    hit = engram.recall("GitHub Actions", k=1, bump=False)[0]
    assert hit.memory.id == drifted.id and hit.explain["vector"] is not None


def test_orphan_index_rows_are_removed(engram: Engram, cli: Any, rows: Any) -> None:
    kept = engram.add(FACTS[0]).memory
    gone = engram.add(FACTS[1]).memory
    table = _table(engram)
    with engram.store.write():
        # A crash between the statements of a purge, done by hand: the memory row goes, its index rows stay.
        engram.store.execute("DELETE FROM memories WHERE pk = ?", (gone.pk,))
        # A vector left in another model's table for a memory that lives on E5.
        other = engram.store.vectors.ensure(MINILM, 384)
        engram.store.vectors.put(
            MINILM, kept.pk, np.ones(384, dtype=np.float32) / np.sqrt(384),
            namespace=kept.namespace, status="active", memory_type=kept.type, agent=kept.agent,
        )  # fmt: skip
    check = engram.audit().check("orphan_index")
    assert check.count == 3 and check.details == {"vectors": 2, "keyword_rows": 1}
    data = _audit_json(cli, "--fix", "--strict")
    assert _counts_from(data)["orphan_index"] == 0 and data["checks"][3]["fixed"] == 3
    assert rows(f"SELECT memory_pk FROM {table}") == [(kept.pk,)]
    assert rows(f"SELECT count(*) FROM {other}") == [(0,)]
    assert rows("SELECT id FROM memory_fts_docsize") == [(kept.pk,)]


def test_migration_progress_while_two_models_coexist(engram: Engram, cli: Any) -> None:
    engram.add_many([{"content": f} for f in FACTS])
    engram.reembed(MINILM, batch=1, limit=1)
    check = engram.audit().check("other_model")
    assert check.count == 3 and check.problem
    assert check.details == {
        "active_model": E5, "target_model": MINILM, "models": {MINILM: 1, E5: 3},
        "migrated": 1, "total": 4, "percent_migrated": 25.0,
    }  # fmt: skip
    assert check.hint == f"`engram reembed --model {MINILM}` finishes the migration"
    text = cli("audit").stdout
    assert f"migration to {MINILM}: 1 of 4 (25.0%) done" in text
    assert cli("audit", "--strict", ok=False).exit_code == 1
    engram.reembed(MINILM)
    check = engram.audit().check("other_model")
    assert check.count == 0 and check.details["percent_migrated"] == 100.0


def test_duplicates_and_conflicts_are_reported_and_exact_duplicates_merged(
    engram: Engram, rows: Any, pair_search: str
) -> None:
    s = engram.settings  # supersession off, so a correction stays unapplied
    engram.config = replace(engram.config, settings=replace(s, supersede=replace(s.supersede, enabled=False)))
    keep = engram.add("The staging database runs on port 5433", tags=["ops"], importance=0.7).memory
    copy = engram.add("the staging database runs on port 5433!", tags=["db"], no_merge=True).memory
    other_agent = engram.add("The staging database runs on port 5433", agent="ci-bot").memory
    tabs = engram.add("Use tabs for indentation in the Makefile").memory
    no_tabs = engram.add("Never use tabs for indentation in the Makefile").memory
    email = engram.add("Send the weekly report by email").memory
    wecom = engram.add("From now on send the weekly report via WeCom instead of email").memory
    # Episodes are history: both of these happened, so they are not a conflict.
    engram.add("The nightly build failed on the ARM runner", type="episodic")
    engram.add("The nightly build did not fail on the ARM runner", type="episodic")
    engram.add("From now on the nightly build runs on the ARM runner instead of x86", type="episodic")

    report = engram.audit()
    duplicates, conflicts = report.check("near_duplicates"), report.check("conflicts")
    assert duplicates.count == 1 and duplicates.details["exact_pairs"] == 1
    (pair,) = duplicates.examples
    assert {pair["id"], pair["other_id"]} == {keep.id[:8], copy.id[:8]} and pair["exact"]
    reasons = {frozenset((e["id"], e["other_id"])): e["reason"] for e in conflicts.examples}
    assert reasons[frozenset((tabs.id[:8], no_tabs.id[:8]))] == "opposite polarity"
    assert reasons[frozenset((email.id[:8], wecom.id[:8]))].startswith("a correction that did not replace")
    assert conflicts.count == 2

    report = engram.audit(fix=True)
    assert report.check("near_duplicates").count == 0 and report.check("near_duplicates").fixed == 1
    assert report.check("conflicts").count == 2  # a person decides which holds
    assert [c.name for c in report.problems] == ["conflicts"]
    assert {c.name for c in report.left_for_a_person()} == {"conflicts"}
    survivor = engram.get(keep.id)
    assert survivor.tags == ["db", "ops"] and survivor.importance == pytest.approx(0.7)
    assert "the staging database runs on port 5433!" in [s.content for s in survivor.sources]
    assert rows("SELECT count(*) FROM memories WHERE id = ?", (copy.id,)) == [(0,)]
    assert engram.get(other_agent.id).status == "active"  # another agent's memory is its own
    assert rows("SELECT kind, actor FROM events WHERE memory_id = ? ORDER BY pk DESC LIMIT 1", (copy.id,)) == [
        ("deleted", "audit")
    ]
    assert engram.audit().check("orphan_index").count == 0


def test_review_lists_stale_low_confidence_and_never_accessed(engram: Engram, cli: Any, backdate: Any) -> None:
    now = "2026-03-01T00:00:00Z"
    stale = engram.add(FACTS[0], created_at="2025-01-01T00:00:00Z").memory  # 424 days: decay 0.195 after decay
    unsure = engram.add(FACTS[1], confidence=0.2, created_at="2026-02-25T00:00:00Z").memory
    fresh = engram.add(FACTS[2], created_at="2026-02-28T00:00:00Z").memory
    # Age counts from when engram learned a memory: here, when each happened.
    for memory in (stale, unsure, fresh):
        backdate(memory.created_at, memory.id)
    report = engram.audit(now=now)
    assert _counts(report)["stale"] == 0  # its stored decay score is not recomputed yet
    assert report.check("low_confidence").examples[0]["id"] == unsure.id[:8]
    assert [e["id"] for e in report.check("never_accessed").examples] == [stale.id[:8]]

    report = engram.audit(now=now, fix=True)
    assert (report.check("stale").count, report.check("stale").examples[0]["id"]) == (1, stale.id[:8])
    assert report.check("stale").examples[0]["decay_score"] == pytest.approx(0.195, abs=0.001)
    assert [a.name for a in report.actions] == ["decayed"]
    assert report.problems == []  # review items are not problems
    assert cli("audit", "--strict", "--now", now).exit_code == 0
    assert cli("audit", "--now", "sometime", ok=False).exit_code == 1


def test_namespace_limits_the_scope(cli: Any) -> None:
    cli("add", f"key {AWS_ID}", "-n", "alpha", "--keep-secrets")
    cli("add", FACTS[0], "-n", "beta")
    assert _counts_from(_audit_json(cli, "-n", "beta"))["secrets"] == 0
    data = _audit_json(cli, "-n", "alpha")
    assert data["namespaces"] == ["alpha"] and _counts_from(data)["secrets"] == 1
    assert _counts_from(_audit_json(cli))["secrets"] == 1


def test_quick_skips_the_pairwise_checks(cli: Any) -> None:
    cli("add", FACTS[0])
    data = _audit_json(cli, "--quick")
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["integrity"]["details"] == {"mode": "quick_check"}
    assert checks["near_duplicates"]["skipped"] and checks["conflicts"]["skipped"]
    assert "skipped" in cli("audit", "--quick").stdout


def test_strict_exit_codes(cli: Any) -> None:
    cli("add", FACTS[0])
    assert cli("audit", "--strict").exit_code == 0
    cli("add", "the admin password=Tr0ub4dor is in the vault", "--keep-secrets")
    failed = cli("audit", "--strict", ok=False)
    assert failed.exit_code == 1
    assert "Error: audit found problems that remain: secrets (1)" in failed.stderr
    assert "secrets" in failed.stdout  # the report is printed before the verdict
    assert cli("audit", "--fix", "--strict").exit_code == 0
    assert cli("audit", "--strict").exit_code == 0


def test_the_numpy_screen_never_drops_a_pair_the_exact_check_keeps() -> None:
    import random
    import string

    from engram_cli.memory.audit import _Signals
    from engram_cli.memory.similarity import SWAP_OVERLAP, profile, topic_overlap

    rng = random.Random(7)
    vocab = ["".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(40)] + ["部署", "周会", "报告"]
    texts = [" ".join(rng.sample(vocab, rng.randint(1, 14))) + rng.choice(["", " never", " 不"]) for _ in range(160)]
    signals = _Signals.of(texts)
    a, b = np.triu_indices(len(texts), 1)
    kept = signals.topic_may_overlap(a, b, SWAP_OVERLAP)
    profiles = [profile(t) for t in texts]
    exact = np.array([topic_overlap(profiles[i], profiles[j]) >= SWAP_OVERLAP for i, j in zip(a, b, strict=True)])
    assert exact.any() and not (exact & ~kept).any()
    assert kept.sum() < len(kept) / 2  # and it does screen


def test_contact_details_count_as_secrets_only_when_configured(cli: Any, engram: Engram) -> None:
    engram.add("Escalations go to oncall@corp-mail.io", keep_secrets=True)
    report = json.loads(cli("audit", "--quick", "--json").stdout)
    assert next(c for c in report["checks"] if c["name"] == "secrets")["count"] == 0
    cli("config", "set", "redact.contact_details", "true")
    fixed = json.loads(cli("audit", "--quick", "--fix", "--json").stdout)
    assert next(c for c in fixed["checks"] if c["name"] == "secrets")["found"] == 1
    assert engram.list()[0].content == "Escalations go to [REDACTED:email]"
