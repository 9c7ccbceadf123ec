"""`engram hooks install ASSISTANT --mcp`: engram's MCP server in each assistant's own MCP settings.

The settings live in a temporary HOME (and CLAUDE_CONFIG_DIR / CODEX_HOME where a test sets them). The engram
whose path the entries carry is a script in the test's directory, so the command lines are what a console
script install would write; one test starts the command line really written, through the SDK's own client.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from engram_cli.integrations import mcp as mcpmod

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])


@pytest.fixture
def engram_exe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """engram as if started from its console script, so every entry starts that script."""
    script = tmp_path / "venv" / "bin" / "engram"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(script), "hooks"])
    return str(script)


@pytest.fixture
def repo(git_repo: Any) -> Path:
    path: Path = git_repo("shop")
    return path


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def dumped(data: Any) -> str:
    """The file as a JavaScript tool (Claude Code, Gemini CLI) writes it: two-space JSON."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- Claude Code: ~/.claude.json ------------------------------------------------------------------

CLAUDE_JSON = {
    "numStartups": 41,
    "theme": "dark",
    "mcpServers": {"docs": {"type": "stdio", "command": "npx", "args": ["-y", "docs-mcp"], "env": {"TOKEN": "x"}}},
    "projects": {"/src/other": {"allowedTools": [], "mcpServers": {}, "history": [{"display": "修好 the build"}]}},
    "oauthAccount": {"emailAddress": "me@example.com"},
}


def test_claude_code_a_fresh_claude_json_gets_the_user_entry_beside_the_hooks(
    cli: Any, home: Path, engram_exe: str
) -> None:
    result = cli("hooks", "install", "claude-code", "--mcp")
    assert result.stdout == (
        f"installed engram's SessionStart, SessionEnd hooks in {home}/.claude/settings.json\n"
        f"installed engram's MCP server in {home}/.claude.json\n"
    )
    assert "`claude mcp list`" in result.stderr
    assert read_json(home / ".claude.json") == {
        "mcpServers": {"engram": {"type": "stdio", "command": engram_exe, "args": ["mcp"], "env": {}}}
    }
    assert "SessionStart" in read_json(home / ".claude" / "settings.json")["hooks"]
    assert not (home / ".claude" / "settings.json").with_name(".claude.json").exists()  # not in ~/.claude/


def test_claude_code_keeps_every_other_key_backs_up_once_and_uninstall_restores_the_bytes(
    cli: Any, home: Path, engram_exe: str
) -> None:
    path = home / ".claude.json"
    original = dumped(CLAUDE_JSON).encode()
    path.write_bytes(original)
    path.chmod(0o600)

    changed = json.loads(cli("hooks", "install", "claude-code", "--mcp", "--json").stdout)["mcp"]
    assert changed == {
        "server": "engram", "path": str(path), "project": None, "action": "installed",
        "command": [engram_exe, "mcp"], "backup": f"{path}.engram-backup",
        "next_step": "Claude Code starts it in sessions begun from now on; `claude mcp list` (or /mcp) shows it",
    }  # fmt: skip
    expected = json.loads(original)
    expected["mcpServers"]["engram"] = {"type": "stdio", "command": engram_exe, "args": ["mcp"], "env": {}}
    assert path.read_text(encoding="utf-8") == dumped(expected)  # every other key, in its place and its order
    assert path.stat().st_mode & 0o777 == 0o600
    backup = path.with_name(".claude.json.engram-backup")
    assert backup.read_bytes() == original

    installed = path.read_bytes()
    again = json.loads(cli("hooks", "install", "claude-code", "--mcp", "--json").stdout)
    assert again["action"] == "unchanged" and again["mcp"]["action"] == "unchanged" and again["mcp"]["backup"] is None
    assert path.read_bytes() == installed
    assert backup.read_bytes() == original  # backed up once: a second run does not overwrite it

    removed = cli("hooks", "uninstall", "claude-code")
    assert f"removed engram's MCP server from {path}\n" in removed.stdout
    assert path.read_bytes() == original


