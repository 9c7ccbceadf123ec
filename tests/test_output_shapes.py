"""What every command prints, with and without --json, on one small fixed store.

A golden test for scripts and people alike: the JSON's keys (in order) and value types, and the
stable parts of the human output. Ids, timestamps, temporary paths and timings vary from run to
run, so they are masked; everything else is compared as it is printed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from engram_cli.cli import app
from engram_cli.store import connect

# The variables tests/conftest.py clears for every test; the template is built under the same rule.
ENV_VARS = ("ENGRAM_HOME", "ENGRAM_DB", "ENGRAM_NAMESPACE", "ENGRAM_AGENT", "ENGRAM_MODEL", "NO_COLOR")

OLD = "2026-11-01T10:00:00Z"
NOW = "2026-11-20T00:00:00Z"
UPLOAD = [
    "Fixed the flaky upload test by pinning the S3 mock clock",
    "The upload test was flaky again; the S3 mock clock drifted, pinned it in conftest",
    "Upload test flakiness came back after the boto upgrade; re-pinned the S3 mock clock",
]
NOTES = Path(__file__).parent / "fixtures" / "ingest" / "notes" / "deploy.md"
OTHER_MODEL = "all-minilm-l6-v2-q8-v1"

# -- the shapes ---------------------------------------------------------------------------------
# A dict lists its keys in the order they are printed; [X] is a non-empty list of X, [] an empty
# list; `dict` and `list` stand for any dict or list (free-form details); None is JSON null.

SOURCE = {
    "kind": str,
    "ref": None,
    "message_id": None,
    "session": None,
    "content": (str, None),
    "metadata": dict,
    "created_at": str,
}


def memory(**changes: Any) -> dict[str, Any]:
    shape: dict[str, Any] = {
        "id": str,
        "content": str,
        "key": None,
        "summary": None,
        "type": str,
        "namespace": str,
        "agent": str,
        "session": None,
        "tags": (list, []),
        "importance": float,
        "confidence": float,
        "decay_score": float,
        "access_count": int,
        "created_at": str,
        "occurred_at": str,
        "learned_at": str,
        "updated_at": str,
        "last_access_at": (str, None),
        "status": str,
        "superseded_by": None,
        "consolidated_into": None,
        "embedding_model": str,
        "version": int,
        "metadata": dict,
        "sources": [SOURCE],
    }
    shape.update(changes)
    return shape


MEMORY = memory()
EVENT = {
    "memory_id": str,
    "kind": str,
    "at": str,
    "actor": str,
    "before": (dict, None),
    "after": (dict, None),
    "note": (str, None),
}
ADD_RESULT = {"action": str, "similarity": (float, None), "superseded": [], "redacted": [], **MEMORY}
EXPLAIN = {
    "vector": (dict, None),
    "keyword": (dict, None),
    "cross_language": None,
    "time_window": None,
    "fusion": float,
    "importance": float,
    "importance_factor": float,
    "decay_score": float,
    "score": float,
    "formula": str,
    "relevance": float,
    "evidence": {
        "cosine": (float, None),
        "cross_cosine": (float, None),
        "keyword_share": float,
        "time_window_match": (bool, None),
        "scripts": str,
    },
    "relevance_model": str,
    "scope": {"scope": str, "namespace": str},
}
SCORE_FACTORS = {
    "importance_factor": float,
    "decay_score": float,
    "weight": float,
    "days_since_access": float,
    "formula": str,
}
FORGET_RESULT = {"id": str, "action": str, "edited": [], "consolidated": [], "note": None}
IMPORT_REPORT = {
    "imported": int,
    "skipped_existing": int,
    "errors": [],
    "atomic": bool,
    "redacted": int,
    "updated": int,
    "purged": int,
}
DECAY_CHANGE = {"id": str, "content": str, "decay_before": float, "decay_after": float, "archived": bool}
DECAY_REPORT = {
    "now": str,
    "dry_run": bool,
    "scanned": int,
    "changed": int,
    "archived": int,
    "silent_drifts": int,
    "evidence_pruned": int,
    "changes": [DECAY_CHANGE],
}
COMPACT_REPORT = {
    "now": str,
    "dry_run": bool,
    "scanned": int,
    "created": int,
    "consolidated": int,
    "joined": int,
    "duplicates_folded": int,
    "capped": int,
    "decayed": int,
    "archived_by_decay": int,
    "clusters": [
        {
            "namespace": str,
            "agent": str,
            "episodes": [{"id": str, "content": str, "created_at": str}],
            "content": str,
            "method": str,
            "memory_id": (str, None),
            "promoted": bool,
        }
    ],
    "folds": [],
    "capped_ids": [],
    "skipped": [],
    "errors": [],
}
AUDIT_CHECK = {
    "name": str,
    "title": str,
    "severity": str,
    "problem": bool,
    "count": int,
    "found": int,
    "fixed": int,
    "skipped": None,
    "hint": None,
    "details": dict,
    "examples": [],
}
AUDIT_REPORT = {
    "database": str,
    "now": str,
    "namespaces": None,
    "fix": bool,
    "quick": bool,
    "ok": bool,
    "problems": [],
    "checks": [AUDIT_CHECK],
    "actions": [],
    "left_for_a_person": [],
}
PLANNED = {
    "source": str,
    "session": str,
    "key": str,
    "namespace": str,
    "type": str,
    "importance": float,
    "content": str,
    "action": str,
    "memory_id": (str, None),
}
INGEST_REPORT = {
    "dry_run": bool,
    "stopped_early": bool,
    "abandoned": [],
    "found_nothing": bool,
    "looked": [],
    "sources": [
        {
            "source": str,
            "files": int,
            "changed_files": int,
            "sessions": int,
            "evidence": int,
            "created": int,
            "merged": int,
            "updated": int,
            "redacted": dict,
            "skipped": dict,
            "errors": [],
            "memories": [PLANNED],
        }
    ],
}
INGEST_SOURCE = {
    "source": str,
    "agent": str,
    "description": str,
    "files": int,
    "new": int,
    "changed": int,
    "skipped": int,
    "pending_bytes": int,
    "sessions_seen": int,
    "memories": int,
    "last_ingest": (str, None),
    "paths": list,
    "error": None,
}
REEMBED_REPORT = {"model": str, "reembedded": int, "remaining": int, "active": bool}
MODEL_ROW = {
    "id": str,
    "name": str,
    "dim": int,
    "merge_threshold": float,
    "licence": str,
    "size_bytes": int,
    "path": str,
    "active": bool,
    "vectors": int,
}
DOCTOR_CHECK = {"check": str, "status": str, "detail": str, "hint": None}
SETTING = {"value": (str, int, float, bool, None), "from": str}
SCORES = {
    "queries": int,
    "recall@1": float,
    "recall@5": float,
    "recall@10": float,
    "mrr": float,
    "ndcg@10": float,
    "interference@1": float,
    "interference@5": float,
    "interference@10": float,
    "no_answer_queries": int,
    "abstention": (float, None),
}
EVAL_REPORT = {"mode": str, "k": [int], **SCORES, "latency_ms": {"p50": float, "p95": float}, "groups": dict}
GIT_HOOK_CHANGE = {"action": str, "hook": str, "chained": None}
SETTINGS_CHANGE = {
    "assistant": str,
    "path": str,
    "action": str,
    "events": [str],
    "backup": (str, None),
    "next_step": None,
    "mcp": None,  # Claude Code's and Codex's --settings name the hooks file only
}
MCP_CHANGE = {
    "server": str,
    "path": str,
    "project": None,
    "action": str,
    "command": [str],
    "backup": (str, None),
    "next_step": str,
}
SCHEDULE = {
    "log": str,
    "env": dict,
    "jobs": [{"name": str, "when": str, "command": [str], "why": str, "line": str}],
}
RECOVER_REPORT = {
    "source": str,
    "output": str,
    "tables": [
        {
            "table": str,
            "read": int,
            "lost": int,
            "dropped": int,
            "rejected": int,
            "reembedded": int,
            "lost_ranges": [],
        }
    ],
    "keyword_rows": int,
    "links_cleared": int,
    "lost_memory_ids": [],
    "side_files": [],
    "complete": bool,
}
EXPORT_LINE = {
    "access_count": int,
    "agent": str,
    "confidence": float,
    "consolidated_into": None,
    "content": str,
    "created_at": str,
    "decay_score": float,
    "embedding_model": str,
    "events": [{"actor": str, "after": (dict, None), "at": str, "before": (dict, None), "kind": str, "note": None}],
    "id": str,
    "importance": float,
    "key": None,
    "last_access_at": None,
    "learned_at": str,
    "metadata": dict,
    "namespace": str,
    "occurred_at": str,
    "session": None,
    "sources": [{k: SOURCE[k] for k in sorted(SOURCE)}],
    "status": str,
    "summary": None,
    "superseded_by": None,
    "tags": (list, []),
    "type": str,
    "updated_at": str,
    "version": int,
}


def assert_shape(value: Any, shape: Any, where: str = "$") -> None:
    """``value`` (parsed JSON) has ``shape``: the same keys in the same order, values of the same types."""
    if isinstance(shape, tuple):  # one of several shapes
        errors = []
        for option in shape:
            try:
                assert_shape(value, option, where)
                return
            except AssertionError as exc:
                errors.append(str(exc))
        raise AssertionError(f"{where}: none of {shape} matches: {errors}")
    if shape is None:
        assert value is None, f"{where}: expected null, got {value!r}"
    elif shape is float:
        assert isinstance(value, float), f"{where}: expected a float, got {value!r}"
    elif shape is int:
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: expected an int, got {value!r}"
    elif shape in (str, bool, dict, list):
        assert isinstance(value, shape), f"{where}: expected {shape.__name__}, got {value!r}"
    elif isinstance(shape, dict):
        assert isinstance(value, dict), f"{where}: expected an object, got {value!r}"
        assert list(value) == list(shape), f"{where}: keys {list(value)} != {list(shape)}"
        for key, inner in shape.items():
            assert_shape(value[key], inner, f"{where}.{key}")
    elif isinstance(shape, list):
        assert isinstance(value, list), f"{where}: expected a list, got {value!r}"
        if not shape:
            assert value == [], f"{where}: expected an empty list, got {value!r}"
            return
        assert value, f"{where}: expected a non-empty list"
        for i, item in enumerate(value):
            assert_shape(item, shape[0], f"{where}[{i}]")
    else:
        raise TypeError(f"not a shape: {shape!r}")


# -- the store and the runner -------------------------------------------------------------------

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SHORT_ID = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{8}(?![0-9A-Za-z])")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def _build(directory: Path) -> None:
    runner = CliRunner()

    def add(*args: str) -> None:
        result = runner.invoke(app, ["add", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output

    add("Deploys go through make release", "-t", "ops", "--importance", "0.9", "--at", OLD)
    for text in UPLOAD:
        add(text, "--type", "episodic", "--at", OLD, "--no-merge")
    add("用户喜欢用 pnpm 管理依赖", "-n", "web", "--at", OLD)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixed store, built once through the CLI; each test gets its own copy."""
    home = tmp_path_factory.mktemp("template-home")
    with pytest.MonkeyPatch.context() as mp:
        for name in ENV_VARS:
            mp.delenv(name, raising=False)
        mp.setenv("ENGRAM_HOME", str(home))
        mp.setenv("HOME", str(tmp_path_factory.mktemp("template-user")))
        mp.setenv("NO_COLOR", "1")
        mp.chdir(home)  # outside any git repository: the memories without -n go to the global scope
        _build(home)
    # Learned when they happened, as if added on that day: decay and compact below count from then.
    store = connect(home / "engram.db")
    try:
        with store.write():
            store.execute("UPDATE memories SET learned_at = created_at")
    finally:
        store.close()
    assert not (home / "engram.db-wal").exists() or (home / "engram.db-wal").stat().st_size == 0
    return home / "engram.db"


