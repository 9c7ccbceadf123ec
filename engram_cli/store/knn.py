"""What a KNN query keeps, and how the vector index is set up: light enough to import without numpy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engram_cli.config.settings import Store as _Defaults


@dataclass(frozen=True)
class IndexOptions:
    """Where the index files go (None: memory only) and when the approximate path takes over.

    ``build`` False: use an index file only when a usable one is already there (catching up with the
    change log, without rewriting it); otherwise search with sqlite-vec rather than read every vector to
    build one. For a process that must answer quickly (the per-prompt hook) while another builds it.
    """

    cache_dir: Path | None = None
    approx_min_rows: int = _Defaults().vector_approx_rows  # 0: never approximate
    rerank: int = _Defaults().vector_rerank
    enabled: bool = _Defaults().vector_index
    build: bool = True


@dataclass(frozen=True)
class Filter:
    """What a KNN query keeps: None means any."""

    namespaces: Sequence[str] | None = None
    statuses: Sequence[str] | None = None
    types: Sequence[str] | None = None
    agent: str | None = None

    def admits(self, namespace: str, status: str, mtype: str, agent: str) -> bool:
        return (
            (not self.namespaces or namespace in self.namespaces)
            and (not self.statuses or status in self.statuses)
            and (not self.types or mtype in self.types)
            and (self.agent is None or agent == self.agent)
        )
