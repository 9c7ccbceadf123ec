"""Roo Code: a fork of Cline that keeps the same task directories under its own extension id.

Everything about the format (API history, XML or native tool calls, noise, cursors) is Cline's and
lives in :mod:`engram_cli.ingest.cline`; Roo adds ``history_item.json`` (``task``, ``workspace``) in
each task directory, which that module reads too. Roo has no ``~/.cline`` data directory.
"""

from __future__ import annotations

from engram_cli.ingest.base import Importer
from engram_cli.ingest.cline import ROO_EXTENSION, TaskImporter

IMPORTER: Importer = TaskImporter(
    name="roo-code",
    agent="roo-code",
    description="Roo Code tasks (VS Code globalStorage rooveterinaryinc.roo-cline)",
    extension=ROO_EXTENSION,
)
