"""The conversation as evidence: ingested turns are kept redacted, found by recall after the memories, listed by
inspect, purged with forget --hard, scanned by audit, bounded, and moved by reembed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.errors import UsageError
from engram_cli.ingest.base import ASSISTANT, TOOL, USER, Message, Session
from engram_cli.ingest.turns import turns

SESSION = "6e1d2c3b-4a59-4f68-8b7c-9d0e1f2a3b4c"
TOKEN = "ghp_Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
MINILM = "all-minilm-l6-v2-q8-v1"
# A detail said in passing by the assistant: no memory is made of it, only the conversation holds it.
DETAIL = "By the way, the staging proxy listens on port 7311 because the metrics agent already holds 7310."
CHINESE = "另外，预发环境的缓存清理脚本在每周三凌晨运行，别在那个时段压测。"


def _line(kind: str, uuid: str, parent: str | None, content: Any, at: str) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": f"msg_{uuid}", "role": "assistant", "model": "claude-sonnet-4-5", "content": content}
    record = {
        "parentUuid": parent, "isSidechain": False, "type": kind, "cwd": "/home/dev/src/shop",
        "sessionId": SESSION, "uuid": uuid, "timestamp": at, "message": message,
    }  # fmt: skip
    return json.dumps(record, ensure_ascii=False) + "\n"


def _use(uid: str, name: str, **given: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": uid, "name": name, "input": given}


def _result(uid: str, output: str, *, error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": uid, "is_error": error, "content": output}]


def _said(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _session_log(home: Path) -> Path:
    """A Claude Code session of our own: a request, prose, a failing test, an edit, a token, a Chinese aside."""
    test_file = "/home/dev/src/shop/tests/test_upload.py"
    turns = [
        ("user", "Please fix the flaky upload test in the shop service, it fails on CI."),
        ("assistant", [*_said("The upload test races the thumbnail worker."),
                       _use("toolu_1", "Bash", command="pytest tests/test_upload.py")]),
        ("user", _result("toolu_1", "E   AssertionError: thumbnail missing for upload 42\n1 failed", error=True)),
        ("assistant", [_use("toolu_2", "Edit", file_path=test_file, old_string="assert thumb.exists()",
                            new_string="queue.drain()\nassert thumb.exists()")]),
        ("user", _result("toolu_2", f"The file {test_file} has been updated.")),
        ("user", f"Push the branch to the staging remote with the deploy token {TOKEN} please"),
        ("user", CHINESE),
        ("user", "ok"),
        ("assistant", _said("Pushed the branch; the upload test passes now that it waits for the queue to drain.")),
        # A side question after the work: its answer is neither the diagnosis nor the outcome, so no memory holds it.
        ("user", "Unrelated question: which port does the staging proxy use?"),
        ("assistant", _said(DETAIL)),
    ]  # fmt: skip
    lines, parent = [], None
    for i, (role, content) in enumerate(turns):
        uid = f"{role[0]}{i}"
        lines.append(_line(role, uid, parent, content, f"2026-03-02T10:{i:02d}:00.000Z"))
        parent = uid
    path = home / ".claude" / "projects" / "-home-dev-src-shop" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def ingested(engram: Engram, tmp_path: Path) -> Engram:
    log = _session_log(tmp_path / "logs")
    report = engram.ingest("claude-code", path=log)
    assert not report.errors and report.sources[0].evidence >= 6
    return engram


def _turns(engram: Engram) -> list[tuple[str, str]]:
    return [(str(k), str(c)) for k, c in engram.store.rows("SELECT kind, content FROM evidence ORDER BY seq")]


def _file_bytes(engram: Engram) -> bytes:
    path = engram.path
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())


def _episode(engram: Engram) -> str:
    (memory_id,) = [m.id for m in engram.list(all_namespaces=True, limit=100) if m.type == "episodic"]
    return memory_id


# -- what is kept --------------------------------------------------------------------------------


def test_ingest_keeps_each_substantive_turn_once_redacted_and_linked(ingested: Engram, tmp_path: Path) -> None:
    kept = _turns(ingested)
    kinds = [k for k, _ in kept]
    assert kinds.count("request") == 4 and {"answer", "error", "change"} <= set(kinds)
    assert not any(c == "ok" for _, c in kept)  # an acknowledgement is not evidence
    (error,) = [c for k, c in kept if k == "error"]
    assert error == "$ pytest tests/test_upload.py\nerror: AssertionError: thumbnail missing for upload 42"
    (change,) = [c for k, c in kept if k == "change"]
    assert change.startswith("changed tests/test_upload.py")
    # The token never reaches a table, the keyword index or the file; the turn says what was there.
    assert any("[REDACTED:github-token]" in c for _, c in kept)
    assert TOKEN.encode() not in _file_bytes(ingested) and TOKEN[4:20].encode() not in _file_bytes(ingested)
    # Evidence lives in the session's project, and the episode is linked to every turn.
    assert {str(r[0]) for r in ingested.store.rows("SELECT DISTINCT namespace FROM evidence")} == {"shop"}
    episode = ingested.get(_episode(ingested))
    assert len(ingested.store.evidence.of_memory(episode.pk)) == len(kept)
    # Read again: nothing new, nothing twice.
    again = ingested.ingest("claude-code", path=tmp_path / "logs" / ".claude")
    assert again.sources[0].evidence == 0 and _turns(ingested) == kept


def test_a_grown_session_adds_only_its_new_turns_with_their_neighbour_as_context(
    ingested: Engram, tmp_path: Path
) -> None:
    log = next((tmp_path / "logs").rglob("*.jsonl"))
    before = _turns(ingested)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(_line("user", "u11", "a10", "Also bump the thumbnail worker timeout to ninety seconds on staging.",
                       "2026-03-02T10:11:00.000Z"))  # fmt: skip
    report = ingested.ingest("claude-code", path=log)
    assert report.sources[0].evidence == 1
    assert _turns(ingested) == [*before, ("request", "Also bump the thumbnail worker timeout to ninety seconds "
                                          "on staging.")]  # fmt: skip


def test_turns_leave_out_acknowledgements_tool_chatter_and_code() -> None:
    session = Session("claude-code", "s", "/p", project="/home/dev/src/shop")
    session.messages = [
        Message(USER, "thanks!", id="1"),
        Message(USER, "好的", id="2"),
        Message(ASSISTANT, "Here it is:\n```python\nprint('x')\n```", id="3"),
        Message(TOOL, "total 0\ndrwxr-xr-x  2 dev dev 40 .", id="4", tool="Bash", command="ls -la"),
        Message(TOOL, "total 0", id="5", tool="Bash"),
        Message(ASSISTANT, "The cache key includes the locale, so each language warms its own entries.", id="6"),
    ]
    assert [(t.kind, t.content) for t in turns(session)] == [
        ("answer", "The cache key includes the locale, so each language warms its own entries.")
    ]


# -- where it shows -------------------------------------------------------------------------------


def test_recall_with_evidence_finds_a_detail_no_memory_holds_and_names_its_session(ingested: Engram, cli: Any) -> None:
    assert not any("7311" in m.content for m in ingested.list(all_namespaces=True, limit=100))
    asked = "which port does the staging proxy listen on"
    shown = json.loads(cli("recall", asked, "-A", "--evidence", "--json").stdout)
    evidence = [h for h in shown if h.get("evidence")]
    assert evidence and "7311" in evidence[0]["content"]
    assert evidence[0]["session"] == SESSION and evidence[0]["source"] == "claude-code"
    assert 0 < evidence[0]["relevance"] <= 1 and evidence[0]["kind"] == "answer"
    # Memories first: every evidence hit comes after every memory hit.
    flags = [bool(h.get("evidence")) for h in shown]
    assert flags == sorted(flags)
    table = cli("recall", asked, "-A", "--evidence").stdout
    assert "evidence:answer" in table and "claude-code:" in table


def test_recall_fills_from_evidence_when_memories_are_few_and_not_when_told_not_to(ingested: Engram) -> None:
    query = "staging proxy port 7311"
    hits = ingested.recall(query, k=10, all_namespaces=True, bump=False)
    assert len(hits) < 10 and any("7311" in h.turn.content for h in hits.evidence)
    assert len(hits) + len(hits.evidence) <= 10
    assert ingested.recall(query, k=10, all_namespaces=True, bump=False, evidence=False).evidence == []
    with pytest.raises(UsageError):
        ingested.recall(query, all_namespaces=True, type="semantic", evidence=True)


def test_a_recall_that_fills_from_evidence_embeds_its_query_once(
    ingested: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = ingested._embedder(ingested.active_model)
    embed = type(embedder).embed_batch
    queries: list[str] = []

    def counted(self: Any, texts: Any, **kwargs: Any) -> Any:
        if kwargs.get("kind") == "query":
            queries.extend(texts)
        return embed(self, texts, **kwargs)

    monkeypatch.setattr(type(embedder), "embed_batch", counted)
    hits = ingested.recall("staging proxy port 7311", k=10, all_namespaces=True, bump=False)
    assert hits.evidence  # both the memories and the turns were searched
    assert queries == ["staging proxy port 7311"]


def test_a_weak_memory_gives_its_place_to_evidence_and_is_not_counted(ingested: Engram, cli: Any) -> None:
    query = "staging proxy port 7311"
    every = ingested.recall(query, k=10, all_namespaces=True, bump=False, evidence=False, min_relevance=0)
    before = {h.memory.id: h.memory.access_count for h in every}
    assert before
    # Every memory counts as weak: the one place goes to the best turn, and no memory is counted as accessed.
    cli("config", "set", "evidence.fill_below", "1")
    with Engram.open() as mem:
        one = mem.recall(query, k=1, all_namespaces=True, min_relevance=0)
        assert list(one) == [] and "7311" in one.evidence[0].turn.content
        assert {i: mem.get(i).access_count for i in before} == before
    # Every memory counts as strong: the memory keeps the place, and is counted.
    cli("config", "set", "evidence.fill_below", "0")
    with Engram.open() as mem:
        one = mem.recall(query, k=1, all_namespaces=True, min_relevance=0)
        assert len(one) == 1 and one.evidence == []
        assert mem.get(one[0].memory.id).access_count == before[one[0].memory.id] + 1


def test_chinese_evidence_is_found_by_a_two_character_word(ingested: Engram) -> None:
    hits = ingested.recall("压测", all_namespaces=True, bump=False, evidence=True)
    assert any("压测" in h.turn.content for h in hits.evidence)


def test_evidence_never_shows_in_cards_or_a_default_list(ingested: Engram, cli: Any) -> None:
    texts = [c for _, c in _turns(ingested)]
    listed = json.loads(cli("list", "-A", "--json").stdout)
    assert listed and not any(m["content"] in texts for m in listed)
    assert all(m["type"] in ("episodic", "semantic", "procedural", "working") for m in listed)
    card = cli("recall", "staging proxy port 7311", "-A", "--format", "card").stdout
    assert "7311" not in card
    entries = ingested.scoped(ingested.key_scope(None)).card(k=20)
    assert not any("7311" in e.memory.content for e in entries)


def test_inspect_lists_the_turns_a_memory_was_made_from(ingested: Engram, cli: Any) -> None:
    episode = _episode(ingested)
    data = json.loads(cli("inspect", episode, "--json").stdout)
    assert len(data["evidence"]) == len(_turns(ingested))
    assert {e["session"] for e in data["evidence"]} == {SESSION}
    assert any("7311" in e["content"] for e in data["evidence"])
    shown = cli("inspect", episode).stdout
    assert "evidence" in shown and f"claude-code:{SESSION}" in shown


# -- forgetting, auditing, bounding, reembedding -------------------------------------------------


def test_forget_hard_purges_the_turns_only_that_memory_came_from(ingested: Engram) -> None:
    episode = _episode(ingested)
    others = {
        pk for m in ingested.list(all_namespaces=True, limit=100) if m.id != episode
        for pk in (t.pk for t in ingested.store.evidence.of_memory(ingested.get(m.id).pk))
    }  # fmt: skip
    ingested.forget(episode, hard=True, all_namespaces=True)
    left = {int(r[0]) for r in ingested.store.rows("SELECT pk FROM evidence")}
    assert left == others  # what another memory came from stays
    assert not any("7311" in c for _, c in _turns(ingested))
    assert ingested.store.evidence.search(["7311"], None, 10) == []
    assert b"7311 because the metrics agent" not in _file_bytes(ingested)
    hits = ingested.recall("staging proxy port 7311", all_namespaces=True, evidence=True, bump=False)
    assert not any("7311" in h.turn.content for h in hits.evidence)


def test_forget_hard_purges_every_turn_that_says_the_memory_word_for_word(ingested: Engram) -> None:
    memory = ingested.add("the staging proxy listens on port 7311", namespace="shop").memory
    ingested.forget(memory.id, hard=True, namespace="shop")
    assert not any("7311" in c for _, c in _turns(ingested))


def test_audit_reports_a_secret_in_evidence_and_fix_redacts_it(ingested: Engram) -> None:
    ((pk,),) = ingested.store.rows("SELECT pk FROM evidence WHERE kind = 'change'")
    with ingested.store.write():
        ingested.store.evidence.set_content(pk, f"changed deploy.sh with {TOKEN}", "h")
    check = ingested.audit().check("secrets")
    assert check.count == 1 and [e["table"] for e in check.examples] == ["evidence"]
    assert ingested.audit(fix=True).check("secrets").count == 0
    assert ingested.store.evidence.load_many([pk])[pk].content == "changed deploy.sh with [REDACTED:github-token]"
    assert TOKEN.encode() not in _file_bytes(ingested)


def test_the_cap_keeps_a_namespace_bounded_and_decay_prunes_by_age(cli: Any, engram: Engram, tmp_path: Path) -> None:
    cli("config", "set", "evidence.max_per_namespace", "3")
    with Engram.open() as capped:
        capped.ingest("claude-code", path=_session_log(tmp_path / "logs"))
        kept = capped.store.rows("SELECT kind FROM evidence")
        assert len(kept) == 3
        with capped.store.write():
            capped.store.execute("UPDATE evidence SET learned_at = '2020-01-01T00:00:00Z'")
        report = capped.decay()
        assert report.evidence_pruned == 3 and capped.store.evidence.count() == 0


def test_reembed_moves_evidence_to_the_new_model(ingested: Engram, rows: Any) -> None:
    count = ingested.store.evidence.count()
    report = ingested.reembed(MINILM)
    assert report.remaining == 0 and report.active
    assert rows("SELECT DISTINCT embedding_model FROM evidence") == [(MINILM,)]
    old = ingested.store.evidence.table_for("multilingual-e5-small-q4-v1")
    new = ingested.store.evidence.table_for(MINILM)
    assert old is not None and new is not None
    assert rows(f"SELECT count(*) FROM {old}") == [(0,)] and rows(f"SELECT count(*) FROM {new}") == [(count,)]
    hits = ingested.recall("staging proxy port 7311", all_namespaces=True, evidence=True, bump=False)
    assert any("7311" in h.turn.content for h in hits.evidence)


def test_export_leaves_evidence_out(ingested: Engram, cli: Any) -> None:
    exported = cli("export", "-A").stdout
    records = [json.loads(line) for line in exported.splitlines()]
    assert records and not any("evidence" in r or "turn" in r for r in records)
    assert "7311" not in exported  # said only in the conversation


def test_evidence_off_keeps_no_turns(cli: Any, engram: Engram, tmp_path: Path) -> None:
    cli("config", "set", "evidence.keep", "false")
    with Engram.open() as mem:
        mem.ingest("claude-code", path=_session_log(tmp_path / "logs"))
        assert mem.store.evidence.count() == 0 and mem.list(all_namespaces=True)


def test_compact_gives_the_fact_the_evidence_of_the_episodes_it_folds(ingested: Engram) -> None:
    old = "2026-11-01T10:00:00Z"
    texts = (
        "Deploy failed: docker build ran out of disk on the CI runner. The cache lived on the runner.",
        "CI deploy broke again, runner disk full during docker build. Added a prune step before the build.",
    )
    episodes = [ingested.add(t, type="episodic", created_at=old, no_merge=True, namespace="shop").memory for t in texts]
    turn_pks = [int(r[0]) for r in ingested.store.rows("SELECT pk FROM evidence ORDER BY seq")]
    with ingested.store.write():
        ingested.store.evidence.link(turn_pks[:2], episodes[0].pk)
        ingested.store.evidence.link(turn_pks[2:3], episodes[1].pk)
    report = ingested.compact(now="2026-11-03T10:00:00Z", namespace="shop")
    (cluster,) = [c for c in report.clusters if {m.id for m in c.members} >= {e.id for e in episodes}]
    fact = ingested.get(cluster.memory_id)
    assert {t.pk for t in ingested.store.evidence.of_memory(fact.pk)} >= set(turn_pks[:3])
