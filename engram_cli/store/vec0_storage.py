"""Reading a whole vec0 table from the tables sqlite-vec keeps it in, a chunk at a time.

``SELECT ... FROM vec0`` hands out one row at a time, and each row costs sqlite-vec a lookup of its
chunk: about 3 s for 100k rows of 384 floats, and the caller then holds every row's bytes. The
same rows are stored in a few ordinary tables (sqlite-vec 0.1.6 to 0.1.9 lay them out alike):

- ``{t}_chunks``: one row per chunk of ``size`` slots (1,024 by default), all of one partition
  (``partition00``, the namespace), with a validity bitmap (one bit per slot, low bit first) and
  the slots' rowids as little-endian int64;
- ``{t}_vector_chunks00``: per chunk id, the slots' vectors as ``size × dim`` float32;
- ``{t}_metadatachunksNN``: per chunk id and metadata column (in declaration order: status, type,
  agent), 16 bytes a slot: the text's length as int32, then its first 12 bytes; a longer text is
  whole in ``{t}_metadatatextNN`` under the row's rowid.

Reading those is a few large blobs instead of a row at a time, and lets the caller put each vector
straight where it belongs. It is an internal layout, so every assumption is checked: the tables'
columns, every blob's length, the slots' pks against what vec0 itself lists, and a sample of rows
against vec0's own answer. Anything unexpected returns None, and the caller reads through vec0.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from engram_cli.store.database import Database

log = logging.getLogger(__name__)

# The metadata columns of engram's vec0 tables, in the order they are declared (vectors.Vectors.ensure).
METADATA = ("status", "memory_type", "agent_id")
SLOT = 16  # bytes per slot of a text metadata chunk: int32 length, then up to 12 bytes of the text
PREFIX = SLOT - 4
# Rows compared with vec0's own answer after a read (besides every pk).
SAMPLE = 16
_SHADOW_COLUMNS = {
    "chunks": ["chunk_id", "size", "sequence_id", "partition00", "validity", "rowids"],
    "vector_chunks00": ["rowid", "vectors"],
    "metadatachunks00": ["rowid", "data"],
    "metadatachunks01": ["rowid", "data"],
    "metadatachunks02": ["rowid", "data"],
    "metadatatext00": ["rowid", "data"],
    "metadatatext01": ["rowid", "data"],
    "metadatatext02": ["rowid", "data"],
}


# One row: vector, namespace, status, type, agent.
StoredRow = tuple[np.ndarray, str, str, str, str]
# A chunk as read: its id, its number of slots, the slots in use, and their pks.
Chunk = tuple[int, int, np.ndarray, np.ndarray]


class Layout(Exception):
    """The stored tables are not laid out as this reader expects."""


@dataclass
class Table:
    """Every row of a vec0 table: pks, namespace/status/type/agent as codes into sorted vocabularies,
    and vectors, all ordered by namespace then pk."""

    pks: np.ndarray
    matrix: np.ndarray
    codes: dict[str, np.ndarray]  # "ns", "status", "mtype", "agent"
    vocab: dict[str, list[str]]


def read(store: Database, table: str, dim: int, *, vectors: bool = True) -> Table | None:
    """The whole of ``table`` read from its storage tables; None when they are not as expected.

    Without ``vectors`` only the pks and filter columns are read (the matrix has no columns). The
    caller holds a read transaction, so what is read is one state of the database.
    """
    try:
        return _read(store, table, dim if vectors else 0)
    except Layout as exc:
        log.info("vec0 table %s: reading it row by row (%s)", table, exc)
        return None


def _check_layout(store: Database, table: str) -> None:
    """The storage tables of ``table`` must have the columns this reader expects."""
    for suffix, expected in _SHADOW_COLUMNS.items():
        # The rowid of a table is not a listed column unless declared; "rowid PRIMARY KEY" is.
        have = [str(row[1]) for row in store.rows(f'PRAGMA table_info("{table}_{suffix}")')]
        if have != expected:
            raise Layout(f"{table}_{suffix} has columns {have}")


def _vec0_row(store: Database, table: str, pk: int) -> tuple[bytes, tuple[str, ...]] | None:
    """What vec0 itself answers for ``pk``: its vector's bytes and its namespace, status, type and agent."""
    found = store.one(
        f"SELECT embedding, namespace, status, memory_type, agent_id FROM {table} WHERE memory_pk = ?", (pk,)
    )
    return None if found is None else (bytes(found[0]), tuple(str(v) for v in found[1:]))


