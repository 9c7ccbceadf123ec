"""`engram schedule`: crontab lines for the maintenance engram wants, ready to paste.

Nothing is installed. Cron starts jobs with a bare environment and PATH, so every line names
the engram executable by its absolute path, repeats the variables that decide which database
and which logs it works on, and appends its output (quiet unless something changed or failed)
to a log file.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from engram_cli.config import ENV_OVERRIDES

LOG_FILE = "cron.log"

# Directories a cron job would otherwise lose: where engram's data and models are, and where
# the assistants whose logs ingest reads keep theirs (their documented overrides).
CARRIED_PATHS = ("ENGRAM_HOME", "ENGRAM_DB", "ENGRAM_MODELS_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME")
# Settings given by environment variable, which the shell the person types in would pass on.
CARRIED_SETTINGS = tuple(ENV_OVERRIDES)


@dataclass(frozen=True)
class Job:
    name: str
    when: str  # the five cron fields
    args: tuple[str, ...]
    why: str


# Ingest often and briefly (each run stops between files after five minutes; the next goes on).
# Decay is cheap: daily. Compact compares every pair within a namespace, so its cost grows with
# the square of the largest one, and it leaves episodes younger than a day alone anyway: weekly.
# Odd minutes keep clear of the top-of-the-hour crowd.
JOBS = (
    Job("ingest", "*/30 * * * *", ("ingest", "--quiet", "--max-seconds", "300"),
        "every 30 minutes: harvest new assistant and shell logs, at most about 5 minutes a run"),
    Job("decay", "17 3 * * *", ("decay",), "daily at 03:17: recompute decay scores, archive what has faded"),
    Job("compact", "47 3 * * 0", ("compact",),
        "Sundays at 03:47: consolidate episodes into facts, fold near duplicates"),
)  # fmt: skip


@dataclass
class ScheduledJob:
    name: str
    when: str
    command: list[str]
    why: str
    line: str


@dataclass
class Schedule:
    json_keys: ClassVar[tuple[str, ...]] = ("log", "env", "jobs")  # where the output goes, before what runs

    jobs: list[ScheduledJob]
    log: Path
    env: dict[str, str]
    log_dir_exists: bool = True  # when not, cron cannot append to the log (said on the terminal, not in JSON)


def _cron_escape(text: str) -> str:
    # An unescaped % in a crontab command ends it and feeds the rest to stdin.
    return text.replace("%", "\\%")


def plan(engram: Sequence[str], log: Path, env: Mapping[str, str]) -> Schedule:
    """The crontab entries for this engram, logging to ``log``, carrying the relevant variables of ``env``."""
    carried = {name: os.path.abspath(os.path.expanduser(env[name])) for name in CARRIED_PATHS if env.get(name)}
    carried.update({name: env[name] for name in CARRIED_SETTINGS if env.get(name)})
    prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in carried.items())
    jobs = []
    for job in JOBS:
        command = [*engram, *job.args]
        line = f"{job.when} {_cron_escape(f'{prefix}{shlex.join(command)} >> {shlex.quote(str(log))} 2>&1')}"
        jobs.append(ScheduledJob(job.name, job.when, command, job.why, line))
    return Schedule(jobs, log, carried, log_dir_exists=log.parent.is_dir())