def test_claude_code_uninstall_after_claude_rewrote_the_file_removes_only_engrams_entry(
    cli: Any, home: Path, engram_exe: str
) -> None:
    path = home / ".claude.json"
    path.write_text(dumped(CLAUDE_JSON))
    cli("hooks", "install", "claude-code", "--mcp")
    data = read_json(path)
    data["numStartups"] = 42  # Claude Code rewrites the file on every start
    data["mcpServers"]["later"] = {"type": "stdio", "command": "later-mcp", "args": [], "env": {}}
    path.write_text(dumped(data))

    cli("hooks", "uninstall", "claude-code")
    after = read_json(path)
    del data["mcpServers"]["engram"]
    assert after == data and list(after["mcpServers"]) == ["docs", "later"]
    assert "nothing to do" in cli("hooks", "uninstall", "claude-code").stdout


def test_claude_config_dir_moves_the_file(
    cli: Any, home: Path, tmp_path: Path, engram_exe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    cli("hooks", "install", "claude-code", "--mcp")
    assert read_json(config / ".claude.json")["mcpServers"]["engram"]["command"] == engram_exe
    assert not (home / ".claude.json").exists()


def test_claude_code_project_goes_to_the_local_scope_in_claude_json(
    cli: Any, home: Path, repo: Path, tmp_path: Path, engram_exe: str
) -> None:
    path = home / ".claude.json"
    key = str(repo.resolve())
    data = json.loads(json.dumps(CLAUDE_JSON))
    data["projects"][key] = {"allowedTools": ["Bash(make:*)"], "hasTrustDialogAccepted": True}
    path.write_text(dumped(data))
    link = tmp_path / "shop-link"
    link.symlink_to(repo)  # the key is the directory as the system reports it, symlinks resolved

    changed = json.loads(cli("hooks", "install", "claude-code", "--project", str(link), "--mcp", "--json").stdout)
    assert changed["path"] == str(link / ".claude" / "settings.local.json")
    assert changed["mcp"]["path"] == str(path) and changed["mcp"]["project"] == key
    after = read_json(path)
    assert after["projects"][key] == {
        "allowedTools": ["Bash(make:*)"], "hasTrustDialogAccepted": True,
        "mcpServers": {"engram": {"type": "stdio", "command": engram_exe, "args": ["mcp"], "env": {}}},
    }  # fmt: skip
    assert after["mcpServers"] == CLAUDE_JSON["mcpServers"]  # the user scope is not touched
    assert after["projects"]["/src/other"] == CLAUDE_JSON["projects"]["/src/other"]
    assert not (repo / ".mcp.json").exists()  # the team's file is never written

    cli("hooks", "uninstall", "claude-code", "--project", str(repo))
    assert read_json(path) == data


def test_claude_code_a_fresh_project_entry_is_made_and_removed_whole(
    cli: Any, home: Path, repo: Path, engram_exe: str
) -> None:
    cli("hooks", "install", "claude-code", "--project", str(repo), "--mcp")
    assert read_json(home / ".claude.json") == {
        "projects": {
            str(repo.resolve()): {
                "mcpServers": {"engram": {"type": "stdio", "command": engram_exe, "args": ["mcp"], "env": {}}}
            }
        }
    }
    cli("hooks", "uninstall", "claude-code", "--project", str(repo))
    assert read_json(home / ".claude.json") == {}


def test_the_global_db_goes_before_the_subcommand(cli: Any, home: Path, tmp_path: Path, engram_exe: str) -> None:
    cli("--db", str(tmp_path / "work.db"), "hooks", "install", "claude-code", "--mcp")
    entry = read_json(home / ".claude.json")["mcpServers"]["engram"]
    assert entry["args"] == ["--db", str(tmp_path / "work.db"), "mcp"]


def test_a_moved_engram_updates_its_entry_in_place_keeping_what_the_person_added(
    cli: Any, home: Path, engram_exe: str
) -> None:
    path = home / ".claude.json"
    old = {"type": "stdio", "command": "/old/venv/bin/engram", "args": ["mcp"], "env": {"ENGRAM_AGENT": "claude"}}
    path.write_text(dumped({"mcpServers": {"docs": CLAUDE_JSON["mcpServers"]["docs"], "engram": old}}))
    # No --mcp: an entry already there is brought up to date, as the hooks are.
    result = cli("hooks", "install", "claude-code")
    assert f"updated engram's MCP server in {path}\n" in result.stdout
    servers = read_json(path)["mcpServers"]
    assert list(servers) == ["docs", "engram"]
    assert servers["engram"] == {**old, "command": engram_exe}


def test_without_the_flag_nothing_is_registered(cli: Any, home: Path, engram_exe: str) -> None:
    changed = json.loads(cli("hooks", "install", "claude-code", "--json").stdout)
    assert changed["mcp"] is None
    assert not (home / ".claude.json").exists()


def test_no_mcp_removes_the_entry_and_keeps_the_hooks(cli: Any, home: Path, engram_exe: str) -> None:
    path = home / ".claude.json"
    path.write_text(dumped(CLAUDE_JSON))
    cli("hooks", "install", "claude-code", "--mcp")
    result = cli("hooks", "install", "claude-code", "--no-mcp")
    assert result.stdout == (
        f"unchanged engram's SessionStart, SessionEnd hooks in {home}/.claude/settings.json\n"
        f"removed engram's MCP server from {path}\n"
    )
    assert path.read_text() == dumped(CLAUDE_JSON)
    assert "SessionStart" in read_json(home / ".claude" / "settings.json")["hooks"]
    again = json.loads(cli("hooks", "install", "claude-code", "--no-mcp", "--json").stdout)
    assert again["mcp"]["action"] == "absent"


FOREIGN_ENGRAM = {"type": "stdio", "command": "npx", "args": ["-y", "engram-memory-server"], "env": {}}


@pytest.mark.parametrize("assistant", ["claude-code", "gemini-cli"])
def test_someone_elses_server_named_engram_is_never_touched(
    cli: Any, home: Path, engram_exe: str, assistant: str
) -> None:
    path = home / (".claude.json" if assistant == "claude-code" else ".gemini/settings.json")
    path.parent.mkdir(exist_ok=True)
    original = dumped({"mcpServers": {"engram": FOREIGN_ENGRAM}}).encode()
    path.write_bytes(original)

    refused = cli("hooks", "install", assistant, "--mcp", ok=False)
    assert refused.exit_code == 1
    assert "already has an MCP server named 'engram' that is not engram's (it starts 'npx')" in refused.stderr
    assert "Hint: rename that server or remove it by hand" in refused.stderr
    assert path.read_bytes() == original
    assert not (home / ".claude" / "settings.json").exists()  # nothing was written: the hooks neither

    cli("hooks", "install", assistant)  # without --mcp the entry is not engram's business
    uninstalled = cli("hooks", "uninstall", assistant)
    assert f"the MCP server named 'engram' in {path} is not engram's; engram left it as it is" in uninstalled.stderr
    assert json.loads(cli("hooks", "uninstall", assistant, "--json").stdout)["mcp"]["action"] == "foreign"
    assert read_json(path)["mcpServers"] == {"engram": FOREIGN_ENGRAM}


def test_invalid_claude_json_is_refused_for_mcp_and_left_alone_otherwise(cli: Any, home: Path, engram_exe: str) -> None:
    path = home / ".claude.json"
    broken = b'{"numStartups": 3,, }\n'
    path.write_bytes(broken)
    refused = cli("hooks", "install", "claude-code", "--mcp", ok=False)
    assert refused.exit_code == 1 and "is not valid JSON (line 1, column 19" in refused.stderr
    assert "Hint: fix the file by hand" in refused.stderr
    assert not (home / ".claude" / "settings.json").exists()

    # Not asked about MCP: the hooks install as before and the file it could not read is left alone.
    assert json.loads(cli("hooks", "install", "claude-code", "--json").stdout)["mcp"] is None
    # Uninstall must know whether engram's entry is there: it refuses and changes nothing.
    hooks_file = (home / ".claude" / "settings.json").read_bytes()
    assert cli("hooks", "uninstall", "claude-code", ok=False).exit_code == 1
    assert (home / ".claude" / "settings.json").read_bytes() == hooks_file
    assert path.read_bytes() == broken
    assert not path.with_name(".claude.json.engram-backup").exists()


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"mcpServers": ["engram"]}', '"mcpServers"'),
        ('{"projects": {"PROJECT": []}}', '"projects"."PROJECT"'),
        ('{"projects": {"PROJECT": {"mcpServers": "none"}}}', '"projects"."PROJECT"."mcpServers"'),
    ],
)
def test_claude_json_of_an_unexpected_shape_is_refused(
    cli: Any, home: Path, repo: Path, engram_exe: str, content: str, where: str
) -> None:
    path = home / ".claude.json"
    key = str(repo.resolve())
    content = content.replace("PROJECT", key)
    path.write_text(content)
    args = ("--project", str(repo)) if "projects" in content else ()
    refused = cli("hooks", "install", "claude-code", *args, "--mcp", ok=False)
    assert refused.exit_code == 1
    assert f"{where.replace('PROJECT', key)} in {path} is not an object" in refused.stderr
    assert path.read_text() == content