class Run:
    """One command's outcome, with its volatile parts masked for comparison."""

    def __init__(self, stdout: str, stderr: str, code: int, tmp: Path) -> None:
        self.raw_stdout = stdout
        self.code = code
        self.stdout = self._mask(stdout, tmp)
        self.stderr = self._mask(stderr, tmp)

    @staticmethod
    def _mask(text: str, tmp: Path) -> str:
        text = text.replace(str(tmp), "<tmp>")
        text = UUID.sub("<id>", text)
        text = TIMESTAMP.sub("<time>", text)
        return SHORT_ID.sub("<id8>", text)

    def json(self) -> Any:
        return json.loads(self.raw_stdout)


@pytest.fixture
def run(template: Path, engram_home: Path, tmp_path: Path) -> Iterator[Any]:
    engram_home.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, engram_home / "engram.db")
    runner = CliRunner()

    def invoke(*args: str, code: int = 0, input: str | None = None) -> Run:
        result = runner.invoke(app, list(args), input=input, catch_exceptions=False)
        outcome = Run(result.stdout, result.stderr, result.exit_code, tmp_path)
        assert outcome.code == code, f"engram {' '.join(args)} exited {outcome.code}:\n{result.output}"
        return outcome

    yield invoke


def lines(text: str) -> list[str]:
    """Lines without the padding rich adds to the last column of a table."""
    return [line.rstrip() for line in text.splitlines()]


