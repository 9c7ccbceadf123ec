"""Notes (Markdown and text files) and JSONL memory records: sources that are memories already."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_cli.ingest import importer
from engram_cli.ingest.base import MAX_LINE_BYTES, Batch, Session
from engram_cli.ingest.notes import MAX_NOTE_BYTES, NotesImporter
from engram_cli.ingest.records import RecordsImporter
from engram_cli.memory.remember import prepare

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
NOTES = FIXTURES / "notes"
RECORDS = FIXTURES / "records" / "memories.jsonl"


def only(batch: Batch) -> Session:
    assert len(batch.sessions) == 1, batch.sessions
    return batch.sessions[0]


def addable(record: dict[str, Any]) -> None:
    """What `engram add` would say of the record: it must take it as it is (less the loader's key)."""
    fields = {k: v for k, v in record.items() if k != "key"}
    prepare(fields, namespace="default", agent="test")


@pytest.fixture
def notes() -> NotesImporter:
    return NotesImporter()  # a fresh one: it remembers which folder each file was found in


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    shutil.copytree(NOTES, folder)
    return folder


def read_all(notes: NotesImporter, folder: Path) -> dict[str, Session]:
    return {only(notes.read(p, None)).key: only(notes.read(p, None)) for p in notes.files(folder)}


# -- notes ----------------------------------------------------------------------------------------------


def test_a_long_note_becomes_one_record_per_section(notes: NotesImporter) -> None:
    session = read_all(notes, NOTES)["deploy.md"]
    assert (session.source, session.title, session.messages) == ("notes", "Deploying the orders API", [])
    assert session.started_at == "2024-03-05T00:00:00.000000Z"
    keys = [r["key"] for r in session.records]
    assert keys == [
        "deploy.md#deploying-the-orders-api", "deploy.md#prerequisites", "deploy.md#steps",
        "deploy.md#rollback", "deploy.md#notes", "deploy.md#notes-1",
    ]  # fmt: skip
    by_key = {r["key"]: r for r in session.records}
    steps = by_key["deploy.md#steps"]
    assert steps["content"].startswith("Deploying the orders API › Steps\n\n1. Merge the pull request")
    assert steps["type"] == "procedural"  # numbered steps
    assert by_key["deploy.md#rollback"]["type"] == "procedural"  # a bash fence
    assert "# on the bastion host" in by_key["deploy.md#rollback"]["content"]  # not a heading inside code
    assert by_key["deploy.md#notes"]["type"] == "semantic"
    assert by_key["deploy.md#prerequisites"]["tags"] == ["aws", "deploy", "ops", "ops-help"]
    assert by_key["deploy.md#notes-1"]["metadata"] == {"file": "deploy.md", "section": "Notes"}
    assert all(r["created_at"] == "2024-03-05T00:00:00.000000Z" for r in session.records)
    assert not any("title: Deploying" in r["content"] for r in session.records)  # front matter is not text
    for record in session.records:
        addable(record)


def test_short_notes_and_text_files_are_one_record(notes: NotesImporter, vault: Path) -> None:
    os.utime(vault / "short.md", (1_717_200_000, 1_717_200_000))
    found = read_all(notes, vault)
    assert sorted(found) == ["deploy.md", "journal/2024-06-01.txt", "short.md", "tag-list.md"]  # not .trash/
    [short] = found["short.md"].records
    assert short["key"] == "short.md" and short["type"] == "semantic"
    assert short["tags"] == ["python", "tooling"]
    assert short["created_at"] == "2024-06-01T00:00:00.000000Z"  # no date in the note: its mtime
    [journal] = found["journal/2024-06-01.txt"].records
    assert journal["content"].startswith("Found out the staging database")
    [vacuum] = found["tag-list.md"].records
    assert found["tag-list.md"].title == "Postgres vacuum"
    assert vacuum["tags"] == ["databases", "postgres"]  # a YAML list, "#" dropped
    assert vacuum["created_at"] == "2024-07-09T12:30:00.000000Z"  # created:, to UTC
    for session in found.values():
        for record in session.records:
            addable(record)


def test_an_unchanged_note_is_not_read_again_and_a_changed_one_is_read_whole(notes: NotesImporter, vault: Path) -> None:
    path = vault / "deploy.md"
    notes.files(vault)
    first = notes.read(path, None)
    assert notes.read(path, first.cursor).sessions == []
    path.write_text(path.read_text().replace("about six minutes", "about eight minutes"))
    again = only(notes.read(path, first.cursor))
    assert again.restart and len(again.records) == 6
    assert "eight minutes" in again.records[0]["content"]
    assert again.key == "deploy.md"


def test_keys_stay_relative_to_the_folder_once_read(vault: Path) -> None:
    path = vault / "journal" / "2024-06-01.txt"
    first = NotesImporter()
    first.files(vault)
    cursor = first.read(path, None).cursor
    path.write_text("Staging is restored on Sundays.\n")
    later = NotesImporter()  # a new process that did not list the folder
    assert only(later.read(path, cursor)).key == "journal/2024-06-01.txt"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary data"),
        (b"caf\xe9 au lait\n", "invalid UTF-8"),
        (b"x" * (MAX_NOTE_BYTES + 1), "huge file"),
    ],
    ids=["binary", "latin-1", "huge"],
)
def test_unreadable_notes_are_skipped(notes: NotesImporter, tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "note.md"
    path.write_bytes(content)
    batch = notes.read(path, None)
    assert batch.sessions == [] and batch.skipped == {reason: 1}
    assert notes.read(path, batch.cursor).skipped == {}  # not counted again until it changes


def test_odd_markdown_does_not_break_the_split(notes: NotesImporter, tmp_path: Path) -> None:
    path = tmp_path / "odd.md"
    body = "\n\n".join(f"### {i}. Step {i}\n\n" + "word " * 80 for i in range(4))
    path.write_text("---\ntitle:\ndate: not a date\ntags: alpha, beta\n---\n#\n## C# tips ##\n\n```\n" + body)
    session = only(notes.read(path, None))
    assert session.title == "C# tips"
    assert session.records[0]["tags"] == ["alpha", "beta"]
    assert session.records[0]["key"] == "odd.md#c-tips"
    assert len(session.records) == 1  # everything after the unclosed fence is code: no headings there


def test_empty_note_has_no_records(notes: NotesImporter, tmp_path: Path) -> None:
    path = tmp_path / "empty.md"
    path.write_text("---\ntitle: Nothing yet\n---\n\n")
    assert only(notes.read(path, None)).records == []


def test_locate_uses_only_engram_notes_dir(notes: NotesImporter, vault: Path, tmp_path: Path) -> None:
    assert len(notes.locate({"ENGRAM_NOTES_DIR": str(vault)}, tmp_path)) == 4
    assert notes.locate({}, vault) == []
    assert len(notes.locate({"ENGRAM_NOTES_DIR": "~/vault"}, vault.parent)) == 4
    assert notes.locate({"ENGRAM_NOTES_DIR": str(tmp_path / "missing")}, tmp_path) == []
    assert importer("notes").agent == "notes"


def test_files_takes_a_note_or_a_folder(notes: NotesImporter) -> None:
    assert notes.files(NOTES / "short.md") == [NOTES / "short.md"]
    assert notes.files(NOTES / ".trash" / "old.md") == [NOTES / ".trash" / "old.md"]  # asked for by name
    assert notes.files(RECORDS) == []


# -- JSONL records ----------------------------------------------------------------------------------------


records = importer("jsonl")


def test_records_are_read_and_bad_lines_skipped_with_their_line_numbers() -> None:
    batch = records.read(RECORDS, None)
    session = only(batch)
    assert (session.source, session.key, session.messages) == ("jsonl", "memories.jsonl", [])
    assert records.agent == "import"
    assert batch.skipped == {"invalid JSON": 1, "not an object": 1, "missing content": 1, "unknown memory type": 1,
                             "out of range": 1, "wrong type": 1, "bad created_at": 1}  # fmt: skip
    assert [n.rsplit(":", 2)[-2] for n in batch.notes] == ["3", "4", "5", "6", "7", "8", "9"]
    first, second, third = session.records
    assert first["key"] == "mem-001"
    assert first["agent"] == "claude-code" and first["namespace"] == "work" and first["importance"] == 0.7
    assert second["session"] == "17" and second["tags"] == "security"
    assert len(second["key"]) == 32  # no id: a hash of the line
    assert "future_field" not in third
    for record in session.records:
        addable(record)


def test_record_keys_are_stable_across_reads(tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(RECORDS, copy)
    again = only(RecordsImporter().read(copy, None))
    assert [r["key"] for r in again.records] == [r["key"] for r in only(records.read(RECORDS, None)).records]


def test_appended_records_only_and_a_partial_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "mem.jsonl"
    path.write_text(json.dumps({"content": "first"}) + "\n")
    first = records.read(path, None)
    assert records.read(path, first.cursor).sessions == []
    with path.open("a") as fh:
        fh.write('{"content": "sec')
    waiting = records.read(path, first.cursor)
    assert waiting.sessions == [] and waiting.cursor.offset == first.cursor.offset
    with path.open("a") as fh:
        fh.write('ond"}\n')
    second = only(records.read(path, waiting.cursor))
    assert [r["content"] for r in second.records] == ["second"] and not second.restart


def test_a_replaced_file_is_read_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "mem.jsonl"
    path.write_text("".join(json.dumps({"content": f"memory {i}"}) + "\n" for i in range(5)))
    first = records.read(path, None)
    path.write_text(json.dumps({"content": "new start"}) + "\n")
    again = only(records.read(path, first.cursor))
    assert again.restart and [r["content"] for r in again.records] == ["new start"]


def test_malformed_record_lines_never_crash(tmp_path: Path) -> None:
    path = tmp_path / "mem.jsonl"
    path.write_bytes(
        b"\xff\xfe\n"
        + b'{"content": "nul \x00 inside"}\n'
        + b'{"content": "'
        + b"x" * MAX_LINE_BYTES
        + b'"}\n'
        + b'{"content": "ok", "tags": {"a": 1}, "kind": "future"}\n'
        + b'{"content": "ok", "metadata": "text", "session": true}\n'
        + b'{"content": "kept", "importance": 1, "confidence": 0}\n'
    )
    batch = records.read(path, None)
    assert batch.skipped == {"invalid UTF-8": 1, "binary data": 1, "huge line": 1, "wrong type": 2}
    assert [r["content"] for r in only(batch).records] == ["kept"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_never_raise(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "arbitrary.jsonl"
    path.write_bytes(data)
    batch = records.read(path, None)
    assert batch.cursor.offset <= len(data)
    for record in (r for s in batch.sessions for r in s.records):
        addable(record)
    note = tmp_path / "arbitrary.md"
    note.write_bytes(data)
    for session in NotesImporter().read(note, None).sessions:
        for record in session.records:
            addable(record)


def test_records_have_no_default_location(tmp_path: Path) -> None:
    assert records.locate({"HOME": str(tmp_path)}, tmp_path) == []
    assert records.files(RECORDS) == [RECORDS]
    assert records.files(RECORDS.parent) == [RECORDS]
