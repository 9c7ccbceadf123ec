"""What `engram hooks` changed in git and in assistants' settings, and the crontab `engram schedule` prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram_cli.render.console import note, out

if TYPE_CHECKING:
    from pathlib import Path

    from engram_cli.integrations.assistants import SettingsChange
    from engram_cli.integrations.git import GitHookChange
    from engram_cli.integrations.mcp import McpChange
    from engram_cli.integrations.schedule import Schedule


def git_hook(change: GitHookChange) -> None:
    hook, chained = change.hook, change.chained
    if change.action == "absent":
        out(f"no engram post-commit hook in {hook.parent}; nothing to do")
    elif change.action == "restored":
        out(f"removed engram's post-commit hook; the earlier hook is back as {hook}")
    elif change.action == "removed":
        out(f"removed engram's post-commit hook {hook}")
    else:
        out(f"{change.action} post-commit hook {hook}")
        if chained is not None:
            note(f"the hook that was there before is kept as {chained.name} and runs after engram's")


def settings(change: SettingsChange) -> None:
    where = change.path
    events = ", ".join(change.events)
    server = change.mcp
    if change.action == "absent":
        done = server is None or server.action in ("absent", "foreign")
        out(f"no engram hooks in {where}" + ("; nothing to do" if done else ""))
    elif change.action == "removed":
        out(f"removed engram's {events} hooks from {where}")
    else:
        out(f"{change.action} engram's {events} hooks in {where}")
    if change.backup is not None:
        note(f"the file as it was is saved as {change.backup}")
    if server is not None:
        mcp_server(server, saved=change.backup)
    if change.next_step and change.action not in ("removed", "absent"):
        note(change.next_step)


def mcp_server(change: McpChange, *, saved: Path | None = None) -> None:
    """Engram's MCP server entry, after the hooks (``saved``: a backup already named for the same file)."""
    where = f"{change.path} (project {change.project})" if change.project is not None else str(change.path)
    if change.action == "foreign":
        note(f"the MCP server named {change.server!r} in {where} is not engram's; engram left it as it is")
    elif change.action == "absent":
        out(f"no engram MCP server in {where}")
    elif change.action == "removed":
        out(f"removed engram's MCP server from {where}")
    else:
        out(f"{change.action} engram's MCP server in {where}")
    if change.backup is not None and change.backup != saved:
        note(f"the file as it was is saved as {change.backup}")
    if change.next_step and change.action in ("installed", "updated"):
        note(change.next_step)


def schedule(plan: Schedule) -> None:
    # Only crontab syntax on stdout, so `(crontab -l; engram schedule) | crontab -` works as is.
    out("# engram maintenance (from `engram schedule`)")
    for job in plan.jobs:
        out(f"# {job.name}: {job.why}")
        out(job.line)
    note("Nothing was installed. Paste these lines into `crontab -e`, or append them in one go with")
    note("  (crontab -l 2>/dev/null; engram schedule) | crontab -")
    note(f"Output (only changes and errors) goes to {plan.log}.")
    note("systemd or launchd instead of cron: run the same commands on the same calendar (a user .timer, or a")
    note("LaunchAgent with StartCalendarInterval); the commands need nothing from cron itself.")
    if not plan.log_dir_exists:
        note(f"{plan.log.parent} does not exist yet: create it first (mkdir -p), or cron cannot log there")