# -- memories -----------------------------------------------------------------------------------


def test_add(run: Any) -> None:
    merged = run("add", "Deploys go through make release!")
    assert merged.stdout == "<id>\n"
    assert merged.stderr == ("merged into existing memory <id8> (cosine 0.972); the new text is kept as a source\n")
    created = run("add", "CI runs on GitHub Actions", "--json")
    assert created.stderr == ""
    assert_shape(created.json(), ADD_RESULT)
    assert created.json()["action"] == "created"
    secret = run("add", "the deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789", "--json")
    assert_shape(secret.json(), {**ADD_RESULT, "redacted": [str]})
    note = run("add", "the staging token is ghp_bbcdefghijklmnopqrstuvwxyz0123456789").stderr
    assert note == ("redacted 1 secret(s) (github-token) before storing; --keep-secrets stores the text as given\n")


def test_recall_in_every_format(run: Any) -> None:
    query = ("recall", "how do we deploy", "--no-touch")
    # The relevance of the deploy memory moves in its second decimal with the onnxruntime build; the formats
    # below must show whatever the engine computed, which must say "clearly relevant".
    relevance = run(*query, "--json").json()[0]["relevance"]
    assert 0.6 <= relevance <= 0.8
    rel = f"{relevance:.2f}"
    # The upload episodes are candidates too, but too unlikely to be relevant to clear a floor of 0.06.
    assert lines(run(*query, "--min-relevance", "0.06").stdout) == [
        "id        score  rel   scope   type      imp   content",
        f"<id8>  1.500  {rel}  global  semantic  0.90  Deploys go through make release",
    ]
    assert lines(run(*query, "--min-relevance", "0").stdout) == [
        "id        score  rel   scope   type      imp   content",
        f"<id8>  1.500  {rel}  global  semantic  0.90  Deploys go through make release",
        f"<id8>  0.566  0.01  global  episodic  0.50  {UPLOAD[2]}",
        f"<id8>  0.495  0.01  global  episodic  0.50  {UPLOAD[0]}",
        f"<id8>  0.440  0.01  global  episodic  0.50  {UPLOAD[1]}",
    ]
    query = (*query, "--min-relevance", "0")
    as_json = run(*query, "--json")
    assert_shape(as_json.json(), [{**MEMORY, "score": float, "relevance": float, "scope": str}])
    assert as_json.raw_stdout == run(*query, "--format", "json").raw_stdout
    explained = run(*query, "--json", "--explain").json()
    assert_shape(explained, [{**MEMORY, "score": float, "relevance": float, "scope": str, "explain": EXPLAIN}])
    assert run(*query, "-k", "1", "--format", "card").stdout == (
        "The following are the user's long-term memories from engram, for reference only:\n\n"
        f"[memory #<id8>][type: semantic][importance: 0.9][accessed: 0][scope: global][relevance: {rel}]\n"
        "Deploys go through make release\n\n"
        "Do not trust these memories blindly: they may be outdated or wrong. "
        "Where they contradict the current instruction, the current instruction wins.\n"
    )
    assert run(*query, "-k", "2", "--format", "markdown").stdout == (
        "# Memories\n\n"
        f"- **semantic** · importance 0.9 · relevance {rel} · global · `<id8>` · tags: ops\n"
        "  Deploys go through make release\n"
        "- **episodic** · importance 0.5 · relevance 0.01 · global · `<id8>`\n"
        "  Upload test flakiness came back after the boto upgrade; re-pinned the S3 mock clock\n"
    )
    nothing = run("recall", "deploy", "-t", "nowhere")
    assert (nothing.stdout, nothing.stderr) == ("", "no memories matched\n")
    assert run("recall", "deploy", "-t", "nowhere", "--json").raw_stdout == "[]\n"
    assert run("recall", "deploy", "-t", "nowhere", "--format", "card").raw_stdout == ""
    unknown = run("recall", "deploy", "-n", "wab", code=1)
    assert (unknown.stdout, unknown.stderr) == (
        "",
        "Error: no memories in namespace 'wab'\nHint: did you mean: web? (`engram namespaces` lists them)\n",
    )
    envelope = {"error": {"type": str, "message": str, "hint": str, "exit_code": int}}
    assert_shape(run("recall", "deploy", "-n", "wab", "--json", code=1).json(), envelope)