def test_settings_names_the_hooks_file_only_for_claude_code_and_codex(
    cli: Any, home: Path, tmp_path: Path, engram_exe: str
) -> None:
    for assistant in ("claude-code", "codex"):
        refused = cli("hooks", "install", assistant, "--settings", str(tmp_path / "h.json"), "--mcp", ok=False)
        assert refused.exit_code == 2 and "names only the hooks file" in refused.stderr
        assert "--settings" in refused.stderr and not (tmp_path / "h.json").exists()
    cli("hooks", "install", "claude-code", "--mcp")
    cli("hooks", "uninstall", "claude-code", "--settings", str(tmp_path / "h.json"))
    assert "engram" in read_json(home / ".claude.json")["mcpServers"]  # left alone, as the help says


# -- Codex: config.toml ---------------------------------------------------------------------------

CODEX_TOML = """\
# Codex, set up by hand
model = "o3"  # the default

[mcp_servers.docs]
command = "docs-mcp"
args = []  # none yet

[tui]
notifications = true
"""


def test_codex_a_fresh_config_toml_gets_the_table(
    cli: Any, tmp_path: Path, engram_exe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    result = cli("hooks", "install", "codex", "--mcp")
    assert f"installed engram's MCP server in {tmp_path}/codex/config.toml\n" in result.stdout
    assert (tmp_path / "codex" / "config.toml").read_text() == (
        f'[mcp_servers.engram]\ncommand = "{engram_exe}"\nargs = ["mcp"]\n'
    )
    assert (tmp_path / "codex" / "hooks.json").exists()


def test_codex_keeps_comments_and_layout_and_uninstall_takes_out_only_its_table(
    cli: Any, home: Path, engram_exe: str
) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_TOML)
    cli("hooks", "install", "codex", "--mcp")
    ours = f'[mcp_servers.engram]\ncommand = "{engram_exe}"\nargs = ["mcp"]\n\n'
    assert path.read_text() == CODEX_TOML.replace("[tui]", ours + "[tui]")
    assert path.with_name("config.toml.engram-backup").read_text() == CODEX_TOML

    installed = path.read_bytes()
    assert json.loads(cli("hooks", "install", "codex", "--mcp", "--json").stdout)["mcp"]["action"] == "unchanged"
    assert path.read_bytes() == installed

    cli("hooks", "uninstall", "codex")
    assert path.read_text() == CODEX_TOML  # nothing else changed: back byte for byte

    cli("hooks", "install", "codex", "--mcp")
    path.write_text(path.read_text().replace('model = "o3"', 'model = "o4"'))  # the person edits meanwhile
    cli("hooks", "uninstall", "codex")
    assert path.read_text() == CODEX_TOML.replace('model = "o3"', 'model = "o4"')


