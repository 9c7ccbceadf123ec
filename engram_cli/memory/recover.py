"""recover: copy what a damaged database still yields into a new one.

The damaged file is opened read-only and never written (``connect_read_only``). Every table is
read with :mod:`engram_cli.store.salvage`, so a bad page loses its own rows and no more. The
new database is built under a temporary name beside OUT and takes OUT's name only when it is
complete and passes SQLite's integrity check; an existing OUT is never overwritten.

What cannot be copied is rebuilt: the keyword index from the recovered rows, and vectors
that no longer read from their memory's text. Tags and sources of a lost memory are left out
(they would belong to nothing), and links to a lost memory (superseded_by, consolidated_into)
are cleared; the report counts both.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import apsw
import numpy as np

from engram_cli.errors import DatabaseDamaged, InvalidInput, ModelError, StoreError
from engram_cli.memory import records
from engram_cli.memory.model import Filters
from engram_cli.serialize import to_json
from engram_cli.store.db import Store, connect, connect_read_only, migrate
from engram_cli.store.memories import MemoryRow
from engram_cli.store.migrations import MIGRATIONS, MIGRATIONS_TABLE
from engram_cli.store.salvage import Row, Salvaged, columns_of, salvage
from engram_cli.store.vectors import table_name
from engram_cli.timeutil import now as utcnow

log = logging.getLogger(__name__)

EmbedFn = Callable[[Sequence[str]], np.ndarray]
Embedder = Callable[[str], tuple[EmbedFn, int]]  # model id -> (embed passages, dimension)

# Parents before children; the key each table is read by (a WITHOUT ROWID table has no rowid).
TABLES: list[tuple[str, str]] = [
    (MIGRATIONS_TABLE, "rowid"),
    ("settings", "rowid"),
    ("embedding_models", "rowid"),
    ("memories", "rowid"),
    ("tags", "memory_pk"),
    ("sources", "rowid"),
    ("events", "rowid"),
    ("ingest_cursors", "rowid"),
    ("ingest_sessions", "rowid"),
    ("ingest_items", "rowid"),
]
BATCH = 500  # rows per transaction while vectors and keyword rows are written
EMBED_BATCH = 32
UNIT_TOLERANCE = 1e-3


@dataclass
class TableResult:
    """One table: rows copied, rows that could not be read (None when not even a count reads)."""

    table: str
    read: int = 0
    lost: int | None = 0
    dropped: int = 0  # read, but left out: the memory they belong to was lost
    rejected: int = 0  # read, but their values break the schema (a damaged cell that still parsed)
    reembedded: int = 0  # vector tables: vectors made again from the memory's text
    lost_ranges: list[tuple[int, int | None]] = field(default_factory=list)


@dataclass
class RecoverReport:
    json_keys: ClassVar[tuple[str, ...]] = (
        "source", "output", "tables", "keyword_rows", "links_cleared", "lost_memory_ids", "side_files", "complete",
    )  # fmt: skip

    source: str
    output: str
    tables: list[TableResult]
    keyword_rows: int = 0
    links_cleared: int = 0
    # Memories whose row was lost, when an index of memories still names them.
    lost_memory_ids: list[str] | None = None
    # The damaged database's -wal and -shm: they go wherever the damaged file goes.
    side_files: list[str] = field(default_factory=list)

    def table(self, name: str) -> TableResult:
        return next(t for t in self.tables if t.table == name)

    @property
    def complete(self) -> bool:
        """Every row came back (vectors that did not were made again)."""
        return all(t.lost == t.reembedded and not t.dropped and not t.rejected for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, as `recover --json` prints it."""
        data: dict[str, Any] = to_json(self)
        return data


def default_output(source: Path, at: datetime | None = None) -> Path:
    """``<db>.recovered-<UTC timestamp>.db`` beside the damaged database."""
    stamp = (at or utcnow()).strftime("%Y%m%dT%H%M%SZ")
    return source.with_name(f"{source.name}.recovered-{stamp}.db")


def _db_files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _remove(path: Path) -> None:
    for file in _db_files(path):
        file.unlink(missing_ok=True)


