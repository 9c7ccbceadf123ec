"""What engram reads of FTS5's own records: sizes are SQLite varints, and row 1 of a table's ``_data``
shadow table (the averages record) holds its row count and its total length in tokens, which bm25() reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram_cli.store.database import Database

AVERAGES_ROWID = 1


def varint(data: bytes, at: int = 0) -> tuple[int, int]:
    """SQLite's variable-length integer at ``data[at]`` (as FTS5 stores sizes): value, next offset."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        if byte < 0x80:
            return (value << 7) | byte, at + i + 1
        value = (value << 7) | (byte & 0x7F)
    return (value << 8) | data[at + 8], at + 9


def fts5_totals(db: Database, table: str) -> tuple[int, int]:
    """The FTS5 ``table``'s row count and total length in tokens (0, 0 before its first row)."""
    block = db.scalar(f"SELECT block FROM {table}_data WHERE id = ?", (AVERAGES_ROWID,))
    if not block:
        return 0, 0
    rows, at = varint(block)
    tokens, _ = varint(block, at)
    return rows, tokens