def test_codex_an_appended_table_leaves_no_trace_on_removal(cli: Any, home: Path, engram_exe: str) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    original = '# mine\nmodel = "o3"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    path.write_text(original)
    cli("hooks", "install", "codex", "--mcp")
    assert path.read_text() == original + f'\n[mcp_servers.engram]\ncommand = "{engram_exe}"\nargs = ["mcp"]\n'
    path.write_text(path.read_text().replace("# mine", "# mine, edited"))
    cli("hooks", "uninstall", "codex")
    assert path.read_text() == original.replace("# mine", "# mine, edited")


def test_codex_a_moved_engram_keeps_the_tables_other_settings(cli: Any, home: Path, engram_exe: str) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(
        '[mcp_servers.engram]\ncommand = "/old/bin/engram"\nargs = ["mcp"]\nstartup_timeout_sec = 20\n\n'
        '[mcp_servers.engram.env]\nENGRAM_AGENT = "codex"\n'
    )
    assert "updated engram's MCP server" in cli("hooks", "install", "codex").stdout
    assert tomllib.loads(path.read_text())["mcp_servers"]["engram"] == {
        "command": engram_exe, "args": ["mcp"], "startup_timeout_sec": 20, "env": {"ENGRAM_AGENT": "codex"},
    }  # fmt: skip