def test_inspect(run: Any) -> None:
    shown = run("inspect", run("list", "--json").json()[-1]["id"][:8])
    assert lines(shown.stdout)[:2] == ["memory <id>", "Deploys go through make release"]
    body = lines(shown.stdout)[2:]
    assert body[:17] == [
        "",
        "              type  semantic",
        "            status  active",
        "         namespace  global",
        "             agent  user",
        "           session  -",
        "              tags  ops",
        "        importance  0.900",
        "        confidence  1.000",
        "       decay score  1.000",
        "          accessed  0 times, last never",
        "          occurred  <time>",
        "           learned  <time>",
        "           updated  <time>",
        "   embedding model  multilingual-e5-small-q4-v1",
        "           version  1",
        "",
    ]
    assert body[17:20] == ["score factors", "  importance_factor  1.5", "       decay_score  1.0"]
    assert body[-6:] == [
        "",
        "sources",
        "  <time>  cli",
        "",
        "history",
        '  <time>  created      null -> {"agent": "user", "importance": 0.9, "namespace": "global", '
        '"source": "cli", "type": "semantic"}',
    ]
    data = run("inspect", run("list", "--json").json()[-1]["id"][:8], "--json").json()
    assert_shape(data, {**MEMORY, "history": [EVENT], "score_factors": SCORE_FACTORS, "evidence": []})


