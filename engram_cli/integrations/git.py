"""`engram hooks install git`: a post-commit hook that starts an incremental ingest in the background.

The hook must never cost the person committing anything: it returns at once, always exits 0
for its own part, and hands over to the hook that was there before (renamed beside it) with
that hook's own arguments and exit status. Uninstall puts the earlier hook back by renaming
it, so its bytes, mode and symlink-ness come back untouched.

Our script carries a digest of itself in its marker line. A hook whose marker matches its body
is ours and may be replaced or removed; one whose body no longer matches was edited by someone,
and engram leaves it alone and says so.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engram_cli.errors import IntegrationError
from engram_cli.integrations import MARKER, shell_join, write_atomic

log = logging.getLogger(__name__)

HOOK = "post-commit"
CHAINED = f"{HOOK}.engram-chained"
MAX_SECONDS = 60
_MARKER_LINE = f"# {MARKER} {HOOK} hook sha256:"

_SCRIPT = """\
#!/bin/sh
{marker}
# Installed by `engram hooks install git`; `engram hooks uninstall git` puts back what was here before.
# It starts an incremental `engram ingest` in the background and never fails or slows the commit:
# one run at a time per repository, none while a rebase or cherry-pick replays commits.
# A hook that was here before is kept as {chained} and runs next, with its own exit status.
git_dir=$(git rev-parse --git-dir 2>/dev/null) || git_dir=
if [ -n "$git_dir" ] && [ ! -e "$git_dir/rebase-merge" ] && [ ! -e "$git_dir/rebase-apply" ] \\
    && [ ! -e "$git_dir/sequencer" ]; then
    lock="$git_dir/engram-ingest.lock"
    # A lock older than ten minutes outlived its run (ingest stops after about a minute).
    find "$lock" -prune -mmin +10 -exec rmdir {{}} \\; 2>/dev/null
    if [ ! -x {program} ]; then
        # engram records its own failures in this log; that it is gone, only this script can say.
        mkdir -p {log_dir} 2>/dev/null
        printf '%s\tpost-commit\t127\t%s is missing: reinstall engram, then run engram hooks install git\n' \
            "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)" {program} >> {log} 2>/dev/null
    elif mkdir "$lock" 2>/dev/null; then
        (
            trap '' HUP
            # This commit's GIT_DIR, index and the like must not leak into ingest or what it runs.
            unset $(git rev-parse --local-env-vars)
            nohup {command} ingest --quiet --max-seconds {max_seconds}
            rmdir "$lock"
        ) </dev/null >/dev/null 2>&1 &
    fi
fi
chained="$(dirname "$0")/{chained}"
if [ -x "$chained" ]; then
    exec "$chained" "$@"
fi
exit 0
"""


@dataclass
class GitHookChange:
    """What `engram hooks install|uninstall git` did."""

    action: str  # installed, updated, unchanged, removed, restored, absent
    hook: Path
    chained: Path | None = None  # the earlier hook, kept beside ours (install) or put back (uninstall)


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def script(engram: Sequence[str], log: Path) -> str:
    """The post-commit script for the engram command ``engram``; failures are noted in ``log``."""
    body = _SCRIPT.format(
        marker="{marker}", command=shell_join([*engram, "--hook", HOOK]), program=shell_join(engram[:1]),
        log=shell_join([str(log)]), log_dir=shell_join([str(log.parent)]), max_seconds=MAX_SECONDS, chained=CHAINED,
    )  # fmt: skip
    return body.replace("{marker}", _MARKER_LINE + _digest(body), 1)


def ingest_line(engram: Sequence[str]) -> str:
    """The one shell line that starts engram's background ingest, for hook managers that own the hook."""
    command = shell_join([*engram, "--hook", HOOK, "ingest", "--quiet", "--max-seconds", str(MAX_SECONDS)])
    return f"nohup {command} </dev/null >/dev/null 2>&1 &"


