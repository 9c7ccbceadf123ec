"""The one way engram runs a program the user configured (``extract.command``, ``summarizer.command``).

The program gets a JSON document on stdin and answers on stdout. It is a local program the
person chose, run without a shell (the command line is split the way a shell would split it),
under a time limit. Anything that goes wrong is an :class:`~engram_cli.errors.InvalidInput`
naming the setting, so the caller can report it and go on.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

from engram_cli.errors import InvalidInput
from engram_cli.lang import redact

# Characters of the program's last stderr line quoted in an error.
STDERR_QUOTE = 200


def run_json(command: str, payload: Any, *, setting: str, timeout: float) -> str:
    """Run ``command`` with ``payload`` as JSON on stdin; what it printed on stdout, whole.

    ``setting`` is the name of the setting the command came from, for the error messages.
    The output is not cut here: whoever shortens it redacts it first (a secret cut in half
    no longer looks like one). The quoted stderr line is redacted before it is cut.
    """
    try:
        done = subprocess.run(
            shlex.split(command), input=json.dumps(payload, ensure_ascii=False), capture_output=True, text=True,
            encoding="utf-8", errors="replace", timeout=timeout, check=False,
        )  # fmt: skip
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{setting} {command!r} cannot run: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise InvalidInput(f"{setting} timed out after {timeout:.0f} s") from exc
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        said = redact.redact(tail[0])[0][:STDERR_QUOTE]
        raise InvalidInput(f"{setting} exited with {done.returncode}: {said}")
    return done.stdout
