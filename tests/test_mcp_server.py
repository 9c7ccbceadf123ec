"""`engram mcp` spoken to by the SDK's own client over stdio, as an assistant would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import ListRootsResult, Root

from engram_cli.api import Engram
from engram_cli.mcp_server import CARD_URI
from engram_cli.store import connect

REPO = Path(__file__).resolve().parent.parent


def _server(cwd: Path) -> StdioServerParameters:
    env = {name: value for name, value in os.environ.items() if name in ("ENGRAM_HOME", "HOME", "PATH", "NO_COLOR")}
    env["PYTHONPATH"] = str(REPO)  # this checkout's engram, whatever is installed
    return StdioServerParameters(command=sys.executable, args=["-m", "engram_cli", "mcp"], env=env, cwd=cwd)


async def _session(cwd: Path, talk: Callable[[ClientSession], Awaitable[None]], roots: list[Path] | None) -> None:
    async def list_roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=p.as_uri()) for p in roots or []])

    async with (
        stdio_client(_server(cwd)) as (read, write),
        ClientSession(read, write, list_roots_callback=list_roots if roots is not None else None) as session,
    ):
        await session.initialize()
        await talk(session)


def _converse(cwd: Path, talk: Callable[[ClientSession], Awaitable[None]], roots: list[Path] | None = None) -> None:
    async def main() -> None:
        with anyio.fail_after(300):  # a hung server fails the test instead of the run
            await _session(cwd, talk, roots)

    anyio.run(main)


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


def test_lists_the_tools_each_described_for_a_model(tmp_path: Path) -> None:
    seen: dict[str, str] = {}

    async def talk(session: ClientSession) -> None:
        for tool in (await session.list_tools()).tools:
            seen[tool.name] = tool.description or ""

    _converse(tmp_path, talk)
    assert sorted(seen) == ["edit", "forget", "get", "inspect", "recall", "recent", "remember", "set"]
    assert "Returns" in seen["recall"] and "relevance" in seen["recall"]
    assert "hard" in seen["forget"] and "explicitly" in seen["forget"]


def test_remember_then_recall_in_the_project_of_the_working_directory(tmp_path: Path, git_repo: Any) -> None:
    repo = git_repo("shop")
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        out["remembered"] = _data(await session.call_tool("remember", {"text": "部署走 make release, never by hand"}))
        out["secret"] = _data(
            await session.call_tool("remember", {"text": "the CI token is ghp_" + "a1B2" * 9, "global_scope": True})
        )
        out["recalled"] = _data(await session.call_tool("recall", {"query": "how do we deploy? 部署", "k": 3}))
        out["card"] = _data(await session.call_tool("recall", {"query": "make release", "format": "card"}))
        out["recent"] = _data(await session.call_tool("recent", {"limit": 5}))

    _converse(repo, talk)
    remembered = out["remembered"]
    assert remembered["action"] == "created" and remembered["scope"] == "project"
    assert out["secret"]["scope"] == "global" and out["secret"]["redacted"]
    top = out["recalled"]["hits"][0]
    assert top["id"] == remembered["id"] and top["scope"] == "project" and 0 < top["relevance"] <= 1
    assert "make release" in out["card"]["card"] and "[scope: project]" in out["card"]["card"]
    assert {m["id"] for m in out["recent"]["memories"]} == {remembered["id"], out["secret"]["id"]}
    with Engram.open(cwd=repo) as engram:
        stored = engram.get(remembered["id"])
        assert stored.content == "部署走 make release, never by hand"
        assert stored.namespace == engram.scope.project
        assert "ghp_" not in engram.get(out["secret"]["id"]).content


def test_keys_edit_inspect_and_forget(tmp_path: Path) -> None:
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        await session.call_tool("set", {"key": "python", "value": "3.11"})
        out["set"] = _data(await session.call_tool("set", {"key": "python", "value": "3.12"}))
        out["get"] = _data(await session.call_tool("get", {"key": "python"}))
        made = _data(await session.call_tool("remember", {"text": "Reviews need two approvals"}))
        out["edit"] = _data(await session.call_tool("edit", {"id": made["id"], "importance": 0.9, "tags": ["review"]}))
        out["inspect"] = _data(await session.call_tool("inspect", {"id": made["id"]}))
        out["forget"] = _data(await session.call_tool("forget", {"ids": [made["id"]]}))
        out["id"] = made["id"]

    _converse(tmp_path, talk)
    assert out["set"]["action"] == "updated" and out["set"]["previous"] == "3.11"
    assert out["get"]["value"] == "3.12"
    assert sorted(out["edit"]["changed"]) == ["importance", "tags"]
    assert [e["kind"] for e in out["inspect"]["history"]][-1] == "edited"
    assert out["forget"]["forgotten"] == [{"id": out["id"], "action": "archived", "edited": [], "consolidated": [],
                                          "note": None}]  # fmt: skip
    with Engram.open() as engram:
        assert engram.get(out["id"]).status == "archived"  # archived, not purged: hard was not asked for


def test_bad_arguments_and_engine_errors_are_error_results_and_the_server_keeps_serving(tmp_path: Path) -> None:
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        out["bad_scope"] = await session.call_tool("recall", {"query": "x", "scope": "everywhere"})
        out["no_key"] = await session.call_tool("get", {"key": "nothing-here"})
        out["bad_importance"] = await session.call_tool("remember", {"text": "x", "importance": 7})
        out["after"] = _data(await session.call_tool("remember", {"text": "The server still answers"}))

    _converse(tmp_path, talk)
    assert out["bad_scope"].is_error and "scope" in out["bad_scope"].content[0].text
    no_key = out["no_key"].content[0].text
    assert out["no_key"].is_error and "Error: no value for key 'nothing-here'" in no_key and "Hint:" in no_key
    assert out["bad_importance"].is_error and "importance" in out["bad_importance"].content[0].text
    assert out["after"]["action"] == "created"
    with Engram.open() as engram:
        assert [m.content for m in engram.list()] == ["The server still answers"]


def _text(result: Any) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)


def test_tools_say_which_only_read_and_which_destroy(tmp_path: Path) -> None:
    tools: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        tools.update({tool.name: tool.annotations for tool in (await session.list_tools()).tools})

    _converse(tmp_path, talk)
    assert {name for name, a in tools.items() if a.read_only_hint} == {"recall", "get", "inspect", "recent"}
    assert {name for name, a in tools.items() if a.destructive_hint} == {"forget"}
    assert all(a.open_world_hint is False for a in tools.values())  # nothing leaves the machine


def test_the_project_comes_from_the_clients_root(tmp_path: Path, git_repo: Any) -> None:
    repo = git_repo("webapp")
    elsewhere = tmp_path / "started-here"
    elsewhere.mkdir()
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        out["remembered"] = _data(await session.call_tool("remember", {"text": "webapp builds with pnpm, not npm"}))
        await session.call_tool("set", {"key": "node", "value": "22"})

    _converse(elsewhere, talk, roots=[repo])
    assert out["remembered"]["scope"] == "project"
    with Engram.open(cwd=repo) as engram:
        assert engram.get(out["remembered"]["id"]).namespace == engram.scope.project
        assert engram.lookup("node", cwd=repo).value == "22"


def test_without_roots_the_working_directory_is_the_project(tmp_path: Path, git_repo: Any) -> None:
    repo = git_repo("api")
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        out["remembered"] = _data(await session.call_tool("remember", {"text": "the api listens on 8088"}))

    _converse(repo, talk, roots=[])  # a client with the capability and no roots
    with Engram.open(cwd=repo) as engram:
        assert engram.get(out["remembered"]["id"]).namespace == engram.scope.project


def test_the_session_card_is_a_resource(tmp_path: Path, git_repo: Any) -> None:
    repo = git_repo("shop")
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        out["listed"] = [str(r.uri) for r in (await session.list_resources()).resources]
        out["empty"] = (await session.read_resource(CARD_URI)).contents[0]
        await session.call_tool("remember", {"text": "Releases are cut on Thursdays", "importance": 0.9})
        await session.call_tool("remember", {"text": "I like short commit messages", "global_scope": True})
        out["card"] = (await session.read_resource(CARD_URI)).contents[0]

    _converse(repo, talk)
    assert out["listed"] == [CARD_URI]
    assert out["empty"].text.startswith("Nothing remembered yet")
    card = out["card"].text
    assert out["card"].mime_type == "text/markdown"
    assert "Releases are cut on Thursdays" in card and "[scope: project]" in card
    assert "I like short commit messages" in card and "[scope: global]" in card


def test_a_locked_database_is_an_error_result_and_the_next_call_succeeds(tmp_path: Path) -> None:
    home = Path(os.environ["ENGRAM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[store]\nbusy_timeout_ms = 300\n", encoding="utf-8")
    with Engram.open() as engram:
        engram.add("The store exists before the server starts")
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        holder = connect(home / "engram.db")
        holder.conn.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the busy timeout
        try:
            out["locked"] = await session.call_tool("remember", {"text": "Written while the lock is held"})
        finally:
            holder.conn.execute("ROLLBACK")
            holder.close()
        out["after"] = _data(await session.call_tool("remember", {"text": "Written once the lock is gone"}))

    _converse(tmp_path, talk)
    assert out["locked"].is_error
    assert "locked by another engram process" in _text(out["locked"]) and "Hint:" in _text(out["locked"])
    assert out["after"]["action"] == "created"
    with Engram.open() as engram:
        assert sorted(m.content for m in engram.list()) == [
            "The store exists before the server starts",
            "Written once the lock is gone",
        ]


def test_a_damaged_database_is_an_error_result_and_the_server_keeps_serving(tmp_path: Path) -> None:
    with Engram.open() as engram:
        engram.add_many([{"content": f"Fact {i}: service s{i} runs on port {8000 + i}"} for i in range(40)])
        db = engram.path
    healthy = db.read_bytes()
    out: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        out["before"] = _data(await session.call_tool("recent", {"limit": 3}))  # the store is open
        db.write_bytes(healthy[:8192] + bytes(len(healthy) - 8192))  # the pages past the schema zeroed
        out["recall"] = await session.call_tool("recall", {"query": "which port does s3 use?"})
        out["remember"] = await session.call_tool("remember", {"text": "Kept after the repair"})
        out["tools"] = len((await session.list_tools()).tools)
        db.replace(tmp_path / "damaged.db")  # the person moves the damaged file away; the server goes on
        out["after"] = _data(await session.call_tool("remember", {"text": "Kept after the repair"}))

    _converse(tmp_path, talk)
    assert len(out["before"]["memories"]) == 3
    for failed in (out["recall"], out["remember"]):
        assert failed.is_error and "Error:" in _text(failed) and " recover`" in _text(failed)
    assert out["tools"] == 8
    assert out["after"]["action"] == "created"
    with Engram.open() as engram:
        assert [m.content for m in engram.list()] == ["Kept after the repair"]


MAINTENANCE = """
import os, subprocess, sys
stop, args = sys.argv[1], sys.argv[2:]
codes = []
while not codes or not os.path.exists(stop):  # at least once, then until the writers are done
    codes.append(subprocess.run([sys.executable, "-m", "engram_cli", *args], capture_output=True).returncode)