def _ownership(text: str) -> str:
    """'ours' (an intact engram hook), 'edited' (engram's marker, changed body) or 'foreign'."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines[:5]):
        if line.startswith(_MARKER_LINE):
            recorded = line[len(_MARKER_LINE) :].strip()
            body = "".join([*lines[:i], "{marker}\n", *lines[i + 1 :]])
            return "ours" if recorded == _digest(body) else "edited"
    return "foreign"


def _git(args: Sequence[str], cwd: Path) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=30)
    except FileNotFoundError as exc:
        raise IntegrationError(
            "git is not installed or not on PATH", hint="install git, or run engram where git is on PATH"
        ) from exc
    except NotADirectoryError as exc:
        raise IntegrationError(f"{cwd} is not a directory", hint="pass the repository with --repo PATH") from exc
    if done.returncode != 0:
        raise IntegrationError(
            f"{cwd} is not inside a git working tree ({done.stderr.strip() or f'git exited {done.returncode}'})",
            hint="run this inside the repository, or pass it with --repo PATH",
        )
    return done.stdout.strip()


def hooks_dir(repo: Path | None = None) -> Path:
    """The directory git runs hooks from: honours core.hooksPath and linked worktrees."""
    start = (repo or Path.cwd()).expanduser()
    if not start.exists():
        raise IntegrationError(f"{start} does not exist", hint="pass the repository with --repo PATH")
    top = Path(_git(["rev-parse", "--show-toplevel"], start))
    # A relative core.hooksPath is relative to where hooks run: the top of the working tree.
    return (top / _git(["rev-parse", "--git-path", "hooks"], top)).resolve()


def _edited(hook: Path) -> IntegrationError:
    return IntegrationError(
        f"{hook} was installed by engram but has been edited since; engram leaves it as it is",
        hint=f"move your changes into their own script, delete {hook.name} (and put {CHAINED} back as "
        f"{HOOK} if you want the earlier hook), then run `engram hooks install git` again",
    )


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:  # a dangling symlink: someone else's, whatever it pointed to
        return ""
    except OSError as exc:
        raise IntegrationError(f"cannot read {path}: {exc.strerror}") from exc


def install(engram: Sequence[str], repo: Path | None = None, *, log_file: Path | None = None) -> GitHookChange:
    """Install (or refresh) engram's post-commit hook, chaining whatever hook was there.

    ``log_file`` is where the script notes that engram has gone (default: hooks.log in engram's data directory).
    """
    directory = hooks_dir(repo)
    hook, chained = directory / HOOK, directory / CHAINED
    if log_file is None:
        from engram_cli.config import Paths
        from engram_cli.integrations.hooklog import LOG_FILE

        log_file = Paths.resolve().data_dir / LOG_FILE
    wanted = script(engram, log_file)
    action = "installed"
    if os.path.lexists(hook):
        text = _read(hook)
        owner = _ownership(text)
        if owner == "edited":
            raise _edited(hook)
        if owner == "ours":
            if text == wanted and os.access(hook, os.X_OK):
                return GitHookChange("unchanged", hook, chained if os.path.lexists(chained) else None)
            action = "updated"  # another engram path or an older script: same place, same chain
        elif "husky" in text or ".husky" in directory.parts:
            # Husky's hooks find their own name (and v9 its helper) through $0, which a chained hook no longer has.
            raise IntegrationError(
                f"{hook} belongs to husky, which picks the hook to run by its own file name; engram left it as it is",
                hint=f"add this line to husky's post-commit script instead: {ingest_line(engram)}",
            )
        elif os.path.lexists(chained):
            raise IntegrationError(
                f"{hook} is not engram's, and {chained.name} (an earlier hook engram kept) is also there",
                hint=f"decide which one to keep: remove or merge {chained.name} by hand, then run this again",
            )
        else:
            # A rename keeps the earlier hook's bytes, mode and symlink-ness for uninstall.
            os.replace(hook, chained)
            log.info("kept the existing hook as %s", chained)
    write_atomic(hook, wanted.encode("utf-8"), mode=0o755)
    return GitHookChange(action, hook, chained if os.path.lexists(chained) else None)


def uninstall(repo: Path | None = None) -> GitHookChange:
    """Remove engram's post-commit hook and put back the hook it chained, if any."""
    directory = hooks_dir(repo)
    hook, chained = directory / HOOK, directory / CHAINED
    if os.path.lexists(hook):
        owner = _ownership(_read(hook))
        if owner == "edited":
            raise _edited(hook)
        if owner == "foreign":
            kept = f"; {chained.name} is an earlier hook engram kept" if os.path.lexists(chained) else ""
            raise IntegrationError(
                f"{hook} is not engram's hook; left as it is{kept}",
                hint="nothing to undo there" if not kept else f"put {chained.name} back by hand if you want it",
            )
    if os.path.lexists(chained):
        os.replace(chained, hook)
        return GitHookChange("restored", hook, chained)
    if os.path.lexists(hook):
        hook.unlink()
        return GitHookChange("removed", hook)
    return GitHookChange("absent", hook)
