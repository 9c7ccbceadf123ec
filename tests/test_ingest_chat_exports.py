"""Chat histories as sources: the ChatGPT and Claude.ai data exports and generic chat JSONL.

The fixtures in tests/fixtures/chat-exports are written for these tests, in the shapes the apps'
exports have (see the importers' docstrings for the fields used).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.ingest import base, importer
from engram_cli.ingest.base import Batch, Session
from engram_cli.ingest.chatgpt import current_branch

FIXTURES = Path(__file__).parent / "fixtures" / "chat-exports"
CHATGPT = FIXTURES / "chatgpt" / "conversations.json"
CLAUDE = FIXTURES / "claude-ai" / "conversations.json"
CHAT = FIXTURES / "chat" / "history.jsonl"
GITHUB_TOKEN = "ghp_Q7rT2mX9vL4kP8sN3wZ6yB1cD5fH0jK2aE7u"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def sessions(batch: Batch) -> dict[str, Session]:
    return {s.key: s for s in batch.sessions}


def said(session: Session) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in session.messages]


def ingest(cli: Any, *args: str, ok: bool = True) -> Any:
    return cli("ingest", *args, "--json", ok=ok)


def report_of(result: Any) -> dict[str, Any]:
    return json.loads(result.stdout)["sources"][0]  # type: ignore[no-any-return]


def memories(engram: Engram) -> list[tuple[str, str, str]]:
    return sorted((m.namespace, m.type, m.content) for m in engram.list(all_namespaces=True, limit=1000))


# --- parsing each format --------------------------------------------------------------------------


def test_chatgpt_export_follows_the_current_branch_and_keeps_only_what_was_said() -> None:
    found = sessions(importer("chatgpt").read(CHATGPT, None))
    tiles = found["6a1f0c2e-8d44-4b7e-9e0f-3c2b1a9d8e71"]
    assert [role for role, _ in said(tiles)] == ["user", "assistant", "user", "assistant"]
    assert said(tiles)[0][1].startswith("The tile cache on geo-tiles keeps evicting hot tiles.")
    assert said(tiles)[2] == ("user", "I always want config examples in TOML, please.")  # the image part is dropped
    text = "\n".join(m.text for m in tiles.messages)
    # the abandoned first wording, hidden context, the code tool call, its output and the reasoning are not kept
    for gone in ("Memcached", "helpful assistant", "Keep answers short", "Oskar", "print(2", "2048"):
        assert gone not in text, gone
    assert [m.id for m in tiles.messages] == ["n-q2", "n-a1", "n-q3", "n-a3"]
    assert tiles.messages[0].at == "2026-03-04T09:01:00.000000Z"
    assert (tiles.title, tiles.started_at, tiles.updated_at) == (
        "Tile cache eviction",
        "2026-03-04T09:00:00.000000Z",
        "2026-03-04T09:15:00.000000Z",
    )
    assert tiles.model == "gpt-4o" and tiles.project is None and tiles.restart
    weekly = found["0c9e7d3a-51f2-4a8b-b6c4-2e1d0f9a8b37"]  # an older export's "id", no current_node
    assert said(weekly) == [
        ("user", "记住：周报每周五下午四点前发给 Lina。"),
        ("assistant", "好的，周五下午四点前发给 Lina。"),
    ]


def test_chatgpt_branch_without_current_node_is_the_latest_and_a_parent_loop_ends_the_walk() -> None:
    mapping = {
        "r": {"parent": None, "children": ["a", "b"], "message": None},
        "a": {"parent": "r", "children": [], "message": None},
        "b": {"parent": "r", "children": ["c"], "message": None},
        "c": {"parent": "b", "children": [], "message": None},
    }
    assert current_branch(mapping, None) == ["r", "b", "c"]
    assert current_branch(mapping, "a") == ["r", "a"]
    assert current_branch(mapping, "gone") == ["r", "b", "c"]
    looped = {"x": {"parent": "y", "children": ["y"]}, "y": {"parent": "x", "children": ["x"]}}
    assert sorted(current_branch(looped, "x")) == ["x", "y"]


def test_claude_export_keeps_text_blocks_and_follows_the_current_leaf() -> None:
    found = sessions(importer("claude-ai").read(CLAUDE, None))
    invoice = found["b7e2c9a4-3f1d-4e6b-8a2c-9d0e1f2a3b4c"]
    assert said(invoice) == [
        ("user", "How should billing-api round invoice totals?"),
        ("assistant", "Round half-up to cents once, on the invoice total, never per line."),
        ("user", "Remember that billing-api rounds half-up on the invoice total."),
    ]
    text = "\n".join(m.text for m in invoice.messages)
    for gone in ("dropped branch", "Banker", "search results", "pasted attachment"):
        assert gone not in text, gone
    assert (invoice.title, invoice.started_at) == ("Invoice rounding", "2026-03-10T14:00:00.000000Z")
    standup = found["e1d2c3b4-a596-4788-9aab-bccddeeff001"]  # messages with "text" only, no content blocks
    assert said(standup) == [
        ("user", "I prefer standup notes as three bullet points."),
        ("assistant", "Three bullets it is."),
    ]
    assert [m.id for m in standup.messages] == ["d-1", "d-2"]


def test_chat_jsonl_groups_lines_by_session_and_leaves_system_messages_out() -> None:
    batch = importer("chat").read(CHAT, None)
    found = sessions(batch)
    assert set(found) == {"pairing-42", "7"}
    pairing = found["pairing-42"]
    assert said(pairing) == [
        ("user", "We decided to pin Node 22 for webshop from now on."),
        ("assistant", "Pinned: .nvmrc says 22."),
    ]
    assert (pairing.project, pairing.title) == ("webshop", "Node upgrade")
    assert [m.id for m in pairing.messages] == ["p42-1", "p42-2"]
    assert (pairing.started_at, pairing.updated_at) == ("2026-03-12T10:00:00.000000Z", "2026-03-12T10:01:00.000000Z")
    other = found["7"]
    assert other.project is None and [m.id for m in other.messages] == ["history.jsonl:L4", "history.jsonl:L5"]
    assert other.messages[0].at == "2026-03-12T10:00:00.000000Z"  # +01:00 in the file
    assert batch.skipped == {} and batch.cursor.state == {"lines": 5}


def test_chat_jsonl_appended_lines_continue_their_session(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    shutil.copy(CHAT, log)
    chat = importer("chat")
    first = chat.read(log, None)
    with log.open("a") as fh:
        more = {"session": 7, "role": "user", "text": "And rotate them monthly.", "time": "2026-03-12T10:05:00Z"}
        fh.write(json.dumps(more) + "\n")
    second = chat.read(log, first.cursor)
    assert [(s.key, said(s), s.restart) for s in second.sessions] == [
        ("7", [("user", "And rotate them monthly.")], False)
    ]
    assert second.cursor.offset == log.stat().st_size and second.cursor.state == {"lines": 6}


def test_chat_jsonl_lines_that_cannot_be_used_are_counted_with_their_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1000)
    good = {"session": "s", "role": "user", "text": "fine", "time": "2026-03-01T10:00:00Z"}
    lines = [
        json.dumps(good).encode(),
        b"not json at all",
        json.dumps([1, 2]).encode(),
        json.dumps({**good, "session": None}).encode(),
        json.dumps({**good, "role": "narrator"}).encode(),
        json.dumps({**good, "time": "last Tuesday"}).encode(),
        json.dumps({k: v for k, v in good.items() if k != "time"}).encode(),
        json.dumps({**good, "text": 42}).encode(),
        json.dumps({**good, "project": ["webshop"]}).encode(),
        b'{"session": "s", "role": "user", "text": "caf\xe9", "time": "2026-03-01T10:00:00Z"}',
        json.dumps({**good, "text": "x" * 2000}).encode(),
        json.dumps({**good, "text": "still fine"}).encode(),
    ]
    log = tmp_path / "messy.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    batch = importer("chat").read(log, None)
    assert said(batch.sessions[0]) == [("user", "fine"), ("user", "still fine")]
    assert batch.skipped == {
        "invalid JSON": 1, "not a JSON object": 1, "missing session": 1, "unknown role": 1, "bad time": 1,
        "missing time": 1, "wrong type": 2, "invalid UTF-8": 1, "huge line": 1,
    }  # fmt: skip
    assert f"{log}:2: invalid JSON" in batch.notes and f"{log}:11: huge line" in batch.notes


# --- through the loader -----------------------------------------------------------------------------


def test_conversations_go_to_the_global_scope_unless_a_project_or_namespace_says_otherwise(
    cli: Any, tmp_path: Path
) -> None:
    ingest(cli, "chatgpt", str(CHATGPT))
    ingest(cli, "claude-ai", "--path", str(CLAUDE))
    ingest(cli, "chat", str(CHAT))
    with Engram.open() as mem:
        stored = memories(mem)
    spaces = {content: ns for ns, _, content in stored}
    assert spaces["We decided to use an LRU cache with a 2 GB cap from now on."] == "global"
    assert spaces["Remember that billing-api rounds half-up on the invoice total."] == "global"
    assert spaces["We decided to pin Node 22 for webshop from now on."] == "webshop"  # the JSONL's project
    assert {ns for ns, _, _ in stored} == {"global", "webshop"}
    assert {m.agent for m in Engram.open().list(all_namespaces=True, limit=1000)} == {"chatgpt", "claude-ai", "chat"}


def test_a_namespace_given_takes_every_conversation(cli: Any) -> None:
    report = report_of(ingest(cli, "claude-ai", str(CLAUDE), "-n", "billing-api"))
    # A conversation that only asked for something to be remembered is that memory, with no episode beside it.
    assert report["created"] == 3 and {m["namespace"] for m in report["memories"]} == {"billing-api"}


@pytest.mark.parametrize(("source", "path"), [("chatgpt", CHATGPT), ("claude-ai", CLAUDE), ("chat", CHAT)])
def test_ingesting_again_adds_nothing_even_from_a_fresh_download_elsewhere(
    source: str, path: Path, cli: Any, tmp_path: Path, rows: Any
) -> None:
    first = report_of(ingest(cli, source, str(path)))
    assert first["created"] > 0 and first["errors"] == []
    count = rows("SELECT count(*) FROM memories")[0][0]
    again = report_of(ingest(cli, source, str(path)))
    assert (again["changed_files"], again["created"], again["updated"]) == (0, 0, 0)
    moved = tmp_path / "download-2" / path.name
    moved.parent.mkdir()
    shutil.copy(path, moved)
    elsewhere = report_of(ingest(cli, source, str(moved)))
    assert (elsewhere["created"], elsewhere["merged"], elsewhere["updated"]) == (0, 0, 0)
    assert rows("SELECT count(*) FROM memories")[0][0] == count


def test_a_newer_export_yields_only_the_conversations_that_grew(cli: Any, tmp_path: Path) -> None:
    export = json.loads(CHATGPT.read_text())
    ingest(cli, "chatgpt", str(CHATGPT))
    tiles = export[0]
    tiles["mapping"]["n-a3"]["children"] = ["n-q4"]
    tiles["mapping"]["n-q4"] = {
        "id": "n-q4", "parent": "n-a3", "children": [],
        "message": {"id": "n-q4", "author": {"role": "user"}, "create_time": 1772700000.0,
                    "content": {"content_type": "text", "parts": ["Remember that tile TTL is 6 hours on geo-tiles."]}},
    }  # fmt: skip
    tiles["current_node"], tiles["update_time"] = "n-q4", 1772700000.0
    newer = tmp_path / "conversations.json"
    newer.write_text(json.dumps(export, ensure_ascii=False))
    batch = importer("chatgpt").read(newer, _cursor_of(CHATGPT))
    assert [(s.key, said(s), s.restart) for s in batch.sessions] == [
        (tiles["id"], [("user", "Remember that tile TTL is 6 hours on geo-tiles.")], False)
    ]
    report = report_of(ingest(cli, "chatgpt", str(newer)))
    assert [m["content"] for m in report["memories"] if m["type"] == "semantic"] == [
        "Remember that tile TTL is 6 hours on geo-tiles."
    ]


def _cursor_of(path: Path) -> base.Cursor:
    from engram_cli.ingest.loader import load_cursor

    with Engram.open() as mem:
        cursor = load_cursor(mem.store, str(path))
    assert cursor is not None
    return cursor


def test_secrets_in_conversations_never_reach_the_database(cli: Any, db_path: Path) -> None:
    chatgpt = report_of(ingest(cli, "chatgpt", str(CHATGPT)))
    chat = report_of(ingest(cli, "chat", str(CHAT)))
    assert chatgpt["redacted"] == {"github-token": 1} and chat["redacted"] == {"aws-access-key-id": 1}
    with Engram.open() as mem:
        stored = "\n".join(c for _, _, c in memories(mem))
        mem.store.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    assert "[REDACTED:aws-access-key-id]" in stored
    data = b"".join(p.read_bytes() for p in db_path.parent.glob("engram.db*"))
    assert GITHUB_TOKEN.encode() not in data and AWS_KEY.encode() not in data


# --- what goes wrong ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "content", "says"),
    [
        ("chatgpt", b'[{"id": "x", "mapping": {', "is not valid JSON (Expecting property name"),
        ("chatgpt", b"\xff\xfe[\x00]\x00", "is not UTF-8 text, so not a ChatGPT data export"),
        ("chatgpt", b'{"user": "someone"}', "expected a JSON list of conversations, found a JSON object"),
        ("chatgpt", CLAUDE.read_bytes(), "it looks like one that `engram ingest claude-ai PATH` reads"),
        ("claude-ai", CHATGPT.read_bytes(), "it looks like one that `engram ingest chatgpt PATH` reads"),
        ("claude-ai", b"[1, 2, 3]", "none of its 3 entries is a conversation (3 not a conversation)"),
        ("chat", CHATGPT.read_bytes(), "is one JSON list, not chat JSONL"),
        ("chat", b"hello\nworld\n", "is not chat JSONL (line 1: invalid JSON)"),
    ],
)
def test_a_file_of_another_kind_is_that_files_error_in_plain_words(
    source: str, content: bytes, says: str, cli: Any, tmp_path: Path
) -> None:
    bad = tmp_path / "conversations.json"
    bad.write_bytes(content)
    result = cli("ingest", source, str(bad), ok=False)
    assert result.exit_code == 1
    stderr = " ".join(result.stderr.split())  # long lines are wrapped at the terminal's width
    assert f"{source}: {bad}: " in stderr and says in stderr
    assert "Traceback" not in result.output + result.stderr


def test_one_bad_export_in_a_folder_leaves_the_others_ingested(cli: Any, tmp_path: Path) -> None:
    good = tmp_path / "exports" / "2026-03" / "conversations.json"
    bad = tmp_path / "exports" / "2026-02" / "conversations.json"
    for path in (good, bad):
        path.parent.mkdir(parents=True)
    shutil.copy(CHATGPT, good)
    bad.write_text('[{"title": "cut short", "mapping"')
    report = report_of(ingest(cli, "chatgpt", str(tmp_path / "exports"), ok=False))
    assert report["files"] == 2 and report["created"] == 4
    assert len(report["errors"]) == 1 and report["errors"][0].startswith(f"{bad}: is not valid JSON")


def test_a_conversation_that_cannot_be_used_is_skipped_and_counted(tmp_path: Path) -> None:
    export = [*json.loads(CHATGPT.read_text()), {"title": "no id", "mapping": {}}, "text", {"id": "z", "mapping": 3}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    batch = importer("chatgpt").read(path, None)
    assert len(batch.sessions) == 2
    assert batch.skipped == {
        "conversation without an id": 1,
        "not a conversation": 1,
        "conversation without a mapping": 1,
    }


@pytest.mark.parametrize("source", ["chatgpt", "claude-ai", "chat"])
def test_naming_a_chat_source_without_a_path_says_how_to_give_one(source: str, cli: Any) -> None:
    result = cli("ingest", source, ok=False)
    assert result.exit_code == 2
    assert f"Error: {source} reads a file you give it, not a default place" in result.stderr
    assert f"Hint: e.g. engram ingest {source} " in result.stderr


def test_the_path_is_given_once(cli: Any, tmp_path: Path) -> None:
    result = cli("ingest", "chat", str(CHAT), "--path", str(tmp_path), ok=False)
    assert result.exit_code == 2 and "give the path once" in result.stderr
    assert report_of(ingest(cli, "chat", str(CHAT), "--path", str(CHAT)))["created"] > 0


def test_a_plain_ingest_run_does_not_look_for_exports(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    downloads = Path.home() / "Downloads"
    downloads.mkdir()
    shutil.copy(CHATGPT, downloads / "conversations.json")
    report = json.loads(cli("ingest", "--json").stdout)
    assert report["found_nothing"] is True and report["sources"] == []


def _script(name: str) -> Any:
    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_long_chat_written_as_chat_jsonl_reads_back_turn_for_turn(tmp_path: Path) -> None:
    written = _script("long_chat_as_jsonl").write(tmp_path)
    dataset = Path(__file__).resolve().parent.parent / "bench" / "long-chat" / "memories.jsonl"
    turns = [json.loads(line) for line in dataset.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert [p.name for p in written] == [f"conv-{n:02d}.jsonl" for n in range(1, 15)]
    read = [importer("chat").read(path, None) for path in written]
    assert all(batch.skipped == {} for batch in read)
    found = {m.id: (s, m) for batch in read for s in batch.sessions for m in s.messages}
    assert set(found) == {t["id"] for t in turns}
    for turn in turns[:400]:
        session, message = found[turn["id"]]
        assert message.text == turn["content"] and message.at == turn["created_at"].replace("Z", ".000000Z")
        assert session.project == turn["namespace"]
        assert session.key == f"{turn['namespace']}-s{turn['metadata']['session']:02d}"
    assert {m.role for _, m in found.values()} == {"user", "assistant"}


def test_an_export_too_large_to_read_whole_says_what_to_give_instead(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram_cli.ingest import exports

    monkeypatch.setattr(exports, "MAX_JSON_BYTES", 1024)
    big = tmp_path / "conversations.json"
    shutil.copy(CHATGPT, big)
    result = cli("ingest", "chatgpt", str(big), ok=False)
    stderr = " ".join(result.stderr.split())
    assert result.exit_code == 1 and "more than the 0 MB an export is read up to" in stderr
    assert "conversations-NNN.json files: give the folder instead" in stderr