def _read(store: Database, table: str, dim: int) -> Table:
    _check_layout(store, table)
    slots: list[Chunk] = []
    partitions: list[str] = []
    for chunk_id, size, _seq, partition, validity, rowids in store.rows(
        f"SELECT chunk_id, size, sequence_id, partition00, validity, rowids FROM {table}_chunks ORDER BY chunk_id"
    ):
        size = int(size)
        if size <= 0 or size % 8 or not isinstance(validity, bytes) or not isinstance(rowids, bytes):
            raise Layout(f"chunk {chunk_id} is not a chunk")
        if len(validity) != size // 8 or len(rowids) != size * 8 or not isinstance(partition, str):
            raise Layout(f"chunk {chunk_id} has blobs of unexpected lengths")
        valid = np.flatnonzero(np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little"))
        slots.append((int(chunk_id), size, valid, np.frombuffer(rowids, "<i8")[valid]))
        partitions.append(partition)

    pks = np.concatenate([s[3] for s in slots]) if slots else np.zeros(0, np.int64)
    _check_rowids(store, table, slots, pks)

    ns_vocab = sorted(set(partitions))
    ns_lookup = {v: i for i, v in enumerate(ns_vocab)}
    ns = np.concatenate(
        [np.full(len(s[2]), ns_lookup[p], np.int32) for s, p in zip(slots, partitions, strict=True)]
    ) if slots else np.zeros(0, np.int32)  # fmt: skip
    # Where each row goes: ordered by namespace, then pk.
    order = np.lexsort((pks, ns))
    dest = np.empty(len(pks), np.int64)
    dest[order] = np.arange(len(pks))
    starts = np.cumsum([0] + [len(s[2]) for s in slots])
    at = {s[0]: i for i, s in enumerate(slots)}

    matrix = np.empty((len(pks), dim), np.float32)
    filled = 0
    # A cursor, not a list: the chunks of a million rows are 1.5 GB, and each is copied where it belongs.
    for chunk_id, blob in store.execute(f"SELECT rowid, vectors FROM {table}_vector_chunks00") if dim else ():
        i = at.get(int(chunk_id))
        if i is None:
            continue  # no chunk row lists it, so it holds no row
        _, size, valid, _ = slots[i]
        if not isinstance(blob, bytes) or len(blob) != size * dim * 4:
            raise Layout(f"vector chunk {chunk_id} has {len(blob) if isinstance(blob, bytes) else '?'} bytes")
        to = dest[starts[i] : starts[i + 1]]
        vectors = np.frombuffer(blob, np.float32).reshape(size, dim)
        if len(to) and to[-1] - to[0] == len(to) - 1 and bool((np.diff(to) == 1).all()):
            # The usual case: a chunk's rows land side by side, and the copy is one block.
            matrix[to[0] : to[-1] + 1] = vectors if len(valid) == size else vectors[valid]
        else:
            matrix[to] = vectors[valid]
        filled += len(valid)
    if dim and filled != len(pks):
        raise Layout("a chunk's vectors are missing")

    codes = {"ns": ns[order]}
    vocab = {"ns": ns_vocab}
    for n, name in enumerate(("status", "mtype", "agent")):
        column, values = _texts(store, f"{table}_metadatachunks{n:02d}", f"{table}_metadatatext{n:02d}", slots, starts)
        codes[name], vocab[name] = column[order], values

    out = Table(pks[order], matrix, codes, vocab)
    _spot_check(store, table, out)
    return out


# A checksum of (pk, chunk, slot) triples that SQLite and numpy compute alike, in 64-bit integers.
_MOD = 1_000_000_007


def _check_rowids(store: Database, table: str, slots: list[Chunk], pks: np.ndarray) -> None:
    """The chunks' slots must be exactly what ``{t}_rowids`` (which vec0 lists rows and finds them by) says."""
    ordered = np.sort(pks)
    if len(ordered) and bool((ordered[1:] == ordered[:-1]).any()):
        raise Layout("a pk is in two slots")
    chunk = np.concatenate([np.full(len(s[2]), s[0], np.int64) for s in slots]) if slots else np.zeros(0, np.int64)
    offset = np.concatenate([s[2] for s in slots]).astype(np.int64) if slots else np.zeros(0, np.int64)
    ours = int((((pks % _MOD) * 40503 + chunk * 131 + offset) % _MOD).sum())
    count, theirs = store.one(
        f"SELECT count(*), coalesce(sum((((rowid % {_MOD}) * 40503 + chunk_id * 131 + chunk_offset) % {_MOD})), 0) "
        f"FROM {table}_rowids"
    ) or (0, 0)
    if int(count) != len(pks) or int(theirs) != ours:
        raise Layout(f"its chunks hold {len(pks)} rows, its rowid table {count}")


def _texts(
    store: Database, chunks_table: str, text_table: str, slots: list[Chunk], starts: np.ndarray
) -> tuple[np.ndarray, list[str]]:
    """One text metadata column of every row, in slot order: codes into a sorted vocabulary, and the vocabulary."""
    raw = np.empty((int(starts[-1]), SLOT), np.uint8)
    at = {s[0]: i for i, s in enumerate(slots)}
    seen = 0
    for chunk_id, blob in store.rows(f"SELECT rowid, data FROM {chunks_table}"):
        i = at.get(int(chunk_id))
        if i is None:
            continue
        size, valid = slots[i][1], slots[i][2]
        if not isinstance(blob, bytes) or len(blob) != size * SLOT:
            raise Layout(f"{chunks_table} chunk {chunk_id} has unexpected length")
        raw[starts[i] : starts[i + 1]] = np.frombuffer(blob, np.uint8).reshape(size, SLOT)[valid]
        seen += 1
    if seen != len(slots):
        raise Layout(f"{chunks_table} lacks a chunk")
    lengths = raw[:, :4].copy().view("<i4").reshape(-1)
    if len(lengths) and lengths.min() < 0:
        raise Layout(f"{chunks_table} holds a negative length")
    # A column holds a handful of values over many rows: decode each distinct slot once. A text longer
    # than the slot is read whole, by the row's pk; there are few of those (agent names, mostly).
    # (Each half of a slot as one integer: sorting integers is far quicker than sorting 16-byte records.)
    halves = raw.view("<u8").reshape(-1, 2)
    first, first_at = np.unique(halves[:, 0], return_inverse=True)
    second, second_at = np.unique(halves[:, 1], return_inverse=True)
    pair = first_at.reshape(-1).astype(np.int64) * len(second) + second_at.reshape(-1)
    kind_keys, inverse = np.unique(pair, return_inverse=True)
    kind_raw = np.stack([first[kind_keys // len(second)], second[kind_keys % len(second)]], axis=1)
    kind_raw = np.ascontiguousarray(kind_raw).view(np.uint8).reshape(-1, SLOT)
    kind_text: list[str | None] = []
    for k in kind_raw:
        length = int(k[:4].view("<i4")[0])
        kind_text.append(bytes(k[4 : 4 + length]).decode("utf-8", "surrogateescape") if length <= PREFIX else None)
    inverse = inverse.reshape(-1)
    long_rows = np.flatnonzero(lengths > PREFIX)
    long_text: dict[int, str] = {}
    if len(long_rows):
        pks = np.concatenate([s[3] for s in slots])
        wanted = {int(pks[row]) for row in long_rows.tolist()}
        whole = {int(pk): text for pk, text in store.rows(f"SELECT rowid, data FROM {text_table}") if pk in wanted}
        for row in long_rows.tolist():
            text = whole.get(int(pks[row]))
            if not isinstance(text, str) or len(text.encode("utf-8", "surrogateescape")) != int(lengths[row]):
                raise Layout(f"{text_table} lacks the text of row {int(pks[row])}")
            long_text[row] = text
    vocab = sorted({t for t in kind_text if t is not None} | set(long_text.values()))
    lookup = {v: i for i, v in enumerate(vocab)}
    kind_code = np.asarray([-1 if t is None else lookup[t] for t in kind_text] or [0], np.int32)
    column = kind_code[inverse] if len(inverse) else np.zeros(0, np.int32)
    for row, text in long_text.items():
        column[row] = lookup[text]
    return column, vocab


def _spot_check(store: Database, table: str, got: Table) -> None:
    """Compare a spread of rows with what vec0 itself answers for them."""
    n = len(got.pks)
    if not n:
        return
    picks = np.unique(np.linspace(0, n - 1, num=min(SAMPLE, n)).astype(np.int64))
    for row in picks.tolist():
        pk = int(got.pks[row])
        found = _vec0_row(store, table, pk)
        if found is None or (got.matrix.shape[1] and found[0] != got.matrix[row].tobytes()):
            raise Layout(f"row {pk} differs from vec0's answer")
        held = tuple(got.vocab[name][int(got.codes[name][row])] for name in ("ns", "status", "mtype", "agent"))
        if held != found[1]:
            raise Layout(f"row {pk}'s columns differ from vec0's answer")


def read_rows(
    store: Database, table: str, dim: int, pks: Sequence[int], *, check_layout: bool = True
) -> dict[int, StoredRow] | None:
    """The rows of ``pks`` that exist, read from the storage tables; None when they are not as expected.

    vec0 answers one ``memory_pk = ?`` in about 0.6 ms (it reads more than the row), and ``IN (...)``
    by scanning the whole table. Here each row is its slot's few bytes, read through blob handles:
    the rowid table says where the row is, the chunk's bitmap and rowids that the slot holds it. The caller
    compares a row of each batch with vec0's answer (:func:`same_as_vec0`).
    """
    try:
        return _read_rows(store, table, dim, pks, check_layout)
    except Layout as exc:
        log.info("vec0 table %s: reading changed rows through vec0 (%s)", table, exc)
        return None


def _read_rows(store: Database, table: str, dim: int, pks: Sequence[int], check_layout: bool) -> dict[int, StoredRow]:
    from engram_cli.store.sql import chunks, marks

    if check_layout:
        _check_layout(store, table)
    where: dict[int, tuple[int, int]] = {}
    for part in chunks(list(pks)):
        for pk, chunk_id, offset in store.rows(
            f"SELECT rowid, chunk_id, chunk_offset FROM {table}_rowids WHERE rowid IN ({marks(part)})", part
        ):
            if chunk_id is not None and offset is not None:
                where[int(pk)] = (int(chunk_id), int(offset))
    if not where:
        return {}
    held: dict[int, tuple[int, str, bytes, bytes]] = {}  # chunk id -> size, partition, validity, rowids
    wanted = sorted({c for c, _ in where.values()})
    for part in chunks(wanted):
        for chunk_id, size, partition, validity, rowids in store.rows(
            f"SELECT chunk_id, size, partition00, validity, rowids FROM {table}_chunks "
            f"WHERE chunk_id IN ({marks(part)})",
            part,
        ):
            if not isinstance(partition, str) or not isinstance(validity, bytes) or len(validity) * 8 != int(size):
                raise Layout(f"chunk {chunk_id} is not a chunk")
            if not isinstance(rowids, bytes) or len(rowids) != int(size) * 8:
                raise Layout(f"chunk {chunk_id} has rowids of an unexpected length")
            held[int(chunk_id)] = (int(size), partition, validity, rowids)
    conn = store.conn
    out: dict[int, StoredRow] = {}
    blobs: dict[str, Any] = {}
    try:
        for pk, (chunk_id, offset) in sorted(where.items(), key=lambda item: item[1]):
            chunk = held.get(chunk_id)
            if chunk is None or not 0 <= offset < chunk[0]:
                raise Layout(f"row {pk} points outside its chunk")
            # A deleted row leaves the rowid table, and its slot may be reused: the slot must be in use and hold it.
            in_use = chunk[2][offset // 8] >> (offset % 8) & 1
            if not in_use or int.from_bytes(chunk[3][offset * 8 : offset * 8 + 8], "little", signed=True) != pk:
                raise Layout(f"row {pk}'s slot does not hold it")
            vector = _slot(conn, blobs, f"{table}_vector_chunks00", "vectors", chunk_id, offset, dim * 4)
            texts = []
            for n in range(len(METADATA)):
                slot = _slot(conn, blobs, f"{table}_metadatachunks{n:02d}", "data", chunk_id, offset, SLOT)
                length = int.from_bytes(slot[:4], "little", signed=True)
                if length < 0:
                    raise Layout(f"row {pk} has a negative length")
                if length <= PREFIX:
                    texts.append(slot[4 : 4 + length].decode("utf-8", "surrogateescape"))
                    continue
                whole = store.scalar(f"SELECT data FROM {table}_metadatatext{n:02d} WHERE rowid = ?", (pk,))
                if not isinstance(whole, str) or len(whole.encode("utf-8", "surrogateescape")) != length:
                    raise Layout(f"row {pk} lacks a long text")
                texts.append(whole)
            out[pk] = (np.frombuffer(vector, np.float32), chunk[1], texts[0], texts[1], texts[2])
    finally:
        for blob in blobs.values():
            blob.close()
    return out


def _slot(conn: Any, blobs: dict[str, Any], table: str, column: str, chunk_id: int, offset: int, width: int) -> bytes:
    """``width`` bytes at slot ``offset`` of the blob of chunk ``chunk_id`` (one open handle per table, moved along)."""
    import apsw

    try:
        blob = blobs.get(table)
        if blob is None:
            blob = blobs[table] = conn.blob_open("main", table, column, chunk_id, False)
        else:
            blob.reopen(chunk_id)
        if blob.length() < (offset + 1) * width:
            raise Layout(f"{table} chunk {chunk_id} is too short")
        blob.seek(offset * width)
        data: bytes = blob.read(width)
    except apsw.Error as exc:
        raise Layout(f"{table} chunk {chunk_id}: {exc}") from exc
    return data


def same_as_vec0(store: Database, table: str, pk: int, row: StoredRow | None) -> bool:
    """Whether vec0 itself answers ``row`` for ``pk`` (None: that it has no such row)."""
    found = _vec0_row(store, table, pk)
    if found is None or row is None:
        return found is None and row is None
    return found[0] == row[0].tobytes() and found[1] == row[1:]
