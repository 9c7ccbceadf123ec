"""What `engram ingest --list` shows: every source, the files found in its default place, what is new in them."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_cli.ingest import SOURCES, files, importer
from engram_cli.ingest.report import describe
from engram_cli.lang import text as textmod
from engram_cli.store.db import Store

log = logging.getLogger(__name__)


@dataclass
class FileState:
    path: str
    state: str  # new | changed | unchanged | missing | skipped (not a regular file)
    size: int
    offset: int
    last_ingest: str | None


def _file_state(store: Store, path: Path) -> FileState:
    key = textmod.clean(str(path))
    if files.irregular(path) is not None:
        return FileState(key, "skipped", 0, 0, None)
    row = store.ingest.cursor(key)
    try:
        st = path.stat()
    except OSError:
        return FileState(key, "missing", 0, 0, None)
    if row is None:
        return FileState(key, "new", st.st_size, 0, None)
    same = row.inode == st.st_ino and row.size == st.st_size and row.mtime_ns == st.st_mtime_ns
    return FileState(key, "unchanged" if same else "changed", st.st_size, row.offset, row.updated_at)


def sources(store: Store, *, env: Mapping[str, str] | None = None, home: Path | None = None) -> list[dict[str, Any]]:
    """What `engram ingest --list` shows: every source found, its files, how much is new, the cursors."""
    env = dict(os.environ if env is None else env)
    home = home or Path.home()
    out: list[dict[str, Any]] = []
    for name in dict.fromkeys(SOURCES):
        imp = importer(name)
        error = None
        try:
            states = [_file_state(store, path) for path in sorted(set(imp.locate(env, home)))]
        except Exception as exc:  # one source that cannot be listed still leaves the others to show
            log.debug("listing the files of %s failed", name, exc_info=True)
            states, error = [], f"its files could not be listed ({describe(exc)})"
        sessions, items = store.ingest.counts(name)
        out.append(
            {
                "source": name,
                "agent": imp.agent,
                "description": imp.description,
                "files": len(states),
                "new": sum(1 for s in states if s.state == "new"),
                "changed": sum(1 for s in states if s.state == "changed"),
                "skipped": sum(1 for s in states if s.state == "skipped"),
                "pending_bytes": sum(max(0, s.size - s.offset) for s in states if s.state != "unchanged"),
                "sessions_seen": sessions,
                "memories": items,
                "last_ingest": max((s.last_ingest for s in states if s.last_ingest), default=None),
                "paths": [s.__dict__ for s in states],
                "error": error,
            }
        )
    return out