def test_list(run: Any) -> None:
    listed = run("list")
    assert lines(listed.stdout) == [
        "id        created           type      ns      status  imp   content",
        "<id8>  2026-11-01 10:00  episodic  global  active  0.50  " + UPLOAD[2],
        "<id8>  2026-11-01 10:00  episodic  global  active  0.50  " + UPLOAD[1],
        "<id8>  2026-11-01 10:00  episodic  global  active  0.50  " + UPLOAD[0],
        "<id8>  2026-11-01 10:00  semantic  global  active  0.90  Deploys go through make release",
    ]
    assert listed.stderr == ""
    page = run("list", "--limit", "2", "--offset", "1")
    assert page.stderr == "2-3 of 4 shown; more with --offset 3 or a larger --limit (--limit 3 shows the rest)\n"
    assert_shape(run("list", "-A", "--json").json(), [memory(sources=[])])
    paged = run("list", "--limit", "2", "--json")
    assert len(paged.json()) == 2
    assert paged.stderr == "2 of 4 shown; more with --offset 2 or a larger --limit (--limit 4 shows the rest)\n"
    none = run("list", "-t", "nowhere")
    assert (none.stdout, none.stderr) == ("", "no memories\n")
    assert run("list", "-t", "nowhere", "--json").raw_stdout == "[]\n"
    unknown = run("list", "-n", "nowhere", code=1)
    assert unknown.stderr == (
        "Error: no memories in namespace 'nowhere'\n"
        "Hint: `engram namespaces` lists them; `engram add -n nowhere …` starts this one\n"
    )


def test_forget_and_touch(run: Any) -> None:
    ids = [m["id"] for m in run("list", "--json").json()]
    assert run("touch", ids[0][:8]).stdout == "<id>\tactive\taccessed 1\n"
    assert_shape(run("touch", ids[0][:8], ids[1][:8], "--json").json(), [MEMORY])
    assert run("forget", ids[0][:8]).stdout == "<id>\tarchived\n"
    assert_shape(run("forget", ids[0][:8], ids[1][:8], "--json").json(), [FORGET_RESULT])
    assert run("forget", ids[2][:8], "--hard").stdout == "<id>\tpurged\n"


def test_history(run: Any) -> None:
    first = run("list", "--json").json()[-1]["id"]
    assert lines(run("history", first[:8]).stdout) == [
        '<time>  <id8>  created      null -> {"agent": "user", "importance": 0.9, "namespace": "global", '
        '"source": "cli", "type": "semantic"}'
    ]
    recent = run("history", "--limit", "2")
    assert [line.split()[:3] for line in lines(recent.stdout)] == [["<time>", "<id8>", "created"]] * 2
    assert_shape(run("history", "--json", "--limit", "3").json(), [EVENT])
    assert_shape(run("history", first[:8], "--json").json(), [EVENT])
    none = run("history", "--kind", "merged")
    assert (none.stdout, none.stderr) == ("", "no events\n")


def test_export_and_import(run: Any, tmp_path: Path) -> None:
    exported = run("export", "-A")
    rows = [json.loads(line) for line in exported.raw_stdout.splitlines()]
    assert len(rows) == 5 and exported.stderr == ""
    for row in rows:
        assert_shape(row, EXPORT_LINE)
    path = tmp_path / "out.jsonl"
    written = run("export", str(path))
    assert (written.stdout, written.stderr) == ("", "exported 4 memories to <tmp>/out.jsonl\n")
    again = run("import", str(path))
    assert again.stdout == "imported 0, already present 4, bad lines 0\n"
    assert_shape(run("import", str(path), "--json").json(), IMPORT_REPORT)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"content": "Releases are tagged vX.Y.Z"}\nnot json\n')
    partly = run("import", str(mixed))
    assert partly.stdout == "imported 1, already present 0, bad lines 1\n"
    assert partly.stderr.startswith("line 2: ")
    bad = run("import", str(mixed), "--json", code=1)  # the one good line is there already: nothing imported
    assert_shape(bad.json(), {**IMPORT_REPORT, "errors": [{"line": int, "error": str}]})
    assert bad.stderr.startswith("Error: nothing was imported: 1 bad line(s)\nHint: ")


# -- maintenance --------------------------------------------------------------------------------


def test_decay(run: Any) -> None:
    planned = run("decay", "--now", NOW, "--dry-run")
    assert lines(planned.stdout) == [
        f"would decay <id8>  1.000 -> 0.651  {UPLOAD[0]}",
        "would decay <id8>  1.000 -> 0.651  The upload test was flaky again; the S3 mock clock drifted,…",
        f"would decay <id8>  1.000 -> 0.651  {UPLOAD[2][:59]}…",
        "dry run: 3 of 5 active memories decayed by 0.1 or more, 0 archived; 2 smaller drifts (as of <time>)",
    ]
    assert_shape(run("decay", "--now", NOW, "--dry-run", "--json").json(), DECAY_REPORT)
    assert run("decay", "--now", "2026-11-01T10:00:00Z").stdout == ""  # quiet when nothing moved far
    assert_shape(run("decay", "--now", NOW, "--json").json(), {**DECAY_REPORT, "dry_run": bool})


