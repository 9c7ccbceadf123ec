"""The per-prompt hook: installed on request, kept on reinstall, fed the assistants' own stdin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram_cli.integrations import assistants


def _ours(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event, groups in json.loads(path.read_text()).get("hooks", {}).items():
        for group in groups:
            for hook in group["hooks"]:
                if hook["command"].endswith("# engram-managed"):
                    found.setdefault(event, []).append(hook["command"])
    return found


@pytest.mark.parametrize(
    ("name", "event"),
    [("claude-code", "UserPromptSubmit"), ("gemini-cli", "BeforeAgent"), ("codex", "UserPromptSubmit")],
)
def test_per_prompt_adds_the_prompt_hook_in_the_assistants_event(name: str, event: str, tmp_path: Path) -> None:
    a = assistants.ASSISTANTS[name]
    path = tmp_path / "settings.json"
    assistants.install(a, path, ["/e"])
    assert event not in _ours(path)

    change = assistants.install(a, path, ["/e"], per_prompt=True)
    assert change.action == "updated" and event in change.events
    assert _ours(path)[event] == [f"/e --hook {name}:{event} hooks prompt {name} # engram-managed"]
    if name == "gemini-cli":
        hook = json.loads(path.read_text())["hooks"][event][0]["hooks"][0]
        assert hook["name"] == "engram-prompt" and hook["timeout"] == assistants.PROMPT_TIMEOUT_S * 1000


def test_reinstalling_keeps_the_per_prompt_hook_unless_told_otherwise(tmp_path: Path) -> None:
    claude = assistants.ASSISTANTS["claude-code"]
    path = tmp_path / "settings.json"
    assistants.install(claude, path, ["/old/engram"], per_prompt=True)
    moved = assistants.install(claude, path, ["/new/engram"])  # engram moved: install again, no flag
    assert moved.action == "updated"
    assert _ours(path)["UserPromptSubmit"][0].startswith("/new/engram ")
    assert assistants.install(claude, path, ["/new/engram"]).action == "unchanged"

    assistants.install(claude, path, ["/new/engram"], per_prompt=False)
    assert set(_ours(path)) == {"SessionStart", "SessionEnd"}
    assert assistants.uninstall(claude, path).action == "removed"
    assert _ours(path) == {}


def test_the_cli_flag_reaches_the_settings_file(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    result = cli("hooks", "install", "claude-code", "--per-prompt")
    assert "UserPromptSubmit" in result.stdout
    settings = tmp_path / "claude" / "settings.json"
    assert "UserPromptSubmit" in _ours(settings)
    cli("hooks", "install", "claude-code", "--no-per-prompt")
    assert "UserPromptSubmit" not in _ours(settings)


@pytest.mark.parametrize(
    ("payload", "prompt", "cwd"),
    [
        ('{"session_id": "s", "prompt": " how do we deploy? ", "cwd": "/src/shop"}', "how do we deploy?", "/src/shop"),
        ('{"prompt": "部署用什么命令？"}', "部署用什么命令？", None),
        ("how do we deploy?\n", "how do we deploy?", None),
        ('{"prompt": 3, "cwd": ""}', "", None),
        ("{not json", "{not json", None),
    ],
)
def test_prompt_event_reads_json_or_plain_text(payload: str, prompt: str, cwd: str | None) -> None:
    event = assistants.prompt_event(payload)
    assert event.prompt == prompt
    assert event.cwd == (Path(cwd) if cwd else None)


@pytest.mark.parametrize(
    ("prompt", "asks"),
    [("", False), ("/clear", False), ("/model opus", False), ("/usr/bin is missing", True), ("hi", True)],
)
def test_slash_commands_and_empty_prompts_ask_nothing_of_memory(prompt: str, asks: bool) -> None:
    assert assistants.asks_memory(prompt) is asks


# -- hooks prompt ------------------------------------------------------------------------------

DEPLOY = "Deploys of the webshop go through make release after a green CI run"
PREFERENCE = "Answer in British English"


@pytest.fixture
def shop(cli: Any, git_repo: Any) -> Path:
    repo: Path = git_repo("webshop")
    cli("add", DEPLOY, "-n", "webshop")
    cli("add", PREFERENCE, "-g", "-i", "0.8")
    cli("add", "Billing exports run nightly at two", "-n", "billing")
    return repo


def _prompt(cli: Any, repo: Path, prompt: str, assistant: str = "claude-code") -> Any:
    payload = json.dumps(
        {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(repo)}
    )
    return cli("hooks", "prompt", assistant, input=payload)


def test_a_relevant_prompt_gets_its_memories_and_they_count_as_accessed(cli: Any, shop: Path, rows: Any) -> None:
    shown = _prompt(cli, shop / "src", "how do we deploy the webshop?")
    assert shown.exit_code == 0 and DEPLOY in shown.stdout
    assert "[scope: project]" in shown.stdout and "[relevance: " in shown.stdout
    assert "Billing" not in shown.stdout  # another project's memory never reaches this one
    ((count,),) = rows("SELECT access_count FROM memories WHERE content = ?", (DEPLOY,))
    assert count == 1


@pytest.mark.parametrize("prompt", ["what is the capital of France?", "法国的首都是哪里？", "/clear", "   "])
def test_nothing_relevant_prints_nothing_and_bumps_nothing(cli: Any, shop: Path, rows: Any, prompt: str) -> None:
    shown = _prompt(cli, shop, prompt)
    assert (shown.exit_code, shown.stdout, shown.stderr) == (0, "", "")
    assert rows("SELECT sum(access_count) FROM memories") == [(0,)]


def test_gemini_gets_json_for_its_before_agent_event(cli: Any, shop: Path) -> None:
    shown = _prompt(cli, shop, "how do we deploy the webshop?", "gemini-cli")
    payload = json.loads(shown.stdout)
    assert payload["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert DEPLOY in payload["hookSpecificOutput"]["additionalContext"]


def test_the_prompt_hook_respects_its_limits(cli: Any, shop: Path) -> None:
    cli("config", "set", "hooks.prompt_k", "1")
    cli("add", "Deploy rollbacks use make rollback VERSION=…", "-n", "webshop")
    shown = _prompt(cli, shop, "how do we deploy the webshop and roll back?")
    assert shown.stdout.count("[memory #") == 1
    cli("config", "set", "hooks.prompt_min_relevance", "1")
    assert _prompt(cli, shop, "how do we deploy the webshop?").stdout == ""


def test_past_its_time_limit_the_hook_prints_nothing_and_notes_it(cli: Any, shop: Path, engram_home: Path) -> None:
    cli("config", "set", "hooks.prompt_time_limit_s", "0.000001")
    payload = json.dumps({"prompt": "how do we deploy the webshop?", "cwd": str(shop)})
    shown = cli("--hook", "claude-code:UserPromptSubmit", "hooks", "prompt", "claude-code", input=payload)
    assert (shown.exit_code, shown.stdout) == (0, "")
    assert "prompt_time_limit_s" in shown.stderr
    assert "prompt_time_limit_s" in (engram_home / "hooks.log").read_text()


def test_without_a_database_the_prompt_hook_creates_none(cli: Any, db_path: Path, tmp_path: Path) -> None:
    shown = cli("hooks", "prompt", "codex", input=json.dumps({"prompt": "how do we deploy?", "cwd": str(tmp_path)}))
    assert (shown.exit_code, shown.stdout) == (0, "")
    assert not db_path.exists()
