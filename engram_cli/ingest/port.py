"""What the ingest loader may use of an open memory store, handed to it by the facade.

The loader sits below :class:`engram_cli.api.Engram` and never imports it: ``Engram.ingest``
builds this port from its store and settings, and the loader works with nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engram_cli.memory import remember
from engram_cli.memory.evidence import Bounds
from engram_cli.store.db import Store


@dataclass(frozen=True)
class IngestPort:
    store: Store
    # Called once, when the first file has something to write: it loads the embedding model.
    writer: Callable[[], remember.Writer]
    # Loads the embedding model ahead; the loader calls it in a thread of its own as soon as a file has
    # something new, so that the model loads while the files are read. Touches no database.
    warm: Callable[[], None]
    # A memory's fields (as `engram add` takes them) checked and completed; raises InvalidInput.
    prepare: Callable[[Mapping[str, Any]], remember.NewMemory]
    namespace: str  # where memories go when their project names none
    extract_command: str  # empty: the built-in rules
    extract_timeout: float  # seconds extract.command may take per session
    contact: bool  # redact e-mail addresses and phone numbers too
    keep_evidence: bool  # keep the sessions' substantive turns as evidence
    evidence_bounds: Bounds  # how much evidence a namespace keeps