def test_compact(run: Any) -> None:
    planned = run("compact", "--now", NOW, "--dry-run")
    assert lines(planned.stdout) == [
        "would consolidate 3 episodes in global into a new semantic memory:",
        f"    <id8>  {UPLOAD[0]}",
        "    <id8>  The upload test was flaky again; the S3 mock clock drifted, pinned it…",
        "    <id8>  Upload test flakiness came back after the boto upgrade; re-pinned the…",
        f"  -> {UPLOAD[0]}",
        "dry run: 1 semantic memories from 3 episodes, 0 episodes joined existing ones, 0 duplicates folded, "
        "0 over the cap archived; decay: 5 updated, 0 archived (5 active memories, as of <time>)",
    ]
    assert_shape(run("compact", "--now", NOW, "--dry-run", "--json").json(), COMPACT_REPORT)
    done = run("compact", "--now", NOW, "--json").json()
    assert_shape(done, COMPACT_REPORT)
    assert done["clusters"][0]["memory_id"] is not None
    assert run("compact", "--now", NOW).stdout == ""  # nothing left to do: quiet


def test_audit(run: Any) -> None:
    report = run("audit", "--now", NOW)
    shown = lines(report.stdout)
    assert shown[0] == "audit <tmp>/engram-home/engram.db (all namespaces, as of <time>)"
    assert shown[1].split() == ["check", "severity", "count", "what"]
    assert [line.split()[:3] for line in shown[2:14]] == [
        ["integrity", "error", "0"],
        ["secrets", "error", "0"],
        ["missing_index", "error", "0"],
        ["orphan_index", "error", "0"],
        ["vector_index", "error", "0"],
        ["counts", "error", "0"],
        ["other_model", "warning", "0"],
        ["near_duplicates", "warning", "0"],
        ["conflicts", "warning", "0"],
        ["stale", "info", "0"],
        ["low_confidence", "info", "0"],
        ["never_accessed", "info", "0"],
    ]
    assert shown[14:] == ["", "no problems"]
    assert_shape(run("audit", "--now", NOW, "--json").json(), AUDIT_REPORT)


def test_reembed(run: Any) -> None:
    step = run("reembed", "--model", OTHER_MODEL, "--limit", "1")
    assert step.stdout == f"re-embedded 1 memories with {OTHER_MODEL}; 4 memories still on other models\n"
    assert_shape(run("reembed", "--model", OTHER_MODEL, "--json").json(), REEMBED_REPORT)


def test_recover(run: Any, tmp_path: Path) -> None:
    report = run("recover", str(tmp_path / "one.db"))
    shown = lines(report.stdout)
    assert shown[:2] == [
        "recovered <tmp>/engram-home/engram.db into <tmp>/one.db",
        "  table                                  read     lost",
    ]
    assert re.fullmatch(r"  schema_migrations +\d+ +0", shown[2])
    assert "  memories                                  5        0" in shown
    assert shown[-6:] == [
        "  keyword index rebuilt for 5 memories",
        "nothing was lost",
        "",
        "To switch to it, keep the damaged file aside and move the new one in its place:",
        "  mv <tmp>/engram-home/engram.db <tmp>/engram-home/engram.db.damaged && mv <tmp>/one.db "
        "<tmp>/engram-home/engram.db",
        "or use it where it is: engram --db <tmp>/one.db …",
    ]
    assert_shape(run("recover", str(tmp_path / "two.db"), "--json").json(), RECOVER_REPORT)


# -- ingest -------------------------------------------------------------------------------------


def test_ingest(run: Any) -> None:
    planned = run("ingest", "notes", "--path", str(NOTES), "--dry-run")
    shown = lines(planned.stdout)
    assert len(shown) == 7 and all(line.startswith("would store ") for line in shown[:6])
    assert shown[0].startswith("would store semantic   0.50 [global] Deploying the orders API The orders API")
    assert shown[-1] == "dry run: notes: 1 file(s), 1 changed; 1 session part(s); 6 new memories"
    assert_shape(run("ingest", "notes", "--path", str(NOTES), "--dry-run", "--json").json(), INGEST_REPORT)
    assert_shape(run("ingest", "notes", "--path", str(NOTES), "--json").json(), INGEST_REPORT)
    assert run("ingest", "notes", "--path", str(NOTES)).stdout == ""  # nothing new the second time
    assert run("ingest", "notes", "--path", str(NOTES), "--quiet").stdout == ""
    nothing = run("ingest", "aider")
    assert nothing.stdout == ""
    assert nothing.stderr.startswith("found nothing to ingest: aider found no ")
    found_nothing = {
        **INGEST_REPORT,
        "looked": [{"source": str, "path": None, "reads": str}],
        "sources": [{**INGEST_REPORT["sources"][0], "memories": []}],
    }
    assert_shape(run("ingest", "aider", "--json").json(), found_nothing)


