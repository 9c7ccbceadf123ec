"""Maintenance: what audit, repair, recover and doctor ask of the file as a whole.

Integrity checks, the WAL checkpoint, table introspection, and reading and rewriting the
text columns of any table by name (the secrets check names them; ``audit.SCANNED``).
Table and column names come from engram's own code, never from input. Nothing here commits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from engram_cli.errors import DatabaseDamaged
from engram_cli.store.migrations import MIGRATIONS_TABLE
from engram_cli.store.sql import chunks, marks

if TYPE_CHECKING:
    from engram_cli.store.database import Database

# Tables whose rows belong to one memory, and how they name it.
_BY_MEMORY_PK = ("tags", "sources")


def _names(columns: Sequence[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(f'{prefix}"{c}"' for c in columns)


def _namespace_in(namespaces: Sequence[str] | None, alias: str) -> tuple[str, list[Any]]:
    if namespaces is None:
        return "1", []
    return f"{alias}.namespace IN ({marks(namespaces)})", list(namespaces)


class Maintenance:
    def __init__(self, store: Database) -> None:
        self.store = store

    # -- the file --------------------------------------------------------------------------

    def integrity_problems(self, quick: bool = False) -> list[str]:
        """What ``PRAGMA integrity_check`` (or ``quick_check``) finds; empty when the file is sound.

        On a damaged file SQLite reports what it found row by row and then fails the statement;
        both the rows and that failure are returned.
        """
        problems: list[str] = []
        try:
            for (message,) in self.store.execute(f"PRAGMA {'quick_check' if quick else 'integrity_check'}"):
                if str(message) != "ok":
                    # "*** in database main ***" heads the list; the lines after it say what is wrong.
                    problems.extend(line for line in str(message).splitlines() if line.strip() and line[:3] != "***")
        except DatabaseDamaged as exc:
            problems.append(f"the check stopped: {exc.message}")
        return problems

    def foreign_key_problems(self) -> list[tuple[str, int | None, str]]:
        """(table, rowid, parent table) of every row that points at a missing row (raises DatabaseDamaged).

        The rowid is None for a row of a WITHOUT ROWID table (tags).
        """
        rows = self.store.rows("PRAGMA foreign_key_check")
        return [(str(t), None if rowid is None else int(rowid), str(parent)) for t, rowid, parent, _ in rows]

    def defer_foreign_keys(self) -> None:
        """Check foreign keys at COMMIT instead of at each statement, for this transaction."""
        self.store.execute("PRAGMA defer_foreign_keys = ON")

    def checkpoint(self) -> bool:
        """Copy the WAL into the database file and empty it; False when another connection kept it busy."""
        busy, _, _ = self.store.one("PRAGMA wal_checkpoint(TRUNCATE)") or (0, 0, 0)
        return not busy

    def newest_migration(self) -> int | None:
        """The highest migration recorded in the file (raises when the record cannot be read)."""
        value = self.store.scalar(f"SELECT max(id) FROM {MIGRATIONS_TABLE}")
        return None if value is None else int(value)

    def set_migration_applied_at(self, migration_id: int | None, at: str | None) -> None:
        self.store.execute(f"UPDATE {MIGRATIONS_TABLE} SET applied_at = ? WHERE id = ?", (at, migration_id))

    # -- tables by name --------------------------------------------------------------------

    def table_exists(self, name: str) -> bool:
        return self.store.one("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)) is not None

    def key_columns(self, table: str) -> list[str]:
        """The columns of a table's primary key, in key order."""
        info = self.store.rows(f'PRAGMA table_info("{table}")')
        return [str(r[1]) for r in sorted(info, key=lambda r: r[5]) if r[5]]

    def insert_row(
        self,
        table: str,
        columns: Sequence[str],
        row: Sequence[Any],
        *,
        on_conflict: Literal["abort", "ignore", "replace"] = "abort",
    ) -> None:
        """Insert one row as it is, its columns named (a copy from another database)."""
        verb = {"abort": "INSERT", "ignore": "INSERT OR IGNORE", "replace": "INSERT OR REPLACE"}[on_conflict]
        self.store.execute(f'{verb} INTO "{table}" ({_names(columns)}) VALUES ({marks(columns)})', row)

    def memory_ids_by_index(self) -> set[str] | None:
        """The ids of the memories, read through the first index of them that still reads; None if none does.

        On a damaged file an index can hold ids whose rows are lost.
        """
        for (index,) in self.store.rows("SELECT name FROM pragma_index_list('memories') WHERE partial = 0"):
            try:
                return {str(r[0]) for r in self.store.rows(f'SELECT id FROM memories INDEXED BY "{index}"')}
            except DatabaseDamaged:
                continue
        return None

    # -- text columns ----------------------------------------------------------------------

    def memory_text(
        self, table: str, columns: Sequence[str], namespaces: Sequence[str] | None
    ) -> list[tuple[Any, ...]]:
        """(memory id, *columns) of every row of memories, tags or sources whose memory is in ``namespaces``."""
        if table == "memories":
            clause, params = _namespace_in(namespaces, "x")
            sql = f"SELECT x.id, {_names(columns, 'x')} FROM memories x WHERE {clause}"
        elif table in _BY_MEMORY_PK:
            clause, params = _namespace_in(namespaces, "m")
            joined = f'"{table}" x JOIN memories m ON m.pk = x.memory_pk'
            sql = f"SELECT m.id, {_names(columns, 'x')} FROM {joined} WHERE {clause}"
        else:
            raise ValueError(f"{table} is not a table of memories' rows")
        return self.store.rows(sql, params)

    def event_text(self, columns: Sequence[str], namespaces: Sequence[str] | None) -> list[tuple[Any, ...]]:
        """(memory id, event pk, *columns) of the events of memories in ``namespaces`` (all events, purged
        memories' included, when there are no namespaces)."""
        sql = f"SELECT x.memory_id, x.pk, {_names(columns, 'x')} FROM events x"
        params: list[Any] = []
        if namespaces is not None:
            clause, params = _namespace_in(namespaces, "m")
            sql += f" WHERE x.memory_id IN (SELECT m.id FROM memories m WHERE {clause})"
        return self.store.rows(sql, params)

    def table_text(self, table: str, columns: Sequence[str], namespaces: Sequence[str] | None) -> list[tuple[Any, ...]]:
        """(rowid, *columns) of every row of ``table`` (of ``namespaces`` only when given: it has that column)."""
        clause, params = _namespace_in(namespaces, "x")
        return self.store.rows(f'SELECT x.rowid, {_names(columns, "x")} FROM "{table}" x WHERE {clause}', params)

    def text_rows(
        self, table: str, columns: Sequence[str], *, by: str, keys: Sequence[Any], key: str = "rowid"
    ) -> list[list[Any]]:
        """[key, *columns] of the rows of ``table`` whose column ``by`` is one of ``keys``."""
        out: list[list[Any]] = []
        for chunk in chunks(keys):
            out.extend(
                list(r)
                for r in self.store.rows(
                    f'SELECT {key}, {_names(columns)} FROM "{table}" WHERE {by} IN ({marks(chunk)})', chunk
                )
            )
        return out

    def rewrite(self, table: str, key: str, value: Any, changes: Mapping[str, Any], *, replace: bool = False) -> None:
        """Set columns of the row whose ``key`` column is ``value``; with ``replace``, a row this one now
        collides with (on a unique key) gives way."""
        sets = ", ".join(f'"{column}" = ?' for column in changes)
        verb = "UPDATE OR REPLACE" if replace else "UPDATE"
        self.store.execute(f'{verb} "{table}" SET {sets} WHERE {key} = ?', (*changes.values(), value))