def test_codex_an_inline_servers_table_gets_an_inline_entry(cli: Any, home: Path, engram_exe: str) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('mcp_servers = { docs = { command = "docs-mcp" } }\n')
    cli("hooks", "install", "codex", "--mcp")
    assert tomllib.loads(path.read_text())["mcp_servers"] == {
        "docs": {"command": "docs-mcp"}, "engram": {"command": engram_exe, "args": ["mcp"]},
    }  # fmt: skip
    cli("hooks", "uninstall", "codex")
    assert path.read_text() == 'mcp_servers = { docs = { command = "docs-mcp" } }\n'


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('model = "o3\n', "is not valid TOML"),
        ("mcp_servers = 3\n", "mcp_servers in"),
        ('[mcp_servers.engram]\ncommand = "uvx"\nargs = ["engram-server"]\n', "that is not engram's (it starts 'uvx')"),
    ],
)
def test_codex_refuses_what_it_cannot_safely_change_and_leaves_it(
    cli: Any, home: Path, engram_exe: str, content: str, message: str
) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(content)
    refused = cli("hooks", "install", "codex", "--mcp", ok=False)
    assert refused.exit_code == 1 and message in refused.stderr and "Hint:" in refused.stderr
    assert path.read_text() == content
    assert not (home / ".codex" / "hooks.json").exists()
    assert not path.with_name("config.toml.engram-backup").exists()


def test_codex_project_writes_the_projects_config_toml(cli: Any, home: Path, repo: Path, engram_exe: str) -> None:
    changed = json.loads(cli("hooks", "install", "codex", "--project", str(repo), "--mcp", "--json").stdout)
    path = repo / ".codex" / "config.toml"
    assert changed["mcp"]["path"] == str(path) and changed["mcp"]["project"] is None
    assert "only in a project you trust" in changed["mcp"]["next_step"]
    assert tomllib.loads(path.read_text()) == {"mcp_servers": {"engram": {"command": engram_exe, "args": ["mcp"]}}}
    assert not (home / ".codex" / "config.toml").exists()


# -- Gemini CLI: the same settings.json as its hooks -----------------------------------------------