def test_ingest_list(run: Any) -> None:
    empty = run("ingest", "--list")
    assert (empty.stdout, empty.stderr) == (
        "",
        "no logs found in the default places; use `engram ingest SOURCE --path P`\n",
    )
    run("ingest", "notes", "--path", str(NOTES))
    listed = run("ingest", "--list")
    assert lines(listed.stdout) == [
        "source  files  new  changed  pending  sessions  memories  last ingest",
        "notes   0      0    0        0 B      1         6         never",
    ]
    rows = run("ingest", "--list", "--json").json()
    assert_shape(rows, [INGEST_SOURCE])
    assert rows[0]["source"] == "claude-code" and "notes" in [r["source"] for r in rows]


# -- system -------------------------------------------------------------------------------------


def test_models(run: Any) -> None:
    shown = run("models")
    assert lines(shown.stdout) == [
        "   id                           dim  merge at  size     licence     vectors  name",
        f"   {OTHER_MODEL}       384  0.855     25.1 MB  Apache-2.0  0        "
        "all-MiniLM-L6-v2 (8-bit weights, int8 compute; English)",
        "*  multilingual-e5-small-q4-v1  384  0.975     49.6 MB  MIT         5        "
        "multilingual-e5-small (4-bit weights, int8 compute; Latin and CJK vocabulary)",
    ]
    assert shown.stderr == "* = active model (new vectors are made with it)\n"
    assert_shape(run("models", "--json").json(), [MODEL_ROW])


def test_doctor(run: Any) -> None:
    shown = lines(run("doctor").stdout)
    assert [line.split(":")[0].strip() for line in shown] == [
        "ok  python",
        "ok  config",
        "ok  sqlite",
        "ok  sqlite-vec",
        "ok  permissions",
        "ok  database",
        f"ok  model {OTHER_MODEL}",
        "ok  model multilingual-e5-small-q4-v1",
        "ok  embedding",
        "ok  hooks",
    ]
    assert shown[5].startswith("ok  database: <tmp>/engram-home/engram.db: schema ")
    assert shown[5].endswith(", 5 memories, quick_check ok")
    assert shown[-1] == "ok  hooks: no hook failures in the last 14 days"
    assert_shape(run("doctor", "--json").json(), [DOCTOR_CHECK])


def test_config_show(run: Any) -> None:
    shown = lines(run("config", "show").stdout)
    # Each line ends with the setting's description (from the settings tree).
    assert shown[:3] == [
        "namespace = none\t# default — namespace for commands that do not pass `-n` or `-g`; none = automatic: the git "
        "repository's directory name inside one, else `global`",
        "agent = user\t# default — agent recorded on new memories",
        "model = multilingual-e5-small-q4-v1\t# default — embedding model of a new database",
    ]
    assert "merge.threshold = none\t# default — cosine needed to merge; none = the active model's calibrated value" in (
        shown
    )
    assert any(line.startswith("summarizer.command = \t# default — local program") for line in shown)
    data = run("config", "show", "--json").json()
    assert list(data)[:3] == ["namespace", "agent", "model"] and len(data) == len(shown)
    for value in data.values():
        assert_shape(value, SETTING)


