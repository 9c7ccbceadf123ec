"""Importers of the logs other tools write, and the loader that turns them into memories.

Each source lives in its own module exposing ``IMPORTER`` (see :mod:`engram_cli.ingest.base`);
adding a tool means adding a module and one line below. Modules are imported only when used,
so `engram --help` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram_cli.ingest.base import Importer

# name -> module, in the order `engram ingest --list` shows them.
SOURCES: dict[str, str] = {
    "claude-code": "engram_cli.ingest.claude_code",
    "codex": "engram_cli.ingest.codex",
    "gemini-cli": "engram_cli.ingest.gemini",
    "aider": "engram_cli.ingest.aider",
    "cursor": "engram_cli.ingest.cursor",
    "cline": "engram_cli.ingest.cline",
    "roo-code": "engram_cli.ingest.roo_code",
    "opencode": "engram_cli.ingest.opencode",
    "continue": "engram_cli.ingest.continue_dev",
    "copilot-cli": "engram_cli.ingest.copilot_cli",
    "bash": "engram_cli.ingest.shell",
    "zsh": "engram_cli.ingest.shell",
    "fish": "engram_cli.ingest.shell",
    "notes": "engram_cli.ingest.notes",
    "jsonl": "engram_cli.ingest.records",
    "chatgpt": "engram_cli.ingest.chatgpt",
    "claude-ai": "engram_cli.ingest.claude_ai",
    "chat": "engram_cli.ingest.chat_jsonl",
}
# Sources read only from a path given on the command line (files a person downloads or writes on purpose):
# naming one without a path is a usage error that says so, not "found nothing".
GIVEN_PATH_ONLY = frozenset({"chatgpt", "claude-ai", "chat"})


def importer(name: str) -> Importer:
    """The importer called ``name`` (a module may define several: IMPORTERS = {name: importer})."""
    module = importlib.import_module(SOURCES[name])
    found = getattr(module, "IMPORTERS", None)
    if isinstance(found, dict):
        return found[name]  # type: ignore[no-any-return]
    return module.IMPORTER  # type: ignore[no-any-return]
