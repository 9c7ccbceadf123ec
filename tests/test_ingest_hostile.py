"""engram ingest against hostile and broken input: special files, symlink loops, lone surrogates, failing
files, and nothing to ingest at all. Every case here once aborted or hung a whole run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from engram_cli.ingest import SOURCES, base, files, importer, loader
from engram_cli.ingest.base import Batch, Cursor, Message, Session
from engram_cli.ingest.common import chain_digest, lines_digest, messages_digest
from engram_cli.ingest.scrub import scrub
from engram_cli.lang.text import clean

T = TypeVar("T")
SESSION = "0b3c9f1e-2d4a-4c1b-9e55-6f7a8b9c0d1e"
KINDS = ("self-loop", "loop-pair", "fifo", "socket", "dangling", "dir-link")


def within(seconds: float, work: Callable[[], T]) -> T:
    """``work()``, failing the test (instead of hanging the suite) when it does not finish in time."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s: something waited on a special file"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def plant(path: Path, kind: str) -> None:
    """Put something that is not a regular file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "self-loop":
        os.symlink(path.name, path)
    elif kind == "loop-pair":
        partner = path.with_name(path.name + ".partner")
        os.symlink(partner.name, path)
        os.symlink(path.name, partner)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        here = Path.cwd()
        os.chdir(path.parent)  # a relative name keeps the address under the 108-byte limit
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.bind(path.name)
        finally:
            os.chdir(here)
    elif kind == "dangling":
        os.symlink(path.parent / "nowhere", path)
    elif kind == "dir-link":
        target = path.parent / f"{path.name}-target"
        target.mkdir()
        os.symlink(target, path)
    else:
        raise AssertionError(kind)


# Where each source looks by default (relative to HOME), named so that its listing picks the entry up;
# "{kind}" marks a place where one directory can hold every kind at once, the rest have fixed names.
DEFAULT_PLACES = {
    "claude-code": [".claude/projects/p/{kind}.jsonl"],
    "codex": [".codex/sessions/2026/01/01/rollout-{kind}.jsonl"],
    "gemini-cli": [".gemini/tmp/p/chats/session-{kind}.json"],
    "aider": [".aider.chat.history.md"],
    "cursor": [
        ".config/Cursor/User/globalStorage/state.vscdb",
        ".config/Cursor/User/workspaceStorage/{kind}/state.vscdb",
    ],
    "cline": [".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/{kind}/api_conversation_history.json"],
    "roo-code": [
        ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/{kind}/api_conversation_history.json"
    ],
    "opencode": [".local/share/opencode/opencode-{kind}.db"],
    "continue": [".continue/sessions/{kind}.json"],
    "copilot-cli": [".copilot/session-state/{kind}/events.jsonl"],
    "bash": [".bash_history"],
    "zsh": [".zsh_history"],
    "fish": [".local/share/fish/fish_history"],
    "notes": ["notes/{kind}.md"],
}
# What each source's files() finds under a directory given with --path.
PATH_NAMES = {
    "claude-code": "{kind}.jsonl",
    "codex": "rollout-{kind}.jsonl",
    "gemini-cli": "chats/session-{kind}.json",
    "aider": "{kind}/.aider.chat.history.md",
    "cursor": "{kind}/state.vscdb",
    "cline": "{kind}/api_conversation_history.json",
    "roo-code": "{kind}/api_conversation_history.json",
    "opencode": "opencode-{kind}.db",
    "continue": "sessions/{kind}.json",
    "copilot-cli": "{kind}/events.jsonl",
    "bash": "{kind}.bash_history",
    "zsh": "{kind}.zsh_history",
    "fish": "{kind}_history",
    "notes": "{kind}.md",
    "jsonl": "{kind}.jsonl",
    "chatgpt": "conversations-{kind}.json",
    "claude-ai": "{kind}/conversations.json",
    "chat": "{kind}.jsonl",
}
# What item 2 of the brief names: each must reach the loader (which notes it), not vanish in the listing.
NOTED = ("self-loop", "loop-pair", "fifo", "socket")


def plant_all(root: Path, templates: list[str], fixed_kind: str) -> tuple[set[Path], set[Path]]:
    """Every kind at each templated place, ``fixed_kind`` at each fixed one: (all entries, those to be noted)."""
    every: set[Path] = set()
    noted: set[Path] = set()
    for template in templates:
        for kind in KINDS if "{kind}" in template else (fixed_kind,):
            path = root / template.format(kind=kind)
            plant(path, kind)
            every |= {path, path.with_name(path.name + ".partner")}
            if kind in NOTED:
                noted.add(path)
    return every, noted


@pytest.mark.parametrize("fixed_kind", KINDS)
def test_every_importer_locates_default_places_holding_loops_fifos_and_sockets(fixed_kind: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"ENGRAM_NOTES_DIR": str(home / "notes")}
    for name in dict.fromkeys(SOURCES):
        every, noted = plant_all(home, DEFAULT_PLACES.get(name, []), fixed_kind)
        found = set(within(30, lambda name=name: importer(name).locate(env, home)))  # type: ignore[misc]
        assert found <= every, (name, found - every)
        assert noted <= found, f"{name} hid {noted - found} instead of letting the loader say it skipped them"


def test_every_importer_lists_a_given_directory_holding_loops_fifos_and_sockets(tmp_path: Path) -> None:
    for name in dict.fromkeys(SOURCES):
        root = tmp_path / name
        every, noted = plant_all(root, [PATH_NAMES[name]], "fifo")
        found = set(within(30, lambda name=name, root=root: importer(name).files(root)))  # type: ignore[misc]
        assert found <= every, (name, found - every)
        assert noted <= found, f"{name} hid {noted - found} instead of letting the loader say it skipped them"


def test_listing_a_folder_with_loops_fifos_and_sockets_together(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "projects" / "p"
    for kind in KINDS:
        plant(folder / f"{kind}.jsonl", kind)
    (folder / f"{SESSION}.jsonl").write_text(_prompt("Remember that deploys go through make release."))
    claude = importer("claude-code")
    listed = within(30, lambda: claude.locate({}, tmp_path))
    assert folder / f"{SESSION}.jsonl" in listed
    assert within(30, lambda: claude.files(folder)) == listed
    assert [p for p in listed if files.irregular(p) is None] == [folder / f"{SESSION}.jsonl"]


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("fifo", "a FIFO"),
        ("socket", "a socket"),
        ("self-loop", "a symlink loop"),
        ("dangling", "a dangling symlink"),
        ("dir-link", "a symlink to a directory"),
    ],
)
def test_irregular_says_what_a_path_is_and_open_refuses_it(kind: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    plant(path, kind)
    assert files.irregular(path) == says
    with pytest.raises(OSError):
        within(10, lambda: files.open_binary(path))
    regular = tmp_path / "fine.jsonl"
    regular.write_text("{}\n")
    assert files.irregular(regular) is None and files.read_bytes(regular) == b"{}\n"


def test_a_file_swapped_for_a_fifo_after_the_check_fails_to_open_instead_of_hanging(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    os.mkfifo(path)
    with pytest.raises(files.NotRegularFile):
        within(10, lambda: list(base.complete_lines(path, 0, Batch([], Cursor(str(path))))))


def _prompt(text: str, uuid: str = "u1", cwd: str = "/home/dev/webshop", session: str = SESSION, **extra: Any) -> str:
    record = {
        "type": "user", "uuid": uuid, "parentUuid": None, "sessionId": session, "cwd": cwd,
        "timestamp": "2026-11-02T09:00:00.000Z", "message": {"role": "user", "content": text}, **extra,
    }  # fmt: skip
    return json.dumps(record) + "\n"


def _run(home: Path, engram_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "ENGRAM_HOME": str(engram_home)}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HISTFILE", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "PWD"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "engram_cli", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_fifo_among_the_logs_is_skipped_with_a_note_and_holds_no_lock(tmp_path: Path, engram_home: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "x.jsonl")
    (folder / f"{SESSION}.jsonl").write_text(_prompt("Remember that deploys go through make release."))
    first = _run(home, engram_home, "-v", "ingest")
    assert first.returncode == 0, first.stderr
    assert "claude-code: 2 file(s), 1 changed" in first.stdout and "skipped 1 not a regular file" in first.stdout
    assert f"{folder / 'x.jsonl'}: a FIFO, not read" in first.stderr
    # The next run (a git hook, cron) is not locked out, and says the same again.
    second = _run(home, engram_home, "ingest", "--json")
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)["sources"][0]
    assert report["skipped"] == {"not a regular file": 1} and report["created"] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_every_source_ingests_a_home_full_of_special_files(
    kind: str, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    for places in DEFAULT_PLACES.values():
        plant_all(home, places, kind)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ENGRAM_NOTES_DIR", str(home / "notes"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HISTFILE", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "PWD"):
        monkeypatch.delenv(name, raising=False)
    result = within(120, lambda: cli("ingest", "--json"))
    listed = within(60, lambda: cli("ingest", "--list", "--json"))
    report = json.loads(result.stdout)
    assert not report["found_nothing"]
    for source in report["sources"]:
        assert source["errors"] == [] and source["created"] == 0, source
        assert source["skipped"] == {"not a regular file": source["files"]}, source
    assert {s["source"] for s in report["sources"]} == set(DEFAULT_PLACES)
    rows = {r["source"]: r for r in json.loads(listed.stdout)}
    assert all(rows[name]["skipped"] == rows[name]["files"] > 0 for name in DEFAULT_PLACES)


@pytest.mark.parametrize("kind", ["fifo", "self-loop", "dangling"])
def test_a_path_given_that_is_not_a_file_is_reported_as_skipped(kind: str, tmp_path: Path, cli: Any) -> None:
    path = tmp_path / "x.jsonl"
    plant(path, kind)
    report = json.loads(within(60, lambda: cli("ingest", "claude-code", "--path", str(path), "--json")).stdout)
    assert report["sources"][0]["skipped"] == {"not a regular file": 1}
    assert not report["found_nothing"]


# -- lone surrogates and text that is not UTF-8 ------------------------------------------------------


def test_a_lone_surrogate_in_claude_code_is_replaced_and_the_run_stores_everything(
    tmp_path: Path, cli: Any, rows: Any
) -> None:
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    lines = [
        _prompt("Remember that we always deploy with make release \ud800 on fridays.", cwd="/home/dev/web\udc80shop"),
        json.dumps({"type": "custom-title", "customTitle": "deploy \udfff notes", "sessionId": SESSION}) + "\n",
        json.dumps(
            {
                "type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": SESSION,
                "timestamp": "2026-11-02T09:00:05.000Z",
                "message": {"id": "m1", "role": "assistant", "model": "x", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo \ud83d done"}},
                ]},
            }
        ) + "\n",
    ]  # fmt: skip
    assert "\\ud800" in lines[0]  # escaped in the JSON, as a real log would hold it
    (folder / f"{SESSION}.jsonl").write_text("".join(lines), encoding="utf-8")
    report = json.loads(cli("ingest", "claude-code", "--path", str(folder), "--json").stdout)["sources"][0]
    assert report["errors"] == [] and report["created"] >= 1
    contents = [r[0] for r in rows("SELECT content FROM memories")]
    assert any("make release \ufffd on fridays" in c for c in contents), contents
    again = json.loads(cli("ingest", "claude-code", "--path", str(folder), "--json").stdout)["sources"][0]
    assert again["created"] == 0 and again["errors"] == []


def test_a_lone_surrogate_in_jsonl_records_is_replaced(tmp_path: Path, cli: Any, rows: Any) -> None:
    log = tmp_path / "records.jsonl"
    log.write_text(
        json.dumps({"content": "The \ud800 build cache lives in /var/cache/ci"})
        + "\n"
        + json.dumps({"id": "k-\udc00", "content": "Staging runs on port 8443", "metadata": {"by": "\udbff"}})
        + "\n",
        encoding="utf-8",
    )
    report = json.loads(cli("ingest", "jsonl", "--path", str(log), "--json").stdout)["sources"][0]
    assert report["errors"] == [] and report["created"] == 2
    assert sorted(r[0] for r in rows("SELECT content FROM memories")) == [
        "Staging runs on port 8443",
        "The \ufffd build cache lives in /var/cache/ci",
    ]


def test_a_lone_surrogate_in_a_whole_file_codex_session_is_replaced(tmp_path: Path, cli: Any) -> None:
    session = tmp_path / "rollout-2026-01-01-x.json"
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Remember \ud800 x"}]}]
    session.write_text(json.dumps({"session": {"id": "s-1"}, "items": items}), encoding="utf-8")
    report = json.loads(cli("ingest", "codex", "--path", str(session), "--json").stdout)["sources"][0]
    assert report["errors"] == []


def test_clean_replaces_lone_surrogates_and_leaves_other_text_alone() -> None:
    for text in ("plain ascii", "中文和 English", "emoji 😀 pair", ""):
        assert clean(text) is text
    assert clean("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert clean(json.loads('"\\ud83d\\ude00 \\ud800"')) == "😀 \ufffd"  # a pair is a character, not two


def test_digests_of_text_with_lone_surrogates_never_raise() -> None:
    odd = Message("user", "a \ud800 b", id="\udc00", command="c \udfff")
    assert lines_digest(["x \ud800"]) == lines_digest(["x \ufffd"])
    assert chain_digest([odd]) and messages_digest([odd])


def test_scrub_makes_every_text_field_of_a_batch_safe_to_store() -> None:
    message = Message("tool", "out \ud800", id="i\udc00", at="t\udc01", tool="Bash\udc02", command="ls \ud801")
    session = Session(
        "claude-code", "k\ud800", "/p\udc80", messages=[message], project="/w\udc81", title="t\ud802",
        summary="s\ud803", started_at="a\ud804", updated_at="b\ud805", model="m\ud806",
        records=[{"content": "c\ud807", "tags": ["x\ud808"], "metadata": {"k\ud809": "v\ud80a"}}],
    )  # fmt: skip
    batch = Batch([session], Cursor("/p\udc80", last_id="l\ud80b", state={"title": "\ud80c", "n": [1, "\ud80d"]}))
    batch.skip("odd \ud80e", "/p\udc80:1")
    scrub(batch)
    encoded = json.dumps(
        [vars(session) | {"messages": [vars(message)]}, vars(batch.cursor), batch.notes, dict(batch.skipped)],
        ensure_ascii=False,
    ).encode("utf-8")  # raises UnicodeEncodeError if anything was left
    assert "\ufffd".encode() in encoded


# -- one file's failure is that file's -------------------------------------------------------------


def _two_sessions(home: Path) -> tuple[Path, Path]:
    folder = home / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    first = folder / "11111111-1111-4111-8111-111111111111.jsonl"
    second = folder / "22222222-2222-4222-8222-222222222222.jsonl"
    first.write_text(_prompt("Remember that the cache TTL is 300 seconds.", session=first.stem))
    second.write_text(_prompt("Remember that staging listens on port 8443.", session=second.stem))
    return first, second


@pytest.mark.parametrize("stage", ["read", "extract", "write"])
def test_a_failure_in_one_file_is_its_error_and_the_others_go_through(
    stage: str, tmp_path: Path, cli: Any, rows: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = _two_sessions(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    claude = importer("claude-code")
    real_read, real_extract, real_save = type(claude).read, loader.extract, loader.save_digest

    def read(self: Any, path: Path, cursor: Cursor | None) -> Batch:
        if path == first:
            raise KeyError("boom")
        return real_read(self, path, cursor)

    def extract(session: Session, digest: dict[str, Any]) -> Any:
        if session.key == first.stem:
            raise ValueError("boom")
        return real_extract(session, digest)

    def save(store: Any, source: str, session: Session, namespace: str, digest: dict[str, Any]) -> None:
        if session.key == first.stem:
            raise RuntimeError("boom")
        real_save(store, source, session, namespace, digest)

    with monkeypatch.context() as patch:
        if stage == "read":
            patch.setattr(type(claude), "read", read)
        elif stage == "extract":
            patch.setattr(loader, "extract", extract)
        else:
            patch.setattr(loader, "save_digest", save)
        failed = cli("ingest", "claude-code", ok=False)
    assert failed.exit_code == 1 and str(first) in failed.stderr and "boom" in failed.stderr
    assert [r[0] for r in rows("SELECT content FROM memories WHERE memory_type = 'semantic'")] == [
        "Remember that staging listens on port 8443."
    ]
    assert rows("SELECT count(*) FROM ingest_cursors WHERE path = ?", (str(first),)) == [(0,)]
    cli("ingest", "claude-code")  # the failed file is read again, and now goes through
    assert len(rows("SELECT content FROM memories WHERE memory_type = 'semantic'")) == 2


def test_a_source_whose_listing_fails_costs_that_source_only(
    tmp_path: Path, cli: Any, rows: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_sessions(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    codex = importer("codex")

    def locate(self: Any, env: Any, home: Path) -> list[Path]:
        raise RuntimeError("Symlink loop from '/x'")

    monkeypatch.setattr(type(codex), "locate", locate)
    failed = cli("ingest", ok=False)
    assert failed.exit_code == 1 and "codex: its files could not be listed" in failed.stderr
    assert rows("SELECT count(*) FROM memories WHERE memory_type = 'semantic'") == [(2,)]
    listed = {r["source"]: r for r in json.loads(cli("ingest", "--list", "--json").stdout)}
    assert "could not be listed" in listed["codex"]["error"] and listed["claude-code"]["files"] == 2


# -- nothing to ingest -------------------------------------------------------------------------------


def test_nothing_found_in_the_default_places_says_where_it_looked(cli: Any) -> None:
    result = cli("ingest")
    assert result.stdout == ""
    assert "found nothing to ingest in the default places" in result.stderr
    assert "~/.claude/projects/*/*.jsonl" in result.stderr and "~/.codex/sessions" in result.stderr
    report = json.loads(cli("ingest", "--json").stdout)
    assert report["found_nothing"] is True
    assert {p["source"] for p in report["looked"]} == set(SOURCES)
    assert all(p["path"] is None for p in report["looked"])
    quiet = cli("ingest", "--quiet")
    assert quiet.stdout == "" and quiet.stderr == ""


def test_nothing_found_for_one_source_names_what_it_reads(cli: Any) -> None:
    result = cli("ingest", "codex")
    assert "found nothing to ingest: codex found no OpenAI Codex CLI rollouts (~/.codex/sessions)" in result.stderr


@pytest.mark.parametrize("what", ["empty folder", "unsupported file"])
def test_a_path_with_nothing_to_read_says_so(what: str, tmp_path: Path, cli: Any) -> None:
    path = tmp_path / "folder"
    path.mkdir()
    if what == "unsupported file":
        path = path / "notes.txt"
        path.write_text("hello\n")
    result = cli("ingest", "claude-code", "--path", str(path))
    assert result.exit_code == 0
    assert f"found nothing to ingest at {path}: claude-code reads Claude Code transcripts" in result.stderr
    report = json.loads(cli("ingest", "claude-code", "--path", str(path), "--json").stdout)
    assert report["found_nothing"] is True and report["looked"][0]["path"] == str(path)


def test_something_found_is_not_reported_as_nothing(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _two_sessions(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    cli("ingest")
    second = cli("ingest")  # nothing new, but something is there
    assert "found nothing" not in second.stderr
    assert json.loads(cli("ingest", "--json").stdout)["found_nothing"] is False