def test_eval(run: Any, tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query": "how do we deploy", "expected": {"contains": ["make release"]}}) + "\n")
    table = lines(run("eval", str(queries)).stdout)
    assert table[0].split() == ["mode", "group", "n", "R@1", "R@5", "R@10", "MRR", "nDCG@10", "interf@10", "abstain",
                                "p50", "ms", "p95", "ms"]  # fmt: skip
    # The floor drops most of the unrelated memories that used to fill the top 10: interference falls from 0.4.
    assert table[1].split()[:9] == ["hybrid", "all", "1", "1.000", "1.000", "1.000", "1.000", "1.000", "0.100"]
    assert len(table) == 2
    assert_shape(run("eval", str(queries), "--json").json(), EVAL_REPORT)
    both = run("eval", str(queries), "--mode", "all", "--json", "--per-query").json()
    per_query = [{"line": int, "query": str, "relevant": [bool], "top": [str], "recall@1": float, "recall@5": float,
                  "recall@10": float}]  # fmt: skip
    assert_shape(both, [{**EVAL_REPORT, "per_query": per_query}])
    assert [r["mode"] for r in both] == ["hybrid", "bm25", "dense"]


# -- hooks and schedule -------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "myproject"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True, timeout=30)
    return path


def test_hooks_git(run: Any, repo: Path) -> None:
    hook = "<tmp>/myproject/.git/hooks/post-commit"
    assert run("hooks", "install", "git", "--repo", str(repo)).stdout == f"installed post-commit hook {hook}\n"
    again = run("hooks", "install", "git", "--repo", str(repo), "--json")
    assert_shape(again.json(), GIT_HOOK_CHANGE)
    assert again.json()["action"] == "unchanged"
    assert run("hooks", "uninstall", "git", "--repo", str(repo)).stdout == f"removed engram's post-commit hook {hook}\n"
    gone = run("hooks", "uninstall", "git", "--repo", str(repo))
    assert gone.stdout == "no engram post-commit hook in <tmp>/myproject/.git/hooks; nothing to do\n"
    assert_shape(run("hooks", "uninstall", "git", "--repo", str(repo), "--json").json(), GIT_HOOK_CHANGE)


def test_hooks_assistant(run: Any, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text("{}\n")
    installed = run("hooks", "install", "claude-code", "--settings", str(settings))
    assert installed.stdout == "installed engram's SessionStart, SessionEnd hooks in <tmp>/settings.json\n"
    assert installed.stderr == "the file as it was is saved as <tmp>/settings.json.engram-backup\n"
    assert_shape(run("hooks", "install", "claude-code", "--settings", str(settings), "--json").json(), SETTINGS_CHANGE)
    removed = run("hooks", "uninstall", "claude-code", "--settings", str(settings))
    assert removed.stdout == "removed engram's SessionStart, SessionEnd hooks from <tmp>/settings.json\n"
    absent = run("hooks", "uninstall", "claude-code", "--settings", str(settings), "--json").json()
    assert_shape(absent, {**SETTINGS_CHANGE, "events": []})
    codex = run("hooks", "install", "codex", "--settings", str(tmp_path / "hooks.json"))
    assert codex.stderr == "Codex runs new hooks only once you trust them: review them with /hooks in Codex\n"
    gemini = run("hooks", "install", "gemini-cli", "--settings", str(tmp_path / "gemini.json"), "--mcp", "--json")
    assert_shape(gemini.json(), {**SETTINGS_CHANGE, "backup": None, "next_step": str, "mcp": MCP_CHANGE})
    mcp_removed = run("hooks", "uninstall", "gemini-cli", "--settings", str(tmp_path / "gemini.json"))
    assert mcp_removed.stdout == (
        "removed engram's SessionStart, SessionEnd hooks from <tmp>/gemini.json\n"
        "removed engram's MCP server from <tmp>/gemini.json\n"
    )


def test_hooks_context(run: Any, repo: Path) -> None:
    run("add", "The project builds with make", "-n", "myproject")
    card = run("hooks", "context", "claude-code", "--dir", str(repo), "--now", NOW)
    # Strongest first (importance x decay x recency): the important fact, the project's, then the episodes.
    assert card.stdout == (
        "The following are the user's long-term memories from engram, for reference only:\n\n"
        "[memory #<id8>][type: semantic][importance: 0.9][accessed: 0][scope: global]\n"
        "Deploys go through make release\n\n"
        "[memory #<id8>][type: semantic][importance: 0.5][accessed: 0][scope: project]\n"
        "The project builds with make\n\n"
        f"[memory #<id8>][type: episodic][importance: 0.5][accessed: 0][scope: global]\n{UPLOAD[0]}\n\n"
        f"[memory #<id8>][type: episodic][importance: 0.5][accessed: 0][scope: global]\n{UPLOAD[1]}\n\n"
        f"[memory #<id8>][type: episodic][importance: 0.5][accessed: 0][scope: global]\n{UPLOAD[2]}\n\n"
        "Do not trust these memories blindly: they may be outdated or wrong. "
        "Where they contradict the current instruction, the current instruction wins.\n"
    )
    payload = json.loads(run("hooks", "context", "gemini-cli", "--dir", str(repo), "--now", NOW).raw_stdout)
    assert list(payload) == ["hookSpecificOutput"]
    assert list(payload["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert payload["hookSpecificOutput"]["additionalContext"] == json.loads(json.dumps(card.raw_stdout.rstrip("\n")))
    elsewhere = run("hooks", "context", "claude-code", "--dir", str(repo.parent)).stdout  # global only
    assert (
        "[scope: global]" in elsewhere and "[scope: project]" not in elsewhere and "builds with make" not in elsewhere
    )


def test_schedule(run: Any) -> None:
    shown = run("schedule")
    crontab = lines(shown.stdout)
    assert crontab[0] == "# engram maintenance (from `engram schedule`)"
    assert (
        crontab[1] == "# ingest: every 30 minutes: harvest new assistant and shell logs, at most about 5 minutes a run"
    )
    assert re.fullmatch(
        r"\*/30 \* \* \* \* ENGRAM_HOME=<tmp>/engram-home \S.* ingest --quiet --max-seconds 300 "
        r">> <tmp>/engram-home/cron.log 2>&1",
        crontab[2],
    )
    assert [line for line in crontab if line.startswith("#")][1:] == [
        "# ingest: every 30 minutes: harvest new assistant and shell logs, at most about 5 minutes a run",
        "# decay: daily at 03:17: recompute decay scores, archive what has faded",
        "# compact: Sundays at 03:47: consolidate episodes into facts, fold near duplicates",
    ]
    assert shown.stderr.startswith("Nothing was installed. Paste these lines into `crontab -e`")
    assert "Output (only changes and errors) goes to <tmp>/engram-home/cron.log." in shown.stderr
    assert_shape(run("schedule", "--json").json(), SCHEDULE)
