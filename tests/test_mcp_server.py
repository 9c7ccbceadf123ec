"""`engram mcp` spoken to by the SDK's own client over stdio, as an assistant would."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from engram_cli.api import Engram

REPO = Path(__file__).resolve().parent.parent


def _converse(cwd: Path, talk: Callable[[ClientSession], Awaitable[None]]) -> None:
    env = {name: value for name, value in os.environ.items() if name in ("ENGRAM_HOME", "HOME", "PATH", "NO_COLOR")}
    env["PYTHONPATH"] = str(REPO)  # this checkout's engram, whatever is installed
    server = StdioServerParameters(command=sys.executable, args=["-m", "engram_cli", "mcp"], env=env, cwd=cwd)

    async def main() -> None:
        with anyio.fail_after(300):  # a hung server fails the test instead of the run
            async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await talk(session)

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
