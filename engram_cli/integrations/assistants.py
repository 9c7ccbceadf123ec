"""Session hooks for coding assistants: memories when a session starts, ingest when it ends.

Supported are the assistants whose hook files have a documented format that engram could
check against the assistant's own documentation or source:

- Claude Code: ``settings.json`` hooks; a SessionStart or UserPromptSubmit command's stdout
  becomes context.
- Gemini CLI: ``settings.json`` hooks; SessionStart and BeforeAgent (its per-prompt event) must
  print JSON (``hookSpecificOutput.additionalContext``).
- Codex: ``hooks.json``; SessionStart and UserPromptSubmit stdout becomes context. Codex has no
  session-end event (Stop fires after every turn), so the previous sessions are ingested when
  the next one starts, in the background.

Each of the three hands a per-prompt hook JSON on stdin with at least ``prompt`` and ``cwd``.

All three nest the same way: ``{"hooks": {Event: [{"matcher"?, "hooks": [{"type": "command",
"command": ...}]}]}}``. Engram's entries are recognised by the marker comment that ends their
command, so a foreign entry is never touched and a moved engram replaces its old entries.
Files are rewritten atomically, with a one-time backup, and never when they do not parse
(``settings_files``). With ``mcp``, engram's MCP server is registered at the same time, in the file
each assistant keeps its servers in (``mcp``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_cli.errors import IntegrationError, UsageError
from engram_cli.integrations import MARKER, shell_join
from engram_cli.integrations import mcp as mcpmod
from engram_cli.integrations.mcp import McpChange, McpLocation
from engram_cli.integrations.settings_files import JsonSettings, TomlSettings

INGEST_MAX_SECONDS = 60
CONTEXT_TIMEOUT_S = 30
# Recall at session start: enough to orient, small enough to leave the context window alone.
CONTEXT_K = 8
CONTEXT_BUDGET = 1500
# The assistant's own timeout for the per-prompt hook: a backstop well beyond the time limit engram
# sets itself (hooks.prompt_time_limit_s), after which it prints nothing.
PROMPT_TIMEOUT_S = 15


@dataclass(frozen=True)
class Assistant:
    """Where one assistant keeps its hooks and how it wants them written."""

    name: str  # the CLI name, also the ingest source
    title: str
    config_dir_env: str | None  # variable that moves the assistant's config directory
    config_dir: str  # its default
    settings_file: str  # the hooks file inside that directory
    project_file: str  # the hooks file inside a repository, for --project
    project_dir_env: str | None  # variable that holds the project directory in a hook's environment
    ingest_event: str
    context_as_json: bool = False  # stdout must be {"hookSpecificOutput": {"additionalContext": ...}}
    timeout_unit: int | None = 1  # the timeout field counts seconds * this; None: leave it out
    named: bool = False  # hooks carry a "name" (Gemini lists and toggles them by it)
    after_install: str | None = None  # what the person still has to do
    context_event: str = "SessionStart"
    prompt_event: str = "UserPromptSubmit"  # fired with each prompt, before the model sees it

    def user_settings(self, env: Mapping[str, str] | None = None) -> Path:
        env = os.environ if env is None else env
        base = env.get(self.config_dir_env, "") if self.config_dir_env else ""
        return Path(base or self.config_dir).expanduser() / self.settings_file


ASSISTANTS: dict[str, Assistant] = {
    a.name: a
    for a in (
        Assistant(
            name="claude-code",
            title="Claude Code",
            config_dir_env="CLAUDE_CONFIG_DIR",
            config_dir="~/.claude",
            settings_file="settings.json",
            # settings.local.json, not settings.json: the command holds this machine's engram path,
            # which has no business in a file the team commits.
            project_file=".claude/settings.local.json",
            project_dir_env="CLAUDE_PROJECT_DIR",
            ingest_event="SessionEnd",
        ),
        Assistant(
            name="gemini-cli",
            title="Gemini CLI",
            config_dir_env=None,
            config_dir="~/.gemini",
            settings_file="settings.json",
            project_file=".gemini/settings.json",
            project_dir_env="GEMINI_PROJECT_DIR",
            ingest_event="SessionEnd",
            context_as_json=True,
            prompt_event="BeforeAgent",
            timeout_unit=1000,
            named=True,
            after_install="Gemini CLI reads a project's .gemini/settings.json only in a trusted folder; "
            "`/hooks panel` in Gemini shows whether the hooks are enabled",
        ),
        Assistant(
            name="codex",
            title="Codex",
            config_dir_env="CODEX_HOME",
            config_dir="~/.codex",
            settings_file="hooks.json",
            project_file=".codex/hooks.json",
            project_dir_env=None,
            ingest_event="SessionStart",
            timeout_unit=None,
            after_install="Codex runs new hooks only once you trust them: review them with /hooks in Codex",
        ),
    )
}

# Sources `engram ingest` reads whose tools have no hook format engram could verify: cron covers them.
UNSUPPORTED = ("aider", "cursor", "cline", "roo-code", "opencode", "continue", "copilot-cli")


def assistant(name: str) -> Assistant:
    try:
        return ASSISTANTS[name]
    except KeyError:
        raise UsageError(
            f"no session hooks for {name!r}",
            hint=f"supported: {', '.join(ASSISTANTS)}; for the others, `engram schedule` ingests from cron",
        ) from None


def settings_path(a: Assistant, *, project: Path | None = None, settings: Path | None = None) -> Path:
    """The file to change: --settings as given, --project's file, or the user-level one."""
    if project is not None and settings is not None:
        raise UsageError("`project` and `settings` exclude each other", param=("project", "settings"))
    if settings is not None:
        return settings.expanduser().absolute()
    if project is not None:
        root = project.expanduser().absolute()
        if not root.is_dir():
            raise UsageError(f"`project` {project}: no such directory", param="project")
        return root / a.project_file
    return a.user_settings().absolute()