def test_gemini_one_file_one_backup_and_uninstall_restores_the_bytes(cli: Any, home: Path, engram_exe: str) -> None:
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir()
    original = dumped({"theme": "GitHub", "mcpServers": {"docs": {"command": "docs-mcp", "trust": True}}}).encode()
    path.write_bytes(original)

    changed = json.loads(cli("hooks", "install", "gemini-cli", "--mcp", "--json").stdout)
    backup = f"{path}.engram-backup"
    assert changed["backup"] == backup and changed["mcp"]["backup"] == backup
    data = read_json(path)
    assert data["theme"] == "GitHub" and list(data["mcpServers"]) == ["docs", "engram"]
    assert data["mcpServers"]["engram"] == {"command": engram_exe, "args": ["mcp"]}
    assert Path(backup).read_bytes() == original

    shown = cli("hooks", "install", "gemini-cli", "--mcp")
    assert f"unchanged engram's MCP server in {path}\n" in shown.stdout
    cli("hooks", "uninstall", "gemini-cli")
    assert path.read_bytes() == original


def test_gemini_mcp_alone_changes_when_the_hooks_are_there(cli: Any, home: Path, engram_exe: str) -> None:
    cli("hooks", "install", "gemini-cli")
    shown = cli("hooks", "install", "gemini-cli", "--mcp")
    path = home / ".gemini" / "settings.json"
    assert shown.stdout == (
        f"unchanged engram's SessionStart, SessionEnd hooks in {path}\ninstalled engram's MCP server in {path}\n"
    )
    assert f"the file as it was is saved as {path}.engram-backup" in shown.stderr  # said once, for the MCP entry


def test_gemini_project_and_settings_hold_the_server_too(
    cli: Any, home: Path, repo: Path, tmp_path: Path, engram_exe: str
) -> None:
    cli("hooks", "install", "gemini-cli", "--project", str(repo), "--mcp")
    assert read_json(repo / ".gemini" / "settings.json")["mcpServers"]["engram"]["command"] == engram_exe
    exact = tmp_path / "exact.json"
    cli("hooks", "install", "gemini-cli", "--settings", str(exact), "--mcp")
    assert set(read_json(exact)) == {"hooks", "mcpServers"}
    assert not (home / ".gemini" / "settings.json").exists()


# -- what counts as engram's own -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "ours"),
    [
        ({"command": "engram", "args": ["mcp"]}, True),  # the README's hand-written entry
        ({"command": "/home/me/.local/bin/engram", "args": ["--db", "/x.db", "mcp"]}, True),
        ({"command": "C:\\Tools\\engram.exe", "args": ["mcp"]}, True),
        ({"command": "/usr/bin/python3.12", "args": ["-m", "engram_cli", "mcp"]}, True),
        ({"command": "/usr/bin/python3", "args": ["-m", "other", "mcp"]}, False),
        ({"command": "engram", "args": ["recall", "x"]}, False),
        ({"command": "npx", "args": ["-y", "engram", "mcp"]}, False),
        ({"url": "https://engram.example/mcp"}, False),
        ("engram mcp", False),
    ],
)
def test_whose_entry_is_engrams(entry: Any, ours: bool) -> None:
    assert mcpmod.is_ours(entry) is ours


# -- the registered command line really serves ----------------------------------------------------


def test_the_command_line_written_for_gemini_starts_a_working_server(cli: Any, home: Path, tmp_path: Path) -> None:
    """No fake here: the entry holds whatever engram_command finds (the console script on PATH, or this
    python with -m engram_cli), and PYTHONPATH makes either run this checkout."""
    cli("hooks", "install", "gemini-cli", "--mcp")
    entry = read_json(home / ".gemini" / "settings.json")["mcpServers"]["engram"]
    assert Path(entry["command"]).is_absolute() and entry["args"][-1] == "mcp"
    env = {name: value for name, value in os.environ.items() if name in ("ENGRAM_HOME", "HOME", "PATH", "NO_COLOR")}
    env["PYTHONPATH"] = str(REPO)
    server = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=tmp_path)
    names: list[str] = []

    async def main() -> None:
        with anyio.fail_after(300):
            async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                names.extend(tool.name for tool in (await session.list_tools()).tools)

    anyio.run(main)
    assert {"recall", "remember", "get", "set"} <= set(names)
