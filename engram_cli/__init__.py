"""engram: local-first long-term memory for developers and their AI agents."""

from __future__ import annotations

import os

# Nothing leaves the machine. onnxruntime's official wheels record usage and error
# events (with a persistent device id) under ~/.cache/Microsoft/DeveloperTools and
# upload them when they can, unless this is set before onnxruntime initialises.
# engram is imported before it ever imports onnxruntime, so this is early enough.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

from engram_cli._version import __version__

__all__ = ["Engram", "__version__"]

# Not typing.TYPE_CHECKING: importing typing (and re with it) would cost the per-prompt hook, which
# imports this package first, ~10 ms; mypy treats a variable of this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from engram_cli.api import Engram


def __getattr__(name: str) -> object:
    # Lazy, so that `engram --help` does not pay for numpy and apsw.
    if name == "Engram":
        from engram_cli.api import Engram

        return Engram
    raise AttributeError(name)
