"""The log of keyword row changes (``keyword_changes``): what lets a process's keyword scorer
(``store.keyword_scorer``) follow the writes of every other connection to the database."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram_cli.store.database import Database

LOG_TABLE = "keyword_changes"
# Changes kept in the log: a process that falls further behind reads every length again (0.2 s at
# 100,000 memories). Each change is a pk, a sequence number and a token: 21 bytes a row.
LOG_KEEP = 16_384
# The log is trimmed when a change's sequence number is a multiple of this.
TRIM_EVERY = 1_024


def log_change(db: Database, pk: int) -> None:
    """Record that memory ``pk``'s keyword row changed, inside the writer's transaction."""
    seq = int(db.scalar(f"INSERT INTO {LOG_TABLE} (memory_pk, token) VALUES (?, random()) RETURNING seq", (pk,)))
    if seq % TRIM_EVERY == 0:
        db.execute(f"DELETE FROM {LOG_TABLE} WHERE seq <= ?", (seq - LOG_KEEP,))
