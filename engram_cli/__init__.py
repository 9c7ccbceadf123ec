"""engram: local-first long-term memory for developers and their AI agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Engram", "__version__"]

if TYPE_CHECKING:
    from engram_cli.api import Engram


def __getattr__(name: str) -> Any:
    # Lazy, so that `engram --help` does not pay for numpy and apsw.
    if name == "Engram":
        from engram_cli.api import Engram

        return Engram
    raise AttributeError(name)
