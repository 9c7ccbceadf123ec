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