print(" ".join(map(str, codes)))
"""


def test_several_servers_beside_cli_writers_and_maintenance_lose_nothing(tmp_path: Path, git_repo: Any) -> None:
    repo = git_repo("shared")
    with Engram.open(cwd=repo):
        pass
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    stop = tmp_path / "writers-done"
    maintenance = [
        subprocess.Popen([sys.executable, "-c", MAINTENANCE, str(stop), *args], env=env, cwd=repo, stdout=PIPE)
        for args in (["compact"], ["decay"])
    ]
    cli_texts = [
        f"CLI writer {w} note {i}: build {w * 100 + i} passed on runner r{i % 3}" for w in range(2) for i in range(4)
    ]
    cli_writers = [
        subprocess.Popen([sys.executable, "-m", "engram_cli", "add", text], env=env, cwd=repo, stdout=PIPE, stderr=PIPE)
        for text in cli_texts
    ]
    servers, per_server = 3, 8
    results: list[Any] = []

    async def one_server(s: int) -> None:
        async def talk(session: ClientSession) -> None:
            for i in range(per_server):
                text = f"Server {s} note {i}: deploy {s * 100 + i} reached stage st{i % 4}"
                results.append(await session.call_tool("remember", {"text": text, "type": "episodic"}))
                results.append(await session.call_tool("recall", {"query": f"deploy {s * 100 + i}", "k": 3}))

        await _session(repo, talk, None)

    async def main() -> None:
        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for s in range(servers):
                    group.start_soon(one_server, s)

    anyio.run(main)
    cli_codes = [w.communicate(timeout=600) and w.returncode for w in cli_writers]
    stop.touch()
    codes = [m.communicate(timeout=600)[0].decode().split() for m in maintenance]
    errors = [_text(r) for r in results if r.is_error]
    assert not errors, "\n".join(errors)
    assert cli_codes == [0] * len(cli_texts)
    for runs in codes:
        assert runs and set(runs) <= {"0", "75"}, runs  # success, or another one was busy
    with Engram.open(cwd=repo) as engram:
        db = engram.path
    store = connect(db)
    try:
        stored = {row[0] for row in store.rows("SELECT content FROM memories")}  # archived ones count: kept
        integrity = store.rows("PRAGMA integrity_check")[0][0]
    finally:
        store.close()
    said = {f"Server {s} note {i}: deploy {s * 100 + i} reached stage st{i % 4}" for s in range(servers)
            for i in range(per_server)}  # fmt: skip
    assert said | set(cli_texts) <= stored
    assert integrity == "ok"