def _check_output(source: Path, output: Path) -> None:
    if output.exists() and output.resolve() == source.resolve():
        raise InvalidInput(f"{output} is the damaged database itself", hint="name a new file to recover into")
    if output.exists():
        raise InvalidInput(
            f"{output} already exists", hint="recover never overwrites a file: name another one, or move that one away"
        )
    if not output.parent.is_dir():
        raise StoreError(f"the directory {output.parent} does not exist", hint="create it, or name another OUT")
    if not os.access(output.parent, os.W_OK | os.X_OK):
        raise StoreError(
            f"cannot write {output}: its directory is not writable",
            hint="name an OUT in a writable directory: engram recover /some/where/recovered.db",
        )


def _open_source(source: Path) -> Store:
    try:
        return connect_read_only(source)
    except DatabaseDamaged as exc:
        raise DatabaseDamaged(
            f"nothing in {source} can be read: {exc.message}",
            hint="the start of the file, where SQLite keeps its list of tables, is damaged; restore a backup",
        ) from exc


class _Copier:
    def __init__(self, src: Store, dest: Store) -> None:
        self.src = src
        self.dest = dest
        self.memory_pks: set[int] = set()
        self.memory_ids: set[str] = set()
        self.models: dict[str, tuple[int, str]] = {}  # model id -> (dim, vec table in the damaged file)
        self._present: dict[str, bool] = {}  # vec table -> exists in the damaged file

    def copy(self, table: str, key: str, on_row: Callable[[list[str], Row, TableResult], None]) -> TableResult:
        result = TableResult(table)
        have = set(columns_of(self.src, table))
        columns = [c for c in columns_of(self.dest, table) if c in have]
        if not columns:
            return result  # an older schema without this table: nothing was there to lose

        def sink(row: Row) -> None:
            # A damaged cell can still parse, into values of any type: such a row is left out.
            try:
                on_row(columns, row, result)
            except (apsw.ConstraintError, apsw.MismatchError, ValueError, TypeError) as exc:
                log.info("%s: a row breaks the schema and is left out: %s", table, exc)
                result.rejected += 1

        got: Salvaged = salvage(self.src, table, columns, sink, key=key)
        result.read, result.lost, result.lost_ranges = got.read, got.lost, got.lost_ranges
        result.read -= result.rejected + result.dropped
        return result

    # -- per table -----------------------------------------------------------------------

    def migration(self, columns: list[str], row: Row, result: TableResult) -> None:
        values = dict(zip(columns, row, strict=True))
        self.dest.maintenance.set_migration_applied_at(values.get("id"), values.get("applied_at"))

    def model(self, columns: list[str], row: Row, result: TableResult) -> None:
        values = dict(zip(columns, row, strict=True))
        model_id, dim = str(values["model_id"]), int(values["dim"])
        self.dest.vectors.ensure(model_id, dim)
        self.dest.vectors.set_created_at(model_id, values["created_at"])
        self.models[model_id] = (dim, str(values["vec_table"]))

    def memory(self, columns: list[str], row: Row, result: TableResult) -> None:
        self.dest.maintenance.insert_row("memories", columns, row)
        values = dict(zip(columns, row, strict=True))
        self.memory_pks.add(int(values["pk"]))
        self.memory_ids.add(str(values["id"]))

    def child(self, table: str) -> Callable[[list[str], Row, TableResult], None]:
        def on_row(columns: list[str], row: Row, result: TableResult) -> None:
            if int(row[columns.index("memory_pk")]) not in self.memory_pks:
                result.dropped += 1
                return
            self.dest.maintenance.insert_row(table, columns, row, on_conflict="ignore")

        return on_row

    def plain(self, table: str) -> Callable[[list[str], Row, TableResult], None]:
        def on_row(columns: list[str], row: Row, result: TableResult) -> None:
            self.dest.maintenance.insert_row(
                table, columns, row, on_conflict="replace" if table == "settings" else "abort"
            )

        return on_row

    def copy_all(self) -> tuple[list[TableResult], int]:
        handlers: dict[str, Callable[[list[str], Row, TableResult], None]] = {
            MIGRATIONS_TABLE: self.migration, "embedding_models": self.model, "memories": self.memory,
            "tags": self.child("tags"), "sources": self.child("sources"),
        }  # fmt: skip
        with self.dest.write():
            # superseded_by points at any memory, later rows included: checked once all are in.
            self.dest.maintenance.defer_foreign_keys()
            results = [self.copy(table, key, handlers.get(table) or self.plain(table)) for table, key in TABLES]
            cleared = self.dest.memories.clear_dangling_links()
        return results, cleared

    # -- vectors and keywords ------------------------------------------------------------------

    def _old_vector(self, model_id: str, pk: int, dim: int) -> np.ndarray | None:
        table = self.models.get(model_id, (dim, table_name(model_id)))[1]
        if table not in self._present:
            self._present[table] = self.src.maintenance.table_exists(table)
        if not self._present[table]:
            return None
        try:
            blob = self.src.vectors.blob(table, pk)
        except DatabaseDamaged:
            return None
        if blob is None or len(blob) != 4 * dim:
            return None
        vector = np.frombuffer(blob, dtype=np.float32)
        # A damaged page inside a chunk of vectors reads without an error, as garbage. Every model
        # engram ships makes unit vectors, so anything else did not come from a model.
        finite = bool(np.all(np.isfinite(vector)))
        if not finite or abs(float(np.linalg.norm(vector.astype(np.float64))) - 1.0) > UNIT_TOLERANCE:
            return None
        return vector

    def vectors(
        self, embedder: Embedder, fallback_model: str, progress: Callable[[int, int], None] | None
    ) -> list[TableResult]:
        """Copy every vector that reads; make the others again from their memory's text."""
        loaded: dict[str, tuple[str, EmbedFn, int]] = {}

        def model_for(model_id: str) -> tuple[str, EmbedFn, int]:
            # The memory's own model when engram ships it; otherwise the active one.
            if model_id not in loaded:
                try:
                    loaded[model_id] = (model_id, *embedder(model_id))
                except ModelError:
                    loaded[model_id] = (fallback_model, *embedder(fallback_model))
            return loaded[model_id]

        results: dict[str, TableResult] = {}
        missing: dict[str, list[int]] = defaultdict(list)
        total = self.dest.memories.count_with_vectors()
        done, after = 0, 0
        everything = Filters(statuses=[])
        # In batches of memories, so a large database is never all in memory at once.
        while rows := self.dest.memories.scan(everything, with_vectors=True, after=after, limit=BATCH):
            with self.dest.write():
                for row in rows:
                    model_id = str(row.model)
                    dim = self.models[model_id][0] if model_id in self.models else model_for(model_id)[2]
                    result = results.setdefault(model_id, TableResult(table_name(model_id)))
                    vector = self._old_vector(model_id, row.pk, dim)
                    if vector is None:
                        result.lost = (result.lost or 0) + 1
                        missing[model_id].append(row.pk)
                        continue
                    self.dest.vectors.ensure(model_id, dim)
                    self._put(model_id, row, vector)
                    result.read += 1
            after, done = rows[-1].pk, done + len(rows)
            if progress:
                progress(done, total)
        for model_id, pks in missing.items():
            results[model_id].reembedded = self._embed(pks, model_for(model_id))
        return list(results.values())

    def _put(self, model_id: str, row: MemoryRow, vector: np.ndarray) -> None:
        self.dest.vectors.put(model_id, row.pk, vector, namespace=row.namespace, status=row.status,
                              memory_type=row.type, agent=row.agent)  # fmt: skip

    def _embed(self, pks: list[int], model: tuple[str, EmbedFn, int]) -> int:
        model_id, embed, dim = model
        self.dest.vectors.ensure(model_id, dim)
        for start in range(0, len(pks), EMBED_BATCH):
            found = self.dest.memories.load_many(pks[start : start + EMBED_BATCH])
            memories = [found[pk] for pk in sorted(found)]
            matrix = np.asarray(embed([m.passage for m in memories]), dtype=np.float32)
            with self.dest.write():
                for memory, vector in zip(memories, matrix, strict=True):
                    self.dest.vectors.put(
                        model_id, memory.pk, vector, namespace=memory.namespace, status=memory.status,
                        memory_type=memory.type, agent=memory.agent,
                    )  # fmt: skip
                    if memory.embedding_model != model_id:
                        self.dest.memories.move_to_model(memory.pk, model_id, at=None)
        return len(pks)

    def keywords(self) -> int:
        pks = sorted(self.memory_pks)
        for start in range(0, len(pks), BATCH):
            with self.dest.write():
                for pk in pks[start : start + BATCH]:
                    records.reindex(self.dest, pk)
        return len(pks)

    def lost_memory_ids(self) -> list[str] | None:
        """Ids of memories whose row was lost, read from an index of memories that still reads."""
        ids = self.src.maintenance.memory_ids_by_index()
        return None if ids is None else sorted(ids - self.memory_ids)


