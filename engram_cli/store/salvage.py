"""Reading what a damaged table still yields.

A table is read in key order (its rowid, or the leading integer column of a WITHOUT ROWID
primary key). When a read fails, the rows before the failure are kept and the rest of the
range is cut in two, again and again, until only keys on unreadable pages are left out:
one bad page costs its own rows, not the table. A seek straight to a key only touches the
pages on the way to it, which is why a range beyond a bad page still reads.

When the largest key cannot be read (the rightmost pages are damaged), the end of the table
is found by probing further and further ahead instead of bisecting an unbounded range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engram_cli.errors import DatabaseDamaged

if TYPE_CHECKING:
    from engram_cli.store.database import Database

MAX_KEY = 2**63 - 1
# Where reading starts when the smallest key cannot be read: engram's keys are SQLite's own
# rowids and ids, which start at 1.
FIRST_KEY = 1

Row = tuple[Any, ...]


@dataclass
class Salvaged:
    """What reading one table gave: rows read, rows it held (when any count of them reads)."""

    table: str
    read: int = 0
    expected: int | None = None
    # Key ranges that could not be read, inclusive; an end of None means "to the end of the table".
    lost_ranges: list[tuple[int, int | None]] = field(default_factory=list)

    @property
    def lost(self) -> int | None:
        return None if self.expected is None else max(0, self.expected - self.read)

    def _lose(self, first: int, last: int | None) -> None:
        if self.lost_ranges:
            prev_first, prev_last = self.lost_ranges[-1]
            if prev_last is not None and prev_last + 1 == first:
                self.lost_ranges[-1] = (prev_first, last)
                return
        self.lost_ranges.append((first, last))


def columns_of(store: Database, table: str) -> list[str]:
    """The table's columns, read from the schema (empty when the table does not exist)."""
    return [str(r[1]) for r in store.rows("SELECT * FROM pragma_table_info(?)", (table,))]


def _indexes(store: Database, table: str) -> list[str]:
    # A partial index holds only some rows: useless for counting them.
    return [str(r[0]) for r in store.rows("SELECT name FROM pragma_index_list(?) WHERE partial = 0", (table,))]


class _Reader:
    def __init__(
        self, store: Database, table: str, key: str, columns: Sequence[str], sink: Callable[[Row], None]
    ) -> None:
        self.store = store
        self.table = table
        self.key = key
        self.sink = sink
        self.result = Salvaged(table)
        quoted = f'"{table}"'
        selected = ", ".join(f'"{c}"' for c in columns)
        self.range_sql = (
            f"SELECT {key}, {selected} FROM {quoted} NOT INDEXED WHERE {key} >= ? AND {key} <= ? ORDER BY {key}"
        )
        # An equality seek never steps onto a neighbouring page.
        self.key_sql = f"SELECT {key}, {selected} FROM {quoted} NOT INDEXED WHERE {key} = ? ORDER BY {key}"
        self.probe_sql = f"SELECT {key} FROM {quoted} NOT INDEXED WHERE {key} >= ? ORDER BY {key} LIMIT 1"

    def _try(self, sql: str, params: Sequence[Any] = ()) -> list[Row] | None:
        try:
            return [tuple(r) for r in self.store.execute(sql, params)]
        except DatabaseDamaged:
            return None

    def _first(self, sql: str) -> int | None:
        rows = self._try(sql)
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    def bounds(self) -> tuple[int | None, int | None]:
        """The smallest and largest key, from the table's edges or, failing that, any index that reads."""
        quoted = f'"{self.table}"'
        low = self._first(f"SELECT min({self.key}) FROM {quoted} NOT INDEXED")
        high = self._first(f"SELECT max({self.key}) FROM {quoted} NOT INDEXED")
        for index in _indexes(self.store, self.table) if low is None or high is None else []:
            rows = self._try(f'SELECT min({self.key}), max({self.key}) FROM {quoted} INDEXED BY "{index}"')
            if rows and rows[0][0] is not None:
                low = int(rows[0][0]) if low is None else low
                high = int(rows[0][1]) if high is None else high
                break
        return low, high

    def count(self) -> int | None:
        """How many rows the table holds: from the table, or else from any index that still reads."""
        quoted = f'"{self.table}"'
        # count(*) picks the smallest index whatever INDEXED BY says; count(key) scans the one named.
        queries = [f"SELECT count(*) FROM {quoted}"]
        queries += [
            f'SELECT count({self.key}) FROM {quoted} INDEXED BY "{i}"' for i in _indexes(self.store, self.table)
        ]
        queries.append(f"SELECT count({self.key}) FROM {quoted} NOT INDEXED")
        for sql in queries:
            rows = self._try(sql)
            if rows:
                return int(rows[0][0])
        return None

    def forward(self, first: int, last: int) -> int | None:
        """Read keys ``first``..``last`` in order; the first key not read when a page failed, else None."""
        position = first
        sql, params = (self.key_sql, (first,)) if first == last else (self.range_sql, (first, last))
        try:
            for row in self.store.execute(sql, params):
                self.sink(tuple(row[1:]))
                self.result.read += 1
                position = int(row[0]) + 1
        except DatabaseDamaged:
            return position if position <= last else None
        return None

    def bisect(self, first: int, last: int) -> None:
        pending = [(first, last)]
        while pending:
            low, high = pending.pop()
            stop = self.forward(low, high)
            if stop is None:
                continue
            if low == high:
                self.result._lose(low, low)
            elif stop == high:
                pending.append((high, high))  # the step onto it failed; a seek may not
            else:
                middle = stop + (high - stop) // 2
                pending.extend([(middle + 1, high), (stop, middle)])  # lower half first

    def resume_after(self, stop: int) -> int | None:
        """A key beyond ``stop`` from which a seek reads again, or None when none does."""
        step = 1
        while stop + step <= MAX_KEY:
            if self._try(self.probe_sql, (stop + step,)) is not None:
                return stop + step
            step *= 2
        return None

    def tail(self, first: int) -> None:
        position = first
        while True:
            stop = self.forward(position, MAX_KEY)
            if stop is None:
                return
            resume = self.resume_after(stop)
            if resume is None:
                self.result._lose(stop, None)
                return
            self.bisect(stop, resume - 1)  # what the probes stepped over
            position = resume


def salvage(
    store: Database, table: str, columns: Sequence[str], sink: Callable[[Row], None], *, key: str = "rowid"
) -> Salvaged:
    """Hand every row of ``table`` that can still be read to ``sink`` (``columns``, in key order).

    ``key`` is the rowid or, for a WITHOUT ROWID table, the leading integer column of its
    primary key. Rows of one key that straddle a bad page may be kept in part.
    """
    reader = _Reader(store, table, key, columns, sink)
    reader.result.expected = reader.count()
    low, high = reader.bounds()
    if low is None and high is None and reader.result.expected == 0:
        return reader.result
    if high is None:
        reader.tail(FIRST_KEY if low is None else low)
    else:
        reader.bisect(min(FIRST_KEY, high) if low is None else low, high)
    return reader.result
