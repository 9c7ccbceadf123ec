"""The vector index: one model's vectors as a float32 matrix that numpy searches, kept as a cache.

The vec0 table of a model stays the truth. Every write to it also appends a row to the change log
(``vector_changes``: sequence, model, memory pk, random token) in the same transaction, so a copy
of the table taken at one sequence can be brought up to date by re-reading only the rows changed
since. That copy is a file under the user's cache directory (one per database and model), mapped
into memory read-only; the changes since it was written are kept beside it in memory, and when
they grow (or a vector was deleted: a purged memory must not outlive its row for long) the file
is rewritten whole and renamed over the old one.

A file is used only when it belongs to this very database (the random ``vector_epoch`` a
migration wrote, and the file's device and inode), to this model and dimension, and when the log
still holds the row it stopped at with the same token; anything else (missing, truncated,
foreign, older than what the log still holds, a database restored from a backup) makes it rebuilt
from the vec0 table. Nothing is written while this connection has uncommitted changes, so a file
never reflects work that may be rolled back; a rollback makes the index forget everything it
read. Without a cache directory, or when it cannot be written, the index lives in memory only.
A whole table is read from the tables sqlite-vec stores it in (:mod:`engram_cli.store.vec0_storage`,
checked against vec0), else through vec0 a row at a time.

Rows are kept sorted by namespace, so a namespace filter is a slice of the matrix; status, type
and agent are small integer codes turned into masks. Above ``approx_min_rows`` rows to search,
the sign bits of the mean-centred vectors pick candidates by Hamming distance (popcount) and only
those are scored exactly.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import os
import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import apsw
import numpy as np

from engram_cli.atomic import replace_file
from engram_cli.store.knn import Filter, IndexOptions
from engram_cli.store.sql import chunks, marks

if TYPE_CHECKING:
    from engram_cli.store.database import Database

log = logging.getLogger(__name__)

LOG_TABLE = "vector_changes"
MAGIC = b"ENGRAMVI"
FORMAT = 2  # 2: the sign bits are stored a word at a time (words x rows), not a row at a time
ALIGN = 64
# The log keeps its newest rows: LOG_KEEP_REWRITES times the changes after which a writer rewrites
# its index file (see persist_at), and at least LOG_KEEP_MIN. A file older than what is left is
# rebuilt, which takes several rewrites skipped in a row (the index turned off for a while, a cache
# that cannot be written). A fixed 100,000 rows cost 49 bytes a memory at 100k and ten times that at 10k.
LOG_KEEP_MIN = 16_384
LOG_KEEP_REWRITES = 8
# How often (in log rows) the log is trimmed.
LOG_TRIM_EVERY = 4096
# Changed rows kept beside the base before they are folded into it (in memory, or into the file).
OVERLAY_LIMIT = 4096
# A row looked up by its key costs about what reading this many rows in a scan of the table costs.
POINT_LOOKUPS_PER_SCAN = 100
# Changed rows that make a reader rewrite the file: at least this many, or this share of the rows.
# Rewriting costs time in proportion to the rows (about 1.5 s at 100k), and a process that opens
# the file reads the changes since from the storage tables (about 50 µs a row): a share keeps the
# rewrites' cost per change flat as the store grows, and a reader's catch-up a small part of a full read.
PERSIST_DELTA = 256
PERSIST_SHARE = 1 / 64
# Changes (sequence, pk) remembered past a fold, so that a batch writer's neighbours found before it
# stay exact across the fold (:class:`Prefetched`).
CHANGES_KEEP = 8192


def persist_at(rows: int) -> int:
    """Changed rows after which a process rewrites the index file of a table of ``rows`` rows."""
    return max(PERSIST_DELTA, int(rows * PERSIST_SHARE))


def log_keep(rows: int) -> int:
    """The change-log rows to keep for a store of ``rows`` memories."""
    return max(LOG_KEEP_MIN, LOG_KEEP_REWRITES * persist_at(rows))


# Up to this many queries, exact search takes one matrix-vector product per query (recall: a query, and
# its cross-language shift at no cost); more (a batch writer's merge check) share one matrix product, which
# reads the vectors once instead of once per query.
FEW_QUERIES = 2
# Candidates per wanted neighbour that the approximate path scores exactly (at least ``rerank``).
RERANK_PER_K = 20

# Rows handled at a time when a step over the whole matrix would otherwise copy it whole.
BLOCK = 65536

FILTERS = ("ns", "status", "mtype", "agent")
_SECTIONS = ("pks", "norms", "ns", "status", "mtype", "agent", "order", "ns_start", "mean", "bits", "matrix")


Row = tuple[np.ndarray, str, str, str, str]  # vector, namespace, status, type, agent


class Moved(NamedTuple):
    """The query moved by a shift, in a search: its place among the queries, the shift, 1 / its length."""

    at: int
    delta: np.ndarray
    scale: float


# The last version of each index file this process mapped: path -> ((device, inode, size, mtime), base, identity).
_LOADED: dict[str, tuple[tuple[int, int, int, int], Base, dict[str, Any]]] = {}
_LOADED_LOCK = threading.Lock()


class Unbuilt(Exception):
    """No usable index file, and this process may not build one (``IndexOptions.build`` is False)."""


def index_file(cache_dir: Path, db_path: Path, table: str) -> Path:
    """Where the index of ``table`` of the database at ``db_path`` is kept: keyed by the file's real path."""
    import hashlib

    key = hashlib.sha256(os.path.realpath(db_path).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return cache_dir / key / f"{table}.idx"


def _norms(matrix: np.ndarray) -> np.ndarray:
    norms = np.empty(len(matrix), np.float32)
    for lo in range(0, len(matrix), BLOCK):  # einsum squares without a copy of the matrix
        block = matrix[lo : lo + BLOCK]
        norms[lo : lo + len(block)] = np.sqrt(np.einsum("ij,ij->i", block, block))
    norms[norms == 0] = 1.0  # a zero vector scores 0 against anything, never NaN
    return norms


def _sign_bits(matrix: np.ndarray, norms: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Sign bits of each row (normalised, minus the mean), packed into 64-bit words, one row of the result
    per word (words x rows): the Hamming distances of a query then come from a few long vector operations,
    one per word. At 1M rows that took 5 ms a query, where reading the words a row at a time took 33 ms."""
    dim = matrix.shape[1]
    words = -(-dim // 64)
    out = np.zeros((words, len(matrix)), dtype=np.uint64)
    packed = np.zeros((min(BLOCK, len(matrix)), words * 8), dtype=np.uint8)
    for lo in range(0, len(matrix), BLOCK):  # in blocks: the centred copy of a million rows is 1.5 GB
        block = matrix[lo : lo + BLOCK] / norms[lo : lo + BLOCK, None] - mean
        packed[: len(block), : -(-dim // 8)] = np.packbits(block > 0, axis=1, bitorder="little")
        out[:, lo : lo + len(block)] = packed[: len(block)].view(np.uint64).T
    return out


class Base:
    """The rows of a model's table as of one change-log sequence, sorted by namespace then pk."""

    def __init__(self, arrays: dict[str, np.ndarray], vocab: dict[str, list[str]], dim: int) -> None:
        self.a = arrays
        self.vocab = vocab
        self.dim = dim
        self.n = len(arrays["pks"])
        self.codes = {name: {v: i for i, v in enumerate(values)} for name, values in vocab.items()}
        self._sorted_pks: np.ndarray | None = None
        # shift (bytes) -> (each row's x . shift / |x|, set only in the row ranges listed beside it)
        self._shifts: dict[bytes, tuple[np.ndarray, set[tuple[int, int]]]] = {}

    def shift_scores(self, shift: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Rows [lo, hi)'s products with ``shift``, each divided by the row's norm, computed once per shift.

        A query moved by ``shift`` (recall's cross-language list) scores a row (cosine + this) / |q + shift|:
        one matrix product serves the query and its shift, and the shift's part is kept. A store has two
        shifts at a time (one per direction between its two scripts).
        """
        key = np.asarray(shift, dtype=np.float32).tobytes()
        held = self._shifts.get(key)
        if held is None:
            if len(self._shifts) >= 2:
                self._shifts.clear()
            held = self._shifts[key] = (np.empty(self.n, dtype=np.float32), set())
        scores, done = held
        if (lo, hi) not in done and (0, self.n) not in done:
            part = self.a["matrix"][lo:hi] @ np.asarray(shift, dtype=np.float32)
            part /= self.a["norms"][lo:hi]
            scores[lo:hi] = part
            done.add((lo, hi))
        return scores[lo:hi]

    @property
    def sorted_pks(self) -> np.ndarray:
        """The pks in increasing order (row ``order[i]`` holds the i-th), made once."""
        if self._sorted_pks is None:
            self._sorted_pks = self.a["pks"][self.a["order"]]
        return self._sorted_pks

    @classmethod
    def build(
        cls,
        pks: np.ndarray,
        matrix: np.ndarray,
        codes: dict[str, np.ndarray],
        vocab: dict[str, list[str]],
        dim: int,
        *,
        ordered: bool = False,
        searchable: bool = True,
    ) -> Base:
        """From parallel arrays: pks, vectors, and the codes (into ``vocab``, sorted) of each filter column.

        ``ordered``: the rows already are in namespace, then pk order, and ``matrix`` is used as it is
        (no copy: a million rows are 1.5 GB). Not ``searchable``: only to be compared with another base
        (:meth:`VectorIndex.check`), so the norms, the mean and the sign bits are left blank (at 100k
        rows, computing them took 0.5-0.9 s of an audit).
        """
        pks = np.asarray(pks, dtype=np.int64)
        if ordered:
            matrix = np.asarray(matrix, dtype=np.float32).reshape(len(pks), dim)
            ns, status = np.asarray(codes["ns"], np.int32), np.asarray(codes["status"], np.int16)
            mtype, agent = np.asarray(codes["mtype"], np.int16), np.asarray(codes["agent"], np.int32)
        else:
            sort = np.lexsort((pks, codes["ns"])) if len(pks) else np.zeros(0, dtype=np.int64)
            matrix = np.ascontiguousarray(np.asarray(matrix, dtype=np.float32)[sort]).reshape(len(pks), dim)
            pks = pks[sort]
            ns, status = np.asarray(codes["ns"], np.int32)[sort], np.asarray(codes["status"], np.int16)[sort]
            mtype, agent = np.asarray(codes["mtype"], np.int16)[sort], np.asarray(codes["agent"], np.int32)[sort]
        norms = _norms(matrix) if searchable else np.ones(len(matrix), np.float32)
        mean = np.zeros(dim, np.float32)
        for lo in range(0, len(matrix) if searchable else 0, BLOCK):
            mean += (matrix[lo : lo + BLOCK] / norms[lo : lo + BLOCK, None]).sum(axis=0)
        mean /= max(len(matrix), 1)
        words = -(-dim // 64)
        arrays = {
            "pks": pks,
            "norms": norms,
            "ns": ns,
            "status": status,
            "mtype": mtype,
            "agent": agent,
            "order": np.argsort(pks, kind="stable").astype(np.int64),
            "ns_start": np.searchsorted(ns, np.arange(len(vocab["ns"]) + 1)).astype(np.int64),
            "mean": mean,
            "bits": _sign_bits(matrix, norms, mean) if searchable else np.zeros((words, len(matrix)), np.uint64),
            "matrix": matrix,
        }
        return cls(arrays, vocab, dim)

    @classmethod
    def from_rows(cls, pks: np.ndarray, matrix: np.ndarray, meta: Sequence[Sequence[str]], dim: int) -> Base:
        """From parallel arrays: pks, vectors and (namespace, status, type, agent) per row."""
        vocab = {name: sorted({m[i] for m in meta}) for i, name in enumerate(FILTERS)}
        codes = {}
        for i, name in enumerate(FILTERS):
            lookup = {v: c for c, v in enumerate(vocab[name])}
            codes[name] = np.fromiter((lookup[m[i]] for m in meta), dtype=np.int32, count=len(meta))
        return cls.build(pks, matrix, codes, vocab, dim)

    def merged(self, keep: np.ndarray, extra: dict[int, Row]) -> Base:
        """The rows ``keep`` (a mask) of this base with the rows of ``extra`` added, as a new base.

        The new matrix is filled in its final order, a block at a time: one copy of the rows, not three.
        """
        rows = np.flatnonzero(keep)
        over = sorted(extra)
        vocab: dict[str, list[str]] = {}
        codes: dict[str, np.ndarray] = {}
        for i, name in enumerate(FILTERS):
            new = [str(extra[pk][i + 1]) for pk in over]
            vocab[name] = sorted(set(self.vocab[name]) | set(new))
            lookup = {v: c for c, v in enumerate(vocab[name])}
            remap = np.asarray([lookup[v] for v in self.vocab[name]] or [0], dtype=np.int32)
            added = np.asarray([lookup[v] for v in new], dtype=np.int32)
            codes[name] = np.concatenate([remap[self.a[name][rows]], added])
        pks = np.concatenate([self.a["pks"][rows], np.asarray(over, dtype=np.int64)])
        sort = np.lexsort((pks, codes["ns"])) if len(pks) else np.zeros(0, dtype=np.int64)
        dest = np.empty(len(pks), np.int64)
        dest[sort] = np.arange(len(pks))
        matrix = np.empty((len(pks), self.dim), np.float32)
        old = self.a["matrix"]
        for lo in range(0, len(rows), BLOCK):
            hi = min(lo + BLOCK, len(rows))
            matrix[dest[lo:hi]] = old[rows[lo:hi]]
        for j, pk in enumerate(over):
            matrix[dest[len(rows) + j]] = extra[pk][0]
        return Base.build(pks[sort], matrix, {k: v[sort] for k, v in codes.items()}, vocab, self.dim, ordered=True)

    # -- the file -------------------------------------------------------------------------

    def save(self, path: Path, identity: dict[str, Any]) -> None:
        """Write the file whole and rename it over the old one (readers see one or the other)."""
        layout: dict[str, list[Any]] = {}
        offset = 0
        for name in _SECTIONS:
            arr = self.a[name]
            layout[name] = [offset, str(arr.dtype), list(arr.shape)]
            offset += -(-arr.nbytes // ALIGN) * ALIGN
        header = json.dumps(
            {"identity": identity, "vocab": self.vocab, "dim": self.dim, "n": self.n, "layout": layout,
             "size": offset},
            ensure_ascii=False,
        ).encode("utf-8")  # fmt: skip
        start = -(-(len(MAGIC) + 8 + len(header)) // ALIGN) * ALIGN
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with replace_file(path) as fh:
            fh.write(MAGIC + struct.pack("<II", FORMAT, len(header)) + header)
            fh.write(b"\0" * (start - len(MAGIC) - 8 - len(header)))
            for name in _SECTIONS:
                arr = np.ascontiguousarray(self.a[name])
                fh.write(arr.data)
                fh.write(b"\0" * (-(-arr.nbytes // ALIGN) * ALIGN - arr.nbytes))

    @classmethod
    def load(cls, path: Path) -> tuple[Base, dict[str, Any]] | None:
        """The base in a file and the identity it was written for; None when the file is missing or unreadable.

        A process maps each version of a file once: the connections of a long-lived process (the warm
        service opens one per prompt, the MCP server per call) share its pages instead of each adding
        a mapping of the whole file. A rewrite is a new file (renamed into place), so a new version.
        """
        try:
            st = os.stat(path)
        except OSError:
            return None
        version = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with _LOADED_LOCK:
            held = _LOADED.get(str(path))
            if held is not None and held[0] == version:
                return held[1], dict(held[2])
        loaded = cls._read(path)
        if loaded is not None:
            with _LOADED_LOCK:
                _LOADED[str(path)] = (version, loaded[0], dict(loaded[1]))
        return loaded

    @classmethod
    def _read(cls, path: Path) -> tuple[Base, dict[str, Any]] | None:
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(MAGIC) + 8)
                if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
                    return None
                version, length = struct.unpack("<II", head[len(MAGIC) :])
                if version != FORMAT or length > 1 << 26:
                    return None
                meta = json.loads(fh.read(length).decode("utf-8"))
            start = -(-(len(MAGIC) + 8 + length) // ALIGN) * ALIGN
            if os.path.getsize(path) != start + int(meta["size"]):
                return None
            raw = np.memmap(path, dtype=np.uint8, mode="r")
            arrays: dict[str, np.ndarray] = {}
            for name in _SECTIONS:
                offset, dtype, shape = meta["layout"][name]
                count = int(np.prod(shape)) if shape else 1
                size = count * np.dtype(dtype).itemsize
                arrays[name] = raw[start + offset : start + offset + size].view(dtype).reshape(shape)
            base = cls(arrays, {k: list(v) for k, v in meta["vocab"].items()}, int(meta["dim"]))
            if base.n != int(meta["n"]) or arrays["matrix"].shape != (base.n, base.dim):
                return None
            return base, dict(meta["identity"])
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, struct.error):
            return None

    # -- rows ------------------------------------------------------------------------------

    def row_of(self, pks: Iterable[int]) -> dict[int, int]:
        """pk -> row, for those of ``pks`` that are in the base."""
        wanted = np.fromiter(pks, dtype=np.int64)
        if not self.n or not len(wanted):
            return {}
        sorted_pks = self.sorted_pks
        at = np.minimum(np.searchsorted(sorted_pks, wanted), self.n - 1)
        hit = sorted_pks[at] == wanted
        return {int(pk): int(self.a["order"][i]) for pk, i, h in zip(wanted, at, hit, strict=True) if h}

    def meta_of(self, row: int) -> tuple[str, str, str, str]:
        a, v = self.a, self.vocab
        return (v["ns"][int(a["ns"][row])], v["status"][int(a["status"][row])], v["mtype"][int(a["mtype"][row])],
                v["agent"][int(a["agent"][row])])  # fmt: skip

    def slices(self, namespaces: Sequence[str] | None) -> list[tuple[int, int]]:
        if not namespaces:
            return [(0, self.n)] if self.n else []
        starts = self.a["ns_start"]
        out = []
        for code in sorted({self.codes["ns"][ns] for ns in namespaces if ns in self.codes["ns"]}):
            lo, hi = int(starts[code]), int(starts[code + 1])
            if hi > lo:
                out.append((lo, hi))
        return out

    def mask(self, lo: int, hi: int, spec: Filter, dead: np.ndarray | None) -> np.ndarray | None:
        """Which rows of [lo, hi) pass the filters other than the namespace; None when all do."""
        mask: np.ndarray | None = None
        for name, wanted in (("status", spec.statuses), ("mtype", spec.types),
                             ("agent", None if spec.agent is None else [spec.agent])):  # fmt: skip
            if not wanted:
                continue
            codes = [self.codes[name][w] for w in wanted if w in self.codes[name]]
            part = np.isin(self.a[name][lo:hi], codes)
            mask = part if mask is None else mask & part
        if dead is not None:
            alive = ~dead[lo:hi]
            mask = alive if mask is None else mask & alive
        return mask


def _by_pk(base: Base, skip: set[int]) -> np.ndarray:
    """The rows of ``base`` in pk order, leaving out those of ``skip``."""
    order = base.a["order"]
    if skip:
        order = order[~np.isin(base.a["pks"][order], np.fromiter(skip, dtype=np.int64))]
    return np.asarray(order)


def _closest(distance: np.ndarray, want: int, far: int) -> np.ndarray:
    """The indices, increasing, of the ``want`` smallest distances under ``far`` (all of them when fewer);
    among equal distances at the cut, the first ones. Small integer distances are counted, not sorted:
    at 1M rows this took 1.5 ms where a partial sort took 7."""
    below = np.cumsum(np.bincount(distance, minlength=far + 1))  # below[d]: how many are at most d
    if below[far - 1] <= want:
        return np.flatnonzero(distance < far)
    cut = int(np.searchsorted(below, want))  # the least d with at least ``want`` rows at most d
    inside = np.flatnonzero(distance < cut)
    ties = np.flatnonzero(distance == cut)[: want - len(inside)]
    picked: np.ndarray = np.union1d(inside, ties)
    return picked


SAMPLE_STEP = 8  # every how many columns _best_of_rows reads to guess each row's cut


def _best_of_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """The column indices of each row's ``k`` highest scores (in no order), for rows longer than ``k``.

    A partial sort of the whole (queries x rows) matrix at once returns an index for every cell: for a
    batch writer's 1,000 queries over 38,000 rows it took 330 ms. Here each row's cut is guessed from
    every SAMPLE_STEP-th column, so that about twice ``k`` scores reach it; only those are partly
    sorted, and a row where fewer than ``k`` reach it is partly sorted whole. The result is the same:
    60 ms for those 1,000 rows.
    """
    rows, n = scores.shape
    sample = scores[:, ::SAMPLE_STEP]
    m = sample.shape[1]
    r = min(m, 2 * k * m // n + 1)
    cut = np.partition(sample, m - r, axis=1)[:, m - r]
    out = np.empty((rows, k), dtype=np.int64)
    for j in range(rows):
        row = scores[j]
        kept = np.flatnonzero(row >= cut[j])
        if len(kept) < k:
            out[j] = np.argpartition(row, n - k)[n - k :]
        else:
            out[j] = kept[np.argpartition(row[kept], len(kept) - k)[len(kept) - k :]]
    return out


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest finite scores, best first."""
    idx = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
    idx = idx[np.isfinite(scores[idx])]
    best: np.ndarray = idx[np.argsort(-scores[idx], kind="stable")]
    return best


class VectorIndex:
    """The index of one model's vec0 table, read through one connection."""

    def __init__(self, store: Database, model_id: str, table: str, dim: int, options: IndexOptions) -> None:
        self.store = store
        self.model_id = model_id
        self.table = table
        self.dim = dim
        self.options = options
        self.file = None if options.cache_dir is None else index_file(options.cache_dir, store.path, table)
        self._writable = self.file is not None
        self.base: Base | None = None
        self.saved = False  # the base is what the file holds
        self.seq = 0  # the last change of the log the index reflects
        self.token: int | None = None
        self.base_seq = 0  # ... and the last one its base reflects
        self.overlay: dict[int, Row] = {}  # changed rows that exist now
        self.gone: set[int] = set()  # changed rows that no longer exist
        self.changes: list[tuple[int, int]] = []  # (seq, pk) of the changes read, oldest first
        self.known_from = 0  # ... every one after this sequence among them (see changes_since)
        self.dead: np.ndarray | None = None  # base rows overridden by the overlay or gone
        self._ov: dict[str, Any] | None = None  # the overlay as arrays, made when searched
        self._storage: bool | None = None  # whether the storage tables read as expected (None: not tried)
        # The base was read whole from the table by this process (not loaded, not folded since) ...
        self._read_whole = False
        # ... and was written to the file, which had this version then: (device, inode, size, mtime) and seq.
        self._written_whole: tuple[tuple[int, int, int, int], int] | None = None

    # -- keeping up with the database ------------------------------------------------------

    def refresh(self) -> None:
        """Bring the index up to the database's current state (as this connection sees it)."""
        with self.store.read():
            if self.base is not None and not self._continues(self.seq, self.token):
                log.info("vector index of %s: the change log moved on without it; reloading", self.model_id)
                self.reset()
            if self.base is None:
                self._open()
            self._catch_up()
        # A process that may not build the index does not rewrite it either: folding and writing a large
        # base costs seconds. The changes stay beside the base in memory.
        if self.options.build and len(self.overlay) + len(self.gone) > max(OVERLAY_LIMIT, self._persist_at()):
            self._fold()
        if self._should_save():
            self._save()

    def usable(self) -> bool:
        """Whether the index can answer now: always when it may build itself, else when its file could be used."""
        try:
            self.refresh()
        except Unbuilt:
            self.reset()
            return False
        return True

    def rows(self) -> int:
        """How many rows the table holds now (as this connection sees it), without counting them in SQL."""
        self.refresh()
        assert self.base is not None
        dead = 0 if self.dead is None else int(self.dead.sum())
        return self.base.n - dead + len(self.overlay)

    def reset(self) -> None:
        """Forget everything read (after a rollback, or when the log no longer continues it)."""
        self.base = None
        self.saved = False
        self.seq, self.token, self.base_seq, self.known_from = 0, None, 0, 0
        self.overlay.clear()
        self.gone.clear()
        self.changes.clear()
        self.dead = None
        self._ov = None
        self._read_whole = False
        self._written_whole = None

    def _identity(self) -> dict[str, Any]:
        try:
            st = os.stat(self.store.path)
            where: list[int | None] = [st.st_dev, st.st_ino]
        except OSError:
            where = [None, None]
        epoch = self.store.scalar("SELECT epoch FROM vector_epoch WHERE id = 1")
        return {"epoch": epoch, "file": where, "model": self.model_id, "table": self.table, "dim": self.dim}

    def _continues(self, seq: int, token: int | None) -> bool:
        """Whether the log still holds every change after ``seq`` (and ``seq`` is the change it was)."""
        if seq == 0:
            first = self.store.scalar(f"SELECT min(seq) FROM {LOG_TABLE}")
            return first is None or int(first) == 1
        found = self.store.scalar(f"SELECT token FROM {LOG_TABLE} WHERE seq = ?", (seq,))
        return found is not None and int(found) == token

    def _open(self) -> None:
        identity = self._identity()
        if self.file is not None:
            loaded = Base.load(self.file)
            if loaded is not None:
                base, held = loaded
                seq, token = held.pop("seq", None), held.pop("token", None)
                if held == identity and isinstance(seq, int) and self._continues(seq, token):
                    self.base, self.saved, self.seq, self.token = base, True, seq, token
                    self.base_seq = self.known_from = seq
                    return
                log.info("vector index file %s does not match the database", self.file)
        if not self.options.build:
            raise Unbuilt(f"no usable vector index file for {self.table}")
        self.seq, self.token = self._head()
        self.base_seq = self.known_from = self.seq
        self.base = self._read_all()
        self.saved = False
        self._read_whole = True

    def _head(self) -> tuple[int, int | None]:
        row = self.store.one(f"SELECT seq, token FROM {LOG_TABLE} ORDER BY seq DESC LIMIT 1")
        return (0, None) if row is None else (int(row[0]), int(row[1]))

    def _read_all(self, *, searchable: bool = True) -> Base:
        """Every row of the table, from sqlite-vec's storage tables when they read as expected, else through vec0.
        Not ``searchable``: only for comparing (see :meth:`Base.build`)."""
        from engram_cli.store import vec0_storage

        whole = vec0_storage.read(self.store, self.table, self.dim)
        if whole is not None:
            return Base.build(
                whole.pks, whole.matrix, whole.codes, whole.vocab, self.dim, ordered=True, searchable=searchable
            )
        pks: list[int] = []
        blobs: list[bytes] = []
        meta: list[tuple[str, str, str, str]] = []
        for pk, blob, ns, status, mtype, agent in self.store.rows(
            f"SELECT memory_pk, embedding, namespace, status, memory_type, agent_id FROM {self.table}"
        ):
            pks.append(int(pk))
            blobs.append(blob)
            meta.append((str(ns), str(status), str(mtype), str(agent)))
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(pks), self.dim)
        del blobs
        return Base.from_rows(np.asarray(pks, dtype=np.int64), matrix, meta, self.dim)

    def _catch_up(self) -> None:
        changed = self.store.rows(
            f"SELECT seq, model_id, memory_pk, token FROM {LOG_TABLE} WHERE seq > ? ORDER BY seq", (self.seq,)
        )
        if not changed:
            return
        self.seq, self.token = int(changed[-1][0]), int(changed[-1][3])
        mine = [(int(seq), int(pk)) for seq, model, pk, _ in changed if model == self.model_id]
        if mine:
            self._apply(mine, self.rows_of(sorted({pk for _, pk in mine})))

    def note(self, seq: int, token: int, pk: int, change: Callable[[Row | None], Row | None]) -> None:
        """A change this connection has just made to the table and logged as ``seq``: ``change`` makes the
        row ``pk`` holds now from the one it held (None: none). Taken as it is, without reading the row
        back, when the index holds every change before it; otherwise the next refresh reads it from the table."""
        if self.base is not None and seq == self.seq + 1:
            row = change(self.current(pk))
            self.seq, self.token = seq, token
            self._apply([(seq, pk)], {} if row is None else {pk: row})

    def current(self, pk: int) -> Row | None:
        """The row of ``pk`` as the index holds it now (None when it has none)."""
        if pk in self.overlay:
            return self.overlay[pk]
        if pk in self.gone or self.base is None:
            return None
        at = self.base.row_of([pk]).get(pk)
        if at is None or (self.dead is not None and self.dead[at]):
            return None
        return (self.base.a["matrix"][at], *self.base.meta_of(at))

    def _apply(self, mine: list[tuple[int, int]], found: dict[int, Row]) -> None:
        """Take in changes (seq, pk), in order, whose rows as they are now are ``found`` (absent: gone)."""
        self.changes.extend(mine)
        pks = sorted({pk for _, pk in mine})
        for pk in pks:
            if pk in found:
                self.overlay[pk] = found[pk]
                self.gone.discard(pk)
            else:
                self.overlay.pop(pk, None)
                self.gone.add(pk)
        assert self.base is not None
        rows = self.base.row_of(pks)
        if rows:
            if self.dead is None:
                self.dead = np.zeros(self.base.n, dtype=bool)
            self.dead[list(rows.values())] = True
        self._ov = None

    def rows_of(self, pks: Sequence[int]) -> dict[int, Row]:
        """The table's rows of ``pks`` that exist now.

        sqlite-vec answers one ``memory_pk = ?`` in about 0.6 ms at 100k rows, and ``memory_pk IN (...)``
        by reading its whole table. The rows are read from its storage tables instead
        (:func:`~engram_cli.store.vec0_storage.read_rows`, about 50 µs a row); when those do not read
        as expected, a few rows are asked of vec0 one by one, many by one scan.
        """
        if not pks:
            return {}
        if self._storage is not False:
            from engram_cli.store import vec0_storage

            first = self._storage is None
            read = vec0_storage.read_rows(self.store, self.table, self.dim, pks, check_layout=first)
            # The first read of this process is checked against vec0's own answer (on a row it found, when
            # it found one); the layout of a table does not change while a process has it open.
            probe = next(iter(read), pks[0]) if read is not None else pks[0]
            if read is not None and (
                not first or vec0_storage.same_as_vec0(self.store, self.table, probe, read.get(probe))
            ):
                self._storage = True
                return read
            log.info("vector index of %s: reading changed rows through vec0", self.model_id)
            self._storage = False
        columns = f"SELECT memory_pk, embedding, namespace, status, memory_type, agent_id FROM {self.table}"
        size = self.base.n if self.base is not None else 0
        if len(pks) * POINT_LOOKUPS_PER_SCAN <= size:
            found = [row for pk in pks for row in self.store.rows(f"{columns} WHERE memory_pk = ?", (pk,))]
        else:
            found = [
                row
                for chunk in chunks(pks)
                for row in self.store.rows(f"{columns} WHERE memory_pk IN ({marks(chunk)})", chunk)
            ]
        return {
            int(pk): (np.frombuffer(blob, dtype=np.float32), str(ns), str(status), str(mtype), str(agent))
            for pk, blob, ns, status, mtype, agent in found
        }

    def _fold(self) -> None:
        """Make base + overlay the new base (in memory; the file is rewritten when it may be)."""
        assert self.base is not None
        keep = np.ones(self.base.n, dtype=bool) if self.dead is None else ~self.dead
        self.base = self.base.merged(keep, self.overlay)
        self.base_seq = self.seq
        self.saved = False
        self._read_whole = False
        self._written_whole = None
        self.overlay.clear()
        self.gone.clear()
        if len(self.changes) > CHANGES_KEEP:
            self.known_from = self.changes[-CHANGES_KEEP - 1][0]
            del self.changes[:-CHANGES_KEEP]
        self.dead = None
        self._ov = None

    def _should_save(self) -> bool:
        if not self._writable or self.base is None or not self.options.build:
            return False
        # Never while this connection holds uncommitted writes: a rollback would leave the file wrong.
        if self.store.conn.txn_state() == apsw.SQLITE_TXN_WRITE:
            return False
        if not self.saved:
            return True
        purged = self.dead is not None and bool(self.gone) and bool(self.base.row_of(self.gone))
        return purged or len(self.overlay) + len(self.gone) >= self._persist_at()

    def _persist_at(self) -> int:
        return persist_at(self.base.n if self.base is not None else 0)

    def _save(self) -> None:
        if self.overlay or self.gone:
            self._fold()
        assert self.base is not None and self.file is not None
        identity = {**self._identity(), "seq": self.seq, "token": self.token}
        with _LOADED_LOCK:  # the mapped version is old now: let it go with its last user
            _LOADED.pop(str(self.file), None)
        try:
            self.base.save(self.file, identity)
        except OSError as exc:
            log.info("vector index: cannot write %s (%s); keeping it in memory", self.file, exc)
            self._writable = False
            return
        self.saved = True
        if self._read_whole:
            with contextlib.suppress(OSError):
                st = os.stat(self.file)
                self._written_whole = ((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), self.base_seq)

    def check(self) -> str | None:
        """Why the file does not hold exactly what the vec0 table holds (None when it does, or there is no file).

        Compares every row: pks, filter columns and vectors, after the changes the log lists since. When
        this process wrote the file from a whole read of the table and nothing has rewritten it since (an
        audit of a copied database builds the index, then checks it), the rows of that read are compared
        with the file instead of reading the table a second time.
        """
        if self.file is None or not self.file.exists():
            return None
        loaded = Base.load(self.file)
        if loaded is None:
            return "unreadable or truncated"
        base, held = loaded
        seq, token = held.pop("seq", None), held.pop("token", None)
        with self.store.read():
            if held != self._identity():
                return "written for another database or model"
            if not isinstance(seq, int) or not self._continues(seq, token):
                return "older than the change log"
            changed = {int(pk) for (pk,) in self.store.rows(
                f"SELECT memory_pk FROM {LOG_TABLE} WHERE seq > ? AND model_id = ?", (seq, self.model_id))}  # fmt: skip
            truth = self._whole_read_of(seq) or self._read_all(searchable=False)
        mine, theirs = _by_pk(base, changed), _by_pk(truth, changed)
        if not np.array_equal(base.a["pks"][mine], truth.a["pks"][theirs]):
            return "its rows are not the table's rows"
        for name in FILTERS:
            ours = np.asarray(base.vocab[name], dtype=object)[base.a[name][mine]] if len(mine) else []
            held = np.asarray(truth.vocab[name], dtype=object)[truth.a[name][theirs]] if len(theirs) else []
            if not np.array_equal(ours, held):
                return "a namespace, status, type or agent differs from the table"
        for lo in range(0, len(mine), BLOCK):
            if not np.array_equal(base.a["matrix"][mine[lo : lo + BLOCK]], truth.a["matrix"][theirs[lo : lo + BLOCK]]):
                return "a vector differs from the table"
        return None

    def _whole_read_of(self, seq: int) -> Base | None:
        """The base this process read whole from the table and wrote to the file, when the file is still that
        one and holds that read (at ``seq``); else None."""
        if self._written_whole is None or self.file is None:
            return None
        try:
            st = os.stat(self.file)
        except OSError:
            return None
        if ((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), seq) != self._written_whole:
            return None
        return self.base

    def rebuild(self) -> None:
        """Read the table again and rewrite the file (when there is one)."""
        with contextlib.suppress(OSError):
            if self.file is not None:
                self.file.unlink(missing_ok=True)
        self.reset()
        self._writable = self.file is not None
        self.refresh()

    # -- searching -------------------------------------------------------------------------

    def _overlay_arrays(self) -> dict[str, Any]:
        if self._ov is None:
            pks = sorted(self.overlay)
            rows = [self.overlay[pk] for pk in pks]
            matrix = np.stack([r[0] for r in rows]).astype(np.float32) if rows else np.zeros((0, self.dim), np.float32)
            self._ov = {"pks": np.asarray(pks, dtype=np.int64), "matrix": matrix, "norms": _norms(matrix),
                        "meta": [r[1:] for r in rows]}  # fmt: skip
        return self._ov

    def search(
        self, queries: np.ndarray, k: int, spec: Filter, *, exact: bool = False, shift: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """Per query (rows of ``queries``): the ``k`` nearest rows passing ``spec``, (pk, cosine), best first.

        Approximate (sign bits, then exact scores of the best candidates) when more than ``approx_min_rows``
        rows are to be searched, unless ``exact``. With ``shift``, one more list comes last: that of the
        first query (normalised) moved by ``shift`` and normalised again, scored in the same pass.
        """
        return [
            list(zip(p.tolist(), s.tolist(), strict=True))
            for p, s in self.search_arrays(queries, k, spec, exact=exact, shift=shift)
        ]

    def search_arrays(
        self, queries: np.ndarray, k: int, spec: Filter, *, exact: bool = False, shift: np.ndarray | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`search`'s answer as two arrays per query, pks and cosines, best first: for callers that
        keep many long lists (a batch writer's hundreds of queries, each with hundreds of spare neighbours)."""
        self.refresh()
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        qn = np.linalg.norm(q, axis=1)
        qn[qn == 0] = 1.0
        q = q / qn[:, None]
        moved: Moved | None = None
        if shift is not None:
            delta = np.asarray(shift, dtype=np.float32)
            target = q[0] + delta
            length = float(np.linalg.norm(target))
            moved = Moved(len(q), delta, 1.0 / length if length else 0.0)
            q = np.vstack([q, target / (length or 1.0)])
        found: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(len(q))]
        base = self.base
        assert base is not None
        slices = base.slices(spec.namespaces)
        total = sum(hi - lo for lo, hi in slices)
        approx = not exact and 0 < self.options.approx_min_rows <= total
        for lo, hi in slices:
            mask = base.mask(lo, hi, spec, self.dead)
            if mask is not None and not mask.any():
                continue
            if approx:
                self._approx(q, k, lo, hi, mask, found)
            else:
                self._exact(q, k, lo, hi, mask, found, moved)
        ov = self._overlay_arrays()
        if len(ov["pks"]):
            keep = np.fromiter((spec.admits(*m) for m in ov["meta"]), dtype=bool, count=len(ov["meta"]))
            if keep.any():
                rows = np.flatnonzero(keep)
                scores = (ov["matrix"][rows] @ q.T) / ov["norms"][rows, None]
                for j in range(len(q)):
                    found[j].append((ov["pks"][rows], scores[:, j]))
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for parts in found:
            if not parts:
                out.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)))
                continue
            pks = np.concatenate([p for p, _ in parts])
            scores = np.concatenate([s for _, s in parts])
            best = _top(scores, k)
            out.append((pks[best], scores[best]))
        return out

    def _exact(
        self, q: np.ndarray, k: int, lo: int, hi: int, mask: np.ndarray | None, found: list[Any], moved: Moved | None
    ) -> None:
        base = self.base
        assert base is not None
        pks, norms, matrix = base.a["pks"][lo:hi], base.a["norms"][lo:hi], base.a["matrix"][lo:hi]
        rows: np.ndarray | None = None
        if mask is not None and mask.sum() * 4 < len(mask):  # few rows pass: score only those
            rows = np.flatnonzero(mask)
            pks, norms, matrix, mask = pks[rows], norms[rows], matrix[rows], None
        if len(q) > FEW_QUERIES:
            # A batch of queries (a writer's merge check): one matrix product for all, then each row's top k.
            scores = q @ matrix.T
            scores /= norms[None, :]
            if mask is not None:
                scores[:, ~mask] = -np.inf
            n = scores.shape[1]
            picked = _best_of_rows(scores, k) if n > k else np.broadcast_to(np.arange(n), (len(q), n))
            top = np.take_along_axis(scores, picked, axis=1)
            order = np.argsort(-top, axis=1, kind="stable")
            picked, top = np.take_along_axis(picked, order, axis=1), np.take_along_axis(top, order, axis=1)
            for j in range(len(q)):
                finite = np.isfinite(top[j])
                found[j].append((pks[picked[j][finite]], top[j][finite]))
            return
        # A query or two (recall): one matrix-vector product each, the top k picked in place. At 100k rows two
        # of them took 13 ms where one product with the queries as a matrix took 19-23 ms. The moved query
        # needs none: its scores are the first query's plus the shift's, kept per base.
        n = len(pks)
        rest = None if mask is None else ~mask
        first: np.ndarray | None = None
        for j in range(len(q)):
            if moved is not None and j == moved.at and first is not None:
                part = base.shift_scores(moved.delta, lo, hi)
                scores = (first + (part if rows is None else part[rows])) * moved.scale
            else:
                scores = matrix @ q[j]
                scores /= norms
                if rest is not None:
                    scores[rest] = -np.inf
                if j == 0:
                    first = scores
            picked = np.argpartition(scores, n - k)[n - k :] if n > k else np.arange(n)
            top = scores[picked]
            order = np.argsort(-top, kind="stable")
            picked, top = picked[order], top[order]
            finite = np.isfinite(top)
            found[j].append((pks[picked[finite]], top[finite]))

    def _approx(self, q: np.ndarray, k: int, lo: int, hi: int, mask: np.ndarray | None, found: list[Any]) -> None:
        base = self.base
        assert base is not None
        columns = base.a["bits"]
        width = -(-self.dim // 8)
        qbits = np.zeros((len(q), len(columns) * 8), dtype=np.uint8)
        qbits[:, :width] = np.packbits((q - base.a["mean"]) > 0, axis=1, bitorder="little")
        qwords = qbits.view(np.uint64)
        n = hi - lo
        want = min(n, max(self.options.rerank, RERANK_PER_K * k))
        far = len(columns) * 64 + 1  # farther than any two codes: where the rows the filters leave out go
        word = np.empty(n, dtype=np.uint64)
        bits = np.empty(n, dtype=np.uint8)
        for j in range(len(q)):
            distance = np.zeros(n, dtype=np.uint16)
            for w, column in enumerate(columns):
                np.bitwise_xor(column[lo:hi], qwords[j, w], out=word)
                np.bitwise_count(word, out=bits)
                np.add(distance, bits, out=distance)
            if mask is not None:
                distance[~mask] = far
            rows = _closest(distance, want, far) + lo  # in file order: the matrix is read front to back
            scores = (base.a["matrix"][rows] @ q[j]) / base.a["norms"][rows]
            best = _top(scores, k)
            found[j].append((base.a["pks"][rows[best]], scores[best]))

    # -- reading vectors ---------------------------------------------------------------------

    def vectors_of(self, pks: Sequence[int], namespace: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The current vectors of ``pks`` (only rows of ``namespace`` when given), as the vec0 table holds them.

        Returns the pks found, in the order asked, and their vectors as one float32 matrix. A row changed
        since the base comes from the overlay; a row gone is left out. Maintenance reads every vector of a
        namespace this way, from the mapped matrix instead of row by row through vec0.
        """
        self.refresh()
        base = self.base
        assert base is not None
        wanted = np.asarray(pks, dtype=np.int64).reshape(-1)
        rows = np.full(len(wanted), -1, dtype=np.int64)
        if base.n and len(wanted):
            order = base.a["order"]
            sorted_pks = base.sorted_pks
            at = np.minimum(np.searchsorted(sorted_pks, wanted), base.n - 1)
            hit = sorted_pks[at] == wanted
            rows[hit] = order[at[hit]]
            if self.dead is not None:
                rows[hit & self.dead[np.maximum(rows, 0)]] = -1
            if namespace is not None:
                code = base.codes["ns"].get(namespace)
                if code is None:
                    rows[:] = -1
                else:
                    rows[(rows >= 0) & (base.a["ns"][np.maximum(rows, 0)] != code)] = -1
        from_overlay: dict[int, np.ndarray] = {}
        if self.overlay and len(wanted):
            for i in np.flatnonzero(np.isin(wanted, np.fromiter(self.overlay, dtype=np.int64))).tolist():
                row = self.overlay[int(wanted[i])]
                if namespace is None or row[1] == namespace:
                    from_overlay[i] = row[0]
        keep = rows >= 0
        if from_overlay:
            keep[list(from_overlay)] = True
        positions = np.flatnonzero(keep)
        matrix = np.empty((len(positions), self.dim), dtype=np.float32)
        in_base = rows[positions] >= 0
        if in_base.any():
            matrix[in_base] = base.a["matrix"][rows[positions[in_base]]]
        if from_overlay:
            at = np.searchsorted(positions, np.fromiter(from_overlay, dtype=np.int64))
            for out, vector in zip(at.tolist(), from_overlay.values(), strict=True):
                matrix[out] = vector
        return wanted[positions], matrix

    # -- batches ---------------------------------------------------------------------------

    def changes_since(self, seq: int) -> list[tuple[int, int]] | None:
        """The changes (seq, pk) of this model after ``seq``, oldest first (None when no longer known)."""
        if self.base is None or seq < self.known_from:
            return None
        return self.changes[bisect.bisect_right(self.changes, seq, key=lambda change: change[0]) :]


class Prefetched:
    """The neighbours of a batch of new vectors, found in one matrix product, kept exact as the batch is written.

    ``near(j)`` answers what a KNN for query ``j`` would answer now: the prefetched lists lose the rows
    changed since (which the batch's own writes change: inserts, supersedes, merges), and the changed
    rows that pass the filter are scored afresh. When too many prefetched rows were lost to be sure of
    the top ``k``, or the index no longer knows every change since, it asks the index again.

    The changed rows are kept as one matrix of unit vectors, grown as changes come, so that each
    answer scores them in one product however many there are.
    """

    def __init__(self, index: VectorIndex, queries: np.ndarray, k: int, spec: Filter, spare: int) -> None:
        self.index = index
        self.queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        self.k = k
        self.spec = spec
        self.ask = k + spare
        self.lists = index.search_arrays(self.queries, self.ask, spec, exact=True)
        self._seen = index.seq  # the changes up to here are in the arrays below
        self._slot: dict[int, int] = {}  # pk changed since the search -> its row below
        self._pks = np.zeros(0, dtype=np.int64)
        self._unit = np.zeros((0, index.dim), dtype=np.float32)  # its unit vector (zeros when gone)
        self._admitted = np.zeros(0, dtype=bool)  # whether it exists and passes the filter
        self._n = 0

    def _follow(self) -> bool:
        """Take in the changes since the last answer; False when the index no longer knows them all."""
        tail = self.index.changes_since(self._seen)
        if tail is None:
            return False
        self._seen = self.index.seq
        for pk in dict.fromkeys(pk for _, pk in tail):
            row = self.index.current(pk)
            slot = self._slot.get(pk)
            if slot is None:
                slot = self._slot[pk] = self._n
                self._n += 1
                if self._n > len(self._pks):
                    grow = max(16, 2 * self._n)
                    self._pks = np.resize(self._pks, grow)
                    self._unit = np.resize(self._unit, (grow, self.index.dim))
                    self._admitted = np.resize(self._admitted, grow)
                self._pks[slot] = pk
            admitted = row is not None and self.spec.admits(*row[1:])
            self._admitted[slot] = admitted
            if admitted:
                assert row is not None
                vector = np.asarray(row[0], dtype=np.float32)
                self._unit[slot] = vector / (float(np.linalg.norm(vector)) or 1.0)
        return True

    def near(self, j: int) -> list[tuple[int, float]]:
        self.index.refresh()
        if not self._follow():
            return self.index.search(self.queries[j : j + 1], self.k, self.spec, exact=True)[0]
        pks, sims = self.lists[j]
        if self._n:
            unchanged = ~np.isin(pks, self._pks[: self._n])
            pks, sims = pks[unchanged], sims[unchanged]
        if len(pks) < self.k and len(self.lists[j][0]) >= self.ask:
            return self.index.search(self.queries[j : j + 1], self.k, self.spec, exact=True)[0]
        # The lists are best first: only the first k that are left can be among the k best.
        kept = list(zip(pks[: self.k].tolist(), sims[: self.k].tolist(), strict=True))
        if self._n:
            q = self.queries[j]
            scores = self._unit[: self._n] @ (q / (float(np.linalg.norm(q)) or 1.0))
            scores[~self._admitted[: self._n]] = -np.inf
            kept.extend((int(self._pks[i]), float(scores[i])) for i in _top(scores, self.k))
        kept.sort(key=lambda h: -h[1])
        return kept[: self.k]
