"""Engram's MCP server (`engram mcp`) in an assistant's own MCP settings, beside its session hooks.

Where each assistant keeps the servers it starts, from its documentation:

- Claude Code: ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set), not settings.json.
  The user's servers are its top-level ``mcpServers``; one project's private ones (the "local" scope)
  are under ``projects[<absolute path>].mcpServers``. Not the project's ``.mcp.json``: that file is
  committed for the team, and the entry holds this machine's engram path.
- Gemini CLI: ``mcpServers`` in the same ``settings.json`` as its hooks (``~/.gemini/`` or a project's ``.gemini/``).
- Codex: a ``[mcp_servers.engram]`` table in ``config.toml`` (``$CODEX_HOME``, default ``~/.codex/``, or a
  project's ``.codex/``), edited with tomlkit so that the person's comments and layout stay.

The entry is named ``engram``. It is engram's own when it starts an engram (the console script, or a
python running ``engram_cli``) with ``mcp`` among its arguments: install then updates it in place (after
engram moved) and uninstall removes it. A server of that name that starts something else is someone
else's: it is never changed.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_cli.errors import IntegrationError, UsageError
from engram_cli.integrations import SCRIPT_NAMES
from engram_cli.integrations.settings_files import FIX_BY_HAND, JsonSettings, TomlSettings

SERVER = "engram"

_PYTHON = re.compile(r"python[0-9.]*(\.exe)?", re.IGNORECASE)


@dataclass(frozen=True)
class McpLocation:
    """The file (and, for Claude Code's local scope, the project inside it) that holds engram's server entry."""

    path: Path
    project: str | None = None  # the key under "projects" in ~/.claude.json
    toml: bool = False
    typed: bool = False  # Claude Code spells an entry {"type": "stdio", "command", "args", "env"}
    next_step: str | None = None


@dataclass(frozen=True)
class _Registry:
    config_dir_env: str | None  # the variable that moves the directory of the user's file
    config_dir: str  # its default
    file: str
    project_file: str | None  # inside a project, for --project; None: the user's file, under "projects"
    shares_settings: bool  # the same file as the hooks, so --settings names it too
    next_step: str
    toml: bool = False
    typed: bool = False


_REGISTRIES = {
    "claude-code": _Registry(
        config_dir_env="CLAUDE_CONFIG_DIR",
        config_dir="~",
        file=".claude.json",
        project_file=None,
        shares_settings=False,
        typed=True,
        next_step="Claude Code starts it in sessions begun from now on; `claude mcp list` (or /mcp) shows it",
    ),
    "gemini-cli": _Registry(
        config_dir_env=None,
        config_dir="~/.gemini",
        file="settings.json",
        project_file=".gemini/settings.json",
        shares_settings=True,
        next_step="Gemini CLI starts it in sessions begun from now on; /mcp lists its tools",
    ),
    "codex": _Registry(
        config_dir_env="CODEX_HOME",
        config_dir="~/.codex",
        file="config.toml",
        project_file=".codex/config.toml",
        shares_settings=False,
        toml=True,
        next_step="Codex starts it in sessions begun from now on; /mcp in Codex lists it",
    ),
}

# Said after a project install: the project's file counts only once the assistant trusts the project.
_PROJECT_NOTE = {
    "codex": "; Codex reads a project's .codex/config.toml only in a project you trust",
    "claude-code": ", when started in that project",
}


@dataclass
class McpChange:
    """What `engram hooks install|uninstall ASSISTANT` did to engram's MCP server entry."""

    path: Path
    action: str  # installed, updated, unchanged, removed, absent, foreign (someone else's server named engram)
    server: str = SERVER
    project: str | None = None  # Claude Code's local scope: the project the entry is kept under
    command: list[str] = field(default_factory=list)  # the command line the entry starts (installed or removed)
    backup: Path | None = None
    next_step: str | None = None

    json_keys = ("server", "path", "project", "action", "command", "backup", "next_step")


def location(
    name: str, *, project: Path | None = None, settings: Path | None = None, mcp: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> McpLocation | None:  # fmt: skip
    """Where assistant ``name`` keeps engram's server for the user, for ``project``, or in ``settings``.

    None when ``settings`` names a hooks file that holds no MCP servers (Claude Code's, Codex's): then
    the entry is left alone, and asking for it (``mcp`` True or False) is a usage error.
    """
    registry = _REGISTRIES[name]
    env = os.environ if env is None else env
    if settings is not None:
        if registry.shares_settings:
            return _location(registry, settings.expanduser().absolute())
        if mcp is not None:
            user_file = _user_file(registry, env)
            raise UsageError(
                f"`settings` names only the hooks file; {name} keeps its MCP servers in {user_file}",
                hint="leave out --settings to have the hooks and the server in their usual places, or keep it "
                "and leave out --mcp/--no-mcp",
                param=("settings", "mcp"),
            )
        return None
    if project is None:
        return _location(registry, _user_file(registry, env))
    root = project.expanduser().absolute()
    note = registry.next_step + _PROJECT_NOTE.get(name, "")
    if registry.project_file is not None:
        return _location(registry, root / registry.project_file, note)
    # Claude Code keeps a project's private servers under the directory it is started in, as the
    # system reports it: symlinks resolved.
    return _location(registry, _user_file(registry, env), note, project=str(root.resolve()))


def describe(name: str) -> str:
    """Where assistant ``name`` keeps engram's MCP server, and what --settings does to it, for --help."""
    registry = _REGISTRIES[name]
    user = f"{registry.config_dir}/{registry.file}"
    if registry.config_dir_env is not None:
        user = f"${{{registry.config_dir_env}:-{registry.config_dir}}}/{registry.file}"
    project = f"the project's {registry.project_file}" if registry.project_file else "under the project's path there"
    settings = (
        "--settings FILE holds it too."
        if registry.shares_settings
        else "--settings names the hooks file only, so it does not go with --mcp/--no-mcp."
    )
    return (
        f"With --mcp, also the MCP server `engram mcp` (named {SERVER}) in {user} (with --project, {project}), "
        f"so the assistant can recall and remember mid-session. {settings}"
    )


def _user_file(registry: _Registry, env: Mapping[str, str]) -> Path:
    base = env.get(registry.config_dir_env, "") if registry.config_dir_env else ""
    return (Path(base or registry.config_dir).expanduser() / registry.file).absolute()


def _location(registry: _Registry, path: Path, note: str | None = None, *, project: str | None = None) -> McpLocation:
    return McpLocation(path, project, toml=registry.toml, typed=registry.typed, next_step=note or registry.next_step)


def load(where: McpLocation) -> JsonSettings | TomlSettings:
    """The file that holds the entry; refuses one that does not parse."""
    return TomlSettings.load(where.path) if where.toml else JsonSettings.load(where.path)


def is_ours(entry: Any) -> bool:
    """Whether a server entry starts engram's MCP server: an engram executable, or python running engram_cli."""
    if not isinstance(entry, Mapping):
        return False
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list) or "mcp" not in args:
        return False
    program = re.split(r"[\\/]", command)[-1]
    if program in SCRIPT_NAMES:
        return True
    module = any(args[i : i + 2] == ["-m", "engram_cli"] for i in range(len(args) - 1))
    return bool(_PYTHON.fullmatch(program)) and module


def _plain(item: Any) -> Any:
    """A tomlkit item as plain Python (JSON values are plain already)."""
    unwrap = getattr(item, "unwrap", None)
    return unwrap() if unwrap is not None else item


def _keys(where: McpLocation) -> tuple[str, ...]:
    return ("projects", where.project, "mcpServers") if where.project is not None else ("mcpServers",)


def _servers(doc: JsonSettings | TomlSettings, where: McpLocation, *, create: bool) -> MutableMapping[str, Any] | None:
    """The mapping of servers by name (made when ``create``); None when there is none."""
    if isinstance(doc, JsonSettings):
        return doc.object_at(*_keys(where), create=create)
    import tomlkit

    servers = doc.document.get("mcp_servers")
    if servers is None:
        if not create:
            return None
        # A super table has no header of its own: only [mcp_servers.engram] appears in the file.
        doc.document.append("mcp_servers", tomlkit.table(is_super_table=True))
        servers = doc.document["mcp_servers"]
    if not isinstance(servers, MutableMapping):
        raise IntegrationError(
            f"mcp_servers in {doc.path} is not a table; engram left the file as it is", hint=FIX_BY_HAND
        )
    return servers


def registered(doc: JsonSettings | TomlSettings, where: McpLocation) -> bool:
    """Whether engram's own server is in ``doc`` (a file of a shape engram does not know has none)."""
    try:
        servers = _servers(doc, where, create=False)
    except IntegrationError:
        return False
    return servers is not None and is_ours(_plain(servers.get(SERVER)))


def server_command(engram: Sequence[str]) -> list[str]:
    """The command line that starts engram's MCP server: global options (--db) before the subcommand."""
    return [*engram, "mcp"]


def register(doc: JsonSettings | TomlSettings, where: McpLocation, engram: Sequence[str]) -> McpChange:
    """Put engram's server entry into ``doc`` (in memory), or bring the one there up to date.

    Keeps whatever else the entry holds (``env``, a timeout, ``enabled``); refuses to touch a server
    named engram that is not engram's.
    """
    argv = server_command(engram)
    servers = _servers(doc, where, create=True)
    assert servers is not None  # made when missing
    current = servers.get(SERVER)
    change = McpChange(doc.path, "installed", project=where.project, command=argv, next_step=where.next_step)
    if current is not None and not is_ours(_plain(current)):
        starts = _plain(current).get("command") if isinstance(_plain(current), Mapping) else None
        what = f" (it starts {starts!r})" if isinstance(starts, str) else ""
        raise IntegrationError(
            f"{_where(doc.path, where.project)} already has an MCP server named {SERVER!r} that is not "
            f"engram's{what}; engram left the file as it is",
            hint="rename that server or remove it by hand, then run this again",
        )
    if current is None:
        servers[SERVER] = _new_entry(servers, where, argv)
        return change
    before = copy.deepcopy(_plain(current))
    if before.get("command") != argv[0]:
        current["command"] = argv[0]
    if before.get("args") != argv[1:]:
        current["args"] = argv[1:]
    if where.typed and before.get("type") != "stdio":
        current["type"] = "stdio"
    change.action = "unchanged" if _plain(current) == before else "updated"
    return change


def _new_entry(servers: MutableMapping[str, Any], where: McpLocation, argv: list[str]) -> Any:
    if not where.toml:
        if where.typed:
            return {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {}}
        return {"command": argv[0], "args": argv[1:]}
    import tomlkit
    from tomlkit.items import InlineTable

    # In `mcp_servers = { … }` only an inline table fits; anywhere else a table of its own.
    table = tomlkit.inline_table() if isinstance(servers, InlineTable) else tomlkit.table()
    table.add("command", argv[0])
    table.add("args", argv[1:])
    if not isinstance(table, InlineTable):
        table.add(tomlkit.nl())  # a blank line before whatever table follows
    return table


def unregister(doc: JsonSettings | TomlSettings, where: McpLocation) -> McpChange:
    """Take engram's server entry out of ``doc`` (in memory), and the containers that leaves empty."""
    change = McpChange(doc.path, "absent", project=where.project, next_step=None)
    servers = _servers(doc, where, create=False)
    current = servers.get(SERVER) if servers is not None else None
    if servers is None or current is None:
        return change
    entry = _plain(current)
    if not is_ours(entry):
        change.action = "foreign"
        return change
    del servers[SERVER]
    change.action = "removed"
    change.command = [entry["command"], *entry.get("args", [])]
    if isinstance(doc, JsonSettings):
        _drop_empty(doc.data, list(_keys(where)))
    elif not servers and getattr(servers, "is_super_table", lambda: False)():
        # A headerless [mcp_servers] existed only through engram's table: it goes with it.
        del doc.document["mcp_servers"]
    return change


def _drop_empty(node: dict[str, Any], keys: list[str]) -> None:
    """Remove the objects along ``keys`` that are left empty, innermost first."""
    child = node.get(keys[0])
    if not isinstance(child, dict):
        return
    if len(keys) > 1:
        _drop_empty(child, keys[1:])
    if not child:
        del node[keys[0]]


def _where(path: Path, project: str | None) -> str:
    return f"{path} (project {project})" if project is not None else str(path)