def _source_schema(src: Store) -> int | None:
    """The newest migration the damaged file records; None when that record cannot be read."""
    try:
        return src.maintenance.newest_migration()
    except (DatabaseDamaged, apsw.SQLError):
        return None


def _verify(dest: Store) -> None:
    problems = dest.maintenance.integrity_problems()
    problems += [f"{table} row {rowid}" for table, rowid, _ in dest.maintenance.foreign_key_problems()]
    if problems:
        raise StoreError(
            f"the recovered database fails SQLite's integrity check ({problems[0]})",
            hint="this is a bug in engram recover; the damaged file was not changed",
        )


def _publish(building: Path, output: Path) -> None:
    """Give the finished file its name, never replacing a file that appeared meanwhile."""
    try:
        os.link(building, output)
    except FileExistsError as exc:
        raise InvalidInput(f"{output} appeared while recovering", hint="name another OUT") from exc
    except OSError:  # a file system without hard links
        if output.exists():
            raise InvalidInput(f"{output} appeared while recovering", hint="name another OUT") from None
        os.replace(building, output)
        return
    building.unlink()


def run(
    source: Path,
    output: Path | None = None,
    *,
    embedder: Embedder,
    fallback_model: str,
    progress: Callable[[int, int], None] | None = None,
) -> RecoverReport:
    """Copy every row of ``source`` that can still be read into the new database ``output``.

    ``embedder`` makes vectors for the memories whose vector is lost (their own model, or
    ``fallback_model`` when engram does not ship theirs).
    """
    source = Path(source)
    output = Path(output) if output is not None else default_output(source)
    _check_output(source, output)
    src = _open_source(source)
    try:
        schema = _source_schema(src)
        if schema is not None and schema > max(m.id for m in MIGRATIONS):
            raise StoreError(
                f"{source} was written by a newer engram (schema {schema})",
                hint="recover it with that version: `pip install -U engram-localmem`",
            )
        # The rows are copied into the schema they were written in; the later migrations then
        # bring them up to date the way they would have brought the file itself.
        copied_schema = [m for m in MIGRATIONS if schema is None or m.id <= schema]
        building = output.with_name(output.name + ".partial")
        _remove(building)  # left by a recovery that was killed
        try:
            dest = connect(building, migrations=copied_schema)
            try:
                copier = _Copier(src, dest)
                tables, cleared = copier.copy_all()
                tables += copier.vectors(embedder, fallback_model, progress)
                report = RecoverReport(
                    source=str(source),
                    output=str(output),
                    tables=tables,
                    keyword_rows=copier.keywords(),
                    links_cleared=cleared,
                    lost_memory_ids=copier.lost_memory_ids(),
                    side_files=[str(p) for p in _db_files(source)[1:] if p.exists()],
                )
                migrate(dest.conn, building)
                _verify(dest)
            finally:
                dest.close()
            _publish(building, output)
        except BaseException:
            with contextlib.suppress(OSError):
                _remove(building)
            raise
    finally:
        src.close()
    return report