def _command_line(text: str) -> str:
    return f"{text} # {MARKER}"


def wanted_hooks(a: Assistant, engram: Sequence[str], *, per_prompt: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Engram's hook entries for ``a``, by event, in the assistant's own spelling (``per_prompt``: with
    the hook that recalls for each prompt)."""
    # --hook: a failure is noted in hooks.log, which `engram doctor` reads (the output goes nowhere).
    context_cmd = [*engram, "--hook", f"{a.name}:{a.context_event}", "hooks", "context", a.name]
    context: dict[str, Any] = {"type": "command", "command": _command_line(shell_join(context_cmd))}
    # Detached and silent: the assistant may be exiting, and some kill a slow SessionEnd hook.
    ingest_cmd = [
        *engram, "--hook", f"{a.name}:{a.ingest_event}", "ingest", a.name, "--quiet",
        "--max-seconds", str(INGEST_MAX_SECONDS),
    ]  # fmt: skip
    ingest: dict[str, Any] = {
        "type": "command",
        "command": _command_line(f"nohup {shell_join(ingest_cmd)} </dev/null >/dev/null 2>&1 &"),
    }
    prompt_cmd = [*engram, "--hook", f"{a.name}:{a.prompt_event}", "hooks", "prompt", a.name]
    prompt: dict[str, Any] = {"type": "command", "command": _command_line(shell_join(prompt_cmd))}
    if a.timeout_unit is not None:
        context["timeout"] = CONTEXT_TIMEOUT_S * a.timeout_unit
        prompt["timeout"] = PROMPT_TIMEOUT_S * a.timeout_unit
    if a.named:
        context = {"name": "engram-context", **context}
        ingest = {"name": "engram-ingest", **ingest}
        prompt = {"name": "engram-prompt", **prompt}
    wanted: dict[str, list[dict[str, Any]]] = {a.context_event: [context]}
    wanted.setdefault(a.ingest_event, []).append(ingest)
    if per_prompt:
        wanted.setdefault(a.prompt_event, []).append(prompt)
    return wanted


def _has_prompt_hook(a: Assistant, data: Mapping[str, Any]) -> bool:
    """Whether engram's per-prompt hook is among the hooks of ``data``."""
    return any(" hooks prompt " in str(h.get("command")) for h in _ours(data).get(a.prompt_event, []))


@dataclass
class SettingsChange:
    """What `engram hooks install|uninstall ASSISTANT` did to one settings file."""

    assistant: str
    path: Path
    action: str  # installed, updated, unchanged, removed, absent
    events: list[str] = field(default_factory=list)
    backup: Path | None = None
    next_step: str | None = None
    mcp: McpChange | None = None  # engram's MCP server entry, when the command asked about it or one is there


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and hook["command"].endswith(f"# {MARKER}")


def _load(path: Path) -> JsonSettings:
    """The hooks file, parsed; refuses anything it cannot safely rewrite."""
    settings = JsonSettings.load(path)
    hooks = settings.data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise IntegrationError(f'"hooks" in {path} is not an object; engram left the file as it is')
    return settings


def _remove_ours(data: dict[str, Any]) -> list[str]:
    """Drop engram's hook entries in place, and the groups, events and "hooks" they leave empty."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    touched: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not any(_is_ours(h) for h in entries):
                kept_groups.append(group)
                continue
            touched.append(event)
            rest = [h for h in entries if not _is_ours(h)]
            if rest:
                kept_groups.append({**group, "hooks": rest})
        if event in touched:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if touched and not hooks:
        del data["hooks"]
    return list(dict.fromkeys(touched))


def _ours(data: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    hooks = data.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for hook in entries if isinstance(entries, list) else []:
                if _is_ours(hook):
                    found.setdefault(event, []).append(hook)
    return found


def install(
    a: Assistant, path: Path, engram: Sequence[str], *, per_prompt: bool | None = None, mcp: bool | None = None,
    servers: McpLocation | None = None,
) -> SettingsChange:  # fmt: skip
    """Merge engram's hooks into ``path``, keeping every other key and hook; idempotent.

    ``per_prompt`` adds (True) or leaves out (False) the hook that recalls for each prompt; None
    keeps whatever is installed, so that installing again (after engram moved) changes nothing else.
    ``mcp`` registers (True) or removes (False) engram's MCP server at ``servers`` the same way; None
    brings an entry already there up to date and adds none (a file it cannot read is then left alone).
    Every file is checked before any is written: a refusal leaves them all as they were.
    """
    settings = _load(path)
    data = settings.data
    if per_prompt is None:
        per_prompt = _has_prompt_hook(a, data)
    wanted = wanted_hooks(a, engram, per_prompt=per_prompt)
    present = _ours(data)
    change = SettingsChange(a.name, path, "unchanged", list(wanted), next_step=a.after_install)
    if present != wanted:
        _remove_ours(data)
        hooks = data.setdefault("hooks", {})
        for event, entries in wanted.items():
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise IntegrationError(f'"hooks.{event}" in {path} is not a list; engram left the file as it is')
            groups.append({"hooks": entries})
        change.action = "updated" if present else "installed"
    holder = _servers_file(settings, servers, strict=mcp is not None)
    if holder is not None and servers is not None:
        if mcp or (mcp is None and mcpmod.registered(holder, servers)):
            change.mcp = mcpmod.register(holder, servers, engram)
        elif mcp is False:
            change.mcp = mcpmod.unregister(holder, servers)
    _write(settings, holder, change, removing=False)
    return change


def uninstall(a: Assistant, path: Path, *, servers: McpLocation | None = None) -> SettingsChange:
    """Remove engram's hooks from ``path``, and its MCP server at ``servers``, and nothing else."""
    settings = _load(path)
    holder = _servers_file(settings, servers, strict=True)
    removed = _remove_ours(settings.data)
    change = SettingsChange(a.name, path, "removed" if removed else "absent", removed)
    if holder is not None and servers is not None:
        change.mcp = mcpmod.unregister(holder, servers)
    _write(settings, holder, change, removing=True)
    return change


def _servers_file(
    settings: JsonSettings, servers: McpLocation | None, *, strict: bool
) -> JsonSettings | TomlSettings | None:
    """The file holding the MCP servers: the hooks file itself (Gemini CLI) or another, read now so that a
    refusal comes before anything is written. Not ``strict``: one that cannot be read is left out."""
    if servers is None:
        return None
    if servers.path == settings.path and not servers.toml:
        return settings
    try:
        return mcpmod.load(servers)
    except IntegrationError:
        if strict:
            raise
        return None


def _write(
    settings: JsonSettings, holder: JsonSettings | TomlSettings | None, change: SettingsChange, *, removing: bool
) -> None:
    """Save each file that changed, once. After a removal a file goes back byte for byte when nothing else changed."""
    hooks_changed = change.action not in ("unchanged", "absent")
    server = change.mcp if change.mcp is not None and change.mcp.action in ("installed", "updated", "removed") else None
    if holder is settings:
        if hooks_changed or server is not None:
            only_removed = removing or (not hooks_changed and server is not None and server.action == "removed")
            backup = settings.save_removal() if only_removed else settings.save()
            change.backup = backup if hooks_changed else None
            if server is not None:
                server.backup = backup
        return
    if hooks_changed:
        change.backup = settings.save_removal() if removing else settings.save()
    if server is not None and holder is not None:
        server.backup = holder.save_removal() if server.action == "removed" else holder.save()


def project_dir(a: Assistant, explicit: Path | None, env: Mapping[str, str] | None = None) -> Path:
    """The project a hook runs for: --dir, else the assistant's project variable, else the working directory."""
    env = os.environ if env is None else env
    if explicit is not None:
        return explicit
    if a.project_dir_env and env.get(a.project_dir_env):
        return Path(env[a.project_dir_env])
    return Path.cwd()


@dataclass(frozen=True)
class PromptEvent:
    """What a per-prompt hook was handed: the prompt, and the directory the assistant runs in."""

    prompt: str
    cwd: Path | None


# A prompt that is a command to the assistant itself (`/clear`, `/model opus`) asks nothing of memory.
_SLASH_COMMAND = re.compile(r"^/[\w:.-]+(\s|$)")


def prompt_event(payload: str) -> PromptEvent:
    """The prompt in a per-prompt hook's stdin: a JSON object's ``prompt`` (and ``cwd``), else the text itself.

    All three assistants send JSON; plain text is accepted so the hook can be tried by hand
    (``echo "how do we deploy?" | engram hooks prompt claude-code``).
    """
    text = payload.strip()
    try:
        data = json.loads(text) if text.startswith("{") else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return PromptEvent(text, None)
    prompt = data.get("prompt")
    cwd = data.get("cwd")
    return PromptEvent(
        prompt.strip() if isinstance(prompt, str) else "",
        Path(cwd) if isinstance(cwd, str) and cwd else None,
    )


def asks_memory(prompt: str) -> bool:
    """Whether recall is worth running for ``prompt``: not empty, not an assistant's own slash command."""
    return bool(prompt) and _SLASH_COMMAND.match(prompt) is None
