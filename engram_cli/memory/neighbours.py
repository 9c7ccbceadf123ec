"""Pairs of vectors whose cosine reaches a threshold: every pair of a small set, candidates from cells of a large one.

compact and audit both need the pairs of memories of a namespace that are similar enough to
matter (a cluster, a duplicate, a conflict), and almost no pair is.

Up to :data:`EXACT_ROWS` rows every pair is compared: the products are taken tile by tile
(``block`` x ``block`` float32 at a time, 16 MB at 2048), each tile is compared with the threshold
in numpy and only the pairs above it leave numpy, so memory stays bounded and Python only ever
sees the few pairs that pass. Among the rows of one matrix each unordered pair is computed once
(tiles on and above the diagonal).

Above it, comparing every pair grows with the square of the rows (a 100k namespace is 5 billion
products), so :func:`near_pairs` searches instead, the way an inverted-file vector index does: the
rows are split into cells of about :data:`CELL` rows around centroids found by spherical k-means,
and each row is compared only with the rows of its :data:`PROBES` nearest cells (:data:`CLOSE_PROBES`
for pairs at :data:`CLOSE_PAIR` or closer, such as merge candidates). A pair is found
when either row's cell is among the other's nearest, which close pairs almost always are; the
scores of the pairs found are exact, and each row keeps at most its ``per_row`` closest. The work
grows with rows x PROBES x CELL, near linearly.

The rows are expected to be unit vectors, so a product is a cosine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

BLOCK = 2048  # rows and columns per tile: 2048 x 2048 float32 is 16 MB
# Up to this many rows every pair is compared (at 10k, 50M products: under a second).
EXACT_ROWS = 10_000
CELL = 256  # rows per cell of the search, on average
PROBES = 8  # cells each row is compared with: its own and the next nearest
# Pairs at least this close (about 14 degrees apart) lie in a row's own cell or the next few: at 0.975, the
# merge threshold, 4 probes found every pair that 8 found on 5,438 real e5 vectors (cells of 64) and on the
# 38k namespace of the 100k bench database (scripts/bench_pairs.py --probes), in half the products.
CLOSE_PAIR = 0.97
CLOSE_PROBES = 4
# Closest pairs a row keeps in the cell search, unless its caller needs more (compact's clusters).
CLOSEST = 32
TRAIN_ROWS = 8192  # rows the centroids are fitted on at least (a seeded sample; 32 per cell above)
TRAIN_ROUNDS = 5
ASSIGN_BLOCK = 8192  # rows scored against every centroid at once


@dataclass(frozen=True)
class Pairs:
    """Pairs (left[k], right[k]) with cosine score[k]: row numbers of the matrices searched."""

    left: np.ndarray  # int64
    right: np.ndarray  # int64
    score: np.ndarray  # float32

    def __len__(self) -> int:
        return len(self.left)

    def take(self, keep: np.ndarray | slice) -> Pairs:
        """The pairs where ``keep`` (a boolean mask, an index array or a slice) selects them."""
        return Pairs(self.left[keep], self.right[keep], self.score[keep])

    @classmethod
    def empty(cls) -> Pairs:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))

    @classmethod
    def concat(cls, parts: list[Pairs]) -> Pairs:
        if not parts:
            return cls.empty()
        return cls(
            np.concatenate([p.left for p in parts]),
            np.concatenate([p.right for p in parts]),
            np.concatenate([p.score for p in parts]),
        )


def tiles(n: int, m: int | None = None, size: int = BLOCK) -> Iterator[tuple[int, int, int, int]]:
    """(row start, row end, column start, column end) of the tiles of an n x m product.

    Without ``m`` the product is of n rows with themselves, and only tiles on and above the
    diagonal are listed: each unordered pair lies in exactly one of them.
    """
    if size < 1:
        raise ValueError("a tile needs at least one row")
    for rs in range(0, n, size):
        for cs in range(rs if m is None else 0, n if m is None else m, size):
            yield rs, min(n, rs + size), cs, min(n if m is None else m, cs + size)


def pairs_by_tile(
    matrix: np.ndarray, threshold: float, *, other: np.ndarray | None = None, block: int = BLOCK
) -> Iterator[Pairs]:
    """The pairs with cosine >= ``threshold``, one batch per tile, in tile order (row-major inside a tile).

    Without ``other``: pairs i < j of the rows of ``matrix``. With it: every pair (row i of
    ``matrix``, row j of ``other``). A caller that needs only part of them may stop early.
    """
    rows = matrix
    cols = matrix if other is None else other
    for rs, re_, cs, ce in tiles(len(rows), None if other is None else len(cols), block):
        sims = rows[rs:re_] @ cols[cs:ce].T
        above = sims >= threshold
        if other is None and rs == cs:
            above &= np.triu(np.ones(above.shape, dtype=bool), k=1)  # each pair once, never a row with itself
        i, j = np.nonzero(above)
        if len(i):
            yield Pairs(i.astype(np.int64) + rs, j.astype(np.int64) + cs, sims[i, j].astype(np.float32, copy=False))


def pairs_above(matrix: np.ndarray, threshold: float, *, other: np.ndarray | None = None, block: int = BLOCK) -> Pairs:
    """Every pair with cosine >= ``threshold`` (see :func:`pairs_by_tile`), in tile order."""
    return Pairs.concat(list(pairs_by_tile(matrix, threshold, other=other, block=block)))


@dataclass(frozen=True)
class Neighbours:
    """Each row's neighbours from a set of symmetric pairs, closest first (ties: lower row first)."""

    starts: np.ndarray  # row r's neighbours are index[starts[r]:starts[r + 1]]
    index: np.ndarray
    score: np.ndarray

    @classmethod
    def of(cls, n: int, pairs: Pairs) -> Neighbours:
        """The neighbour lists of rows 0..n-1; a pair (i, j) makes j a neighbour of i and i of j."""
        rows = np.concatenate([pairs.left, pairs.right])
        cols = np.concatenate([pairs.right, pairs.left])
        score = np.concatenate([pairs.score, pairs.score])
        order = np.lexsort((cols, -score, rows))
        rows, cols, score = rows[order], cols[order], score[order]
        starts = np.searchsorted(rows, np.arange(n + 1), side="left")
        return cls(starts, cols, score)

    def count(self, row: int) -> int:
        return int(self.starts[row + 1] - self.starts[row])

    def of_row(self, row: int) -> tuple[list[int], list[float]]:
        """Row numbers and cosines of ``row``'s neighbours, closest first."""
        a, b = int(self.starts[row]), int(self.starts[row + 1])
        return self.index[a:b].tolist(), self.score[a:b].tolist()


def near_pairs(
    matrix: np.ndarray,
    threshold: float,
    *,
    per_row: int,
    exact_rows: int | None = None,
    seed: int = 0,
) -> Pairs:
    """Pairs i < j of the rows of ``matrix`` with cosine >= ``threshold``, ordered by (i, j).

    Up to ``exact_rows`` rows (default :data:`EXACT_ROWS`): every such pair (:func:`pairs_above`).
    Above: the pairs a cell search finds (see the module notes), each row keeping at most its
    ``per_row`` closest; the result depends only on the rows and ``seed``.
    """
    n = len(matrix)
    if n <= (EXACT_ROWS if exact_rows is None else exact_rows):
        found = pairs_above(matrix, threshold)
        order = np.lexsort((found.right, found.left))
        return found.take(order)
    if per_row < 1:
        raise ValueError("each row needs room for at least one neighbour")
    x = np.ascontiguousarray(matrix, dtype=np.float32)
    probes = _probe_cells(x, seed, CLOSE_PROBES if threshold >= CLOSE_PAIR else PROBES)
    home = probes[:, 0]
    cells = int(probes.max()) + 1
    members = np.argsort(home, kind="stable")
    member_starts = np.searchsorted(home[members], np.arange(cells + 1))
    flat = probes.ravel()
    askers = np.argsort(flat, kind="stable")
    asker_rows = askers // probes.shape[1]
    asker_starts = np.searchsorted(flat[askers], np.arange(cells + 1))
    parts: list[Pairs] = []
    for c in range(cells):
        mem = members[member_starts[c] : member_starts[c + 1]]
        ask = asker_rows[asker_starts[c] : asker_starts[c + 1]]
        if len(mem) and len(ask):
            parts.append(_cell_pairs(x, ask, mem, c, home, threshold, per_row))
    found = Pairs.concat(parts)
    # Each row keeps its per_row closest of what every cell gave it (rows then closest first).
    order = np.lexsort((found.right, -found.score, found.left))
    found = found.take(order)
    starts = np.searchsorted(found.left, found.left, side="left")
    found = found.take(np.arange(len(found)) - starts < per_row)
    lo, hi = np.minimum(found.left, found.right), np.maximum(found.left, found.right)
    keys, first = np.unique(lo * n + hi, return_index=True)  # a pair found from both sides once
    return Pairs(keys // n, keys % n, found.score[first])


def _cell_pairs(
    x: np.ndarray, ask: np.ndarray, mem: np.ndarray, cell: int, home: np.ndarray, threshold: float, per_row: int
) -> Pairs:
    """(asking row, member row, cosine) above the threshold, at most ``per_row`` per asking row."""
    sims = x[ask] @ x[mem].T
    own = np.flatnonzero(home[ask] == cell)  # the members asking their own cell: not with themselves
    sims[own, np.searchsorted(mem, ask[own])] = -np.inf
    above = sims >= threshold
    crowded = np.flatnonzero(above.sum(axis=1) > per_row)
    if len(crowded):  # rows with more than they may keep: only their closest
        cols = np.argpartition(-sims[crowded], per_row - 1, axis=1)[:, per_row:]
        above[crowded[:, None], cols] = False
    i, j = np.nonzero(above)
    return Pairs(ask[i], mem[j], sims[i, j])


def _probe_cells(x: np.ndarray, seed: int, wanted: int) -> np.ndarray:
    """Per row, the cells to compare it with, nearest first (the first is its own).

    The centroids are fitted by spherical k-means on a seeded sample of the rows, centred on
    their mean: embedding models put every text in one narrow cone, and without the centring
    the cells would be cut by the cone's axis rather than by what the texts are about.
    """
    n, dim = x.shape
    rng = np.random.default_rng(seed)
    mean = x.mean(axis=0, dtype=np.float64).astype(np.float32)
    cells = max(2, round(n / CELL))
    probes = min(wanted, cells)
    sample = np.sort(rng.choice(n, size=min(n, max(TRAIN_ROWS, cells * 32)), replace=False))
    train = _unit(x[sample] - mean)
    centroids = train[rng.choice(len(train), size=cells, replace=False)]
    for _ in range(TRAIN_ROUNDS):
        owner = np.argmax(train @ centroids.T, axis=1)
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=cells)
        sums = np.zeros((cells, dim), dtype=np.float32)
        held = np.flatnonzero(counts)
        sums[held] = np.add.reduceat(train[order], np.concatenate([[0], np.cumsum(counts)[:-1]])[held], axis=0)
        empty = np.flatnonzero(counts == 0)  # an empty cell starts again from a random row
        sums[empty] = train[rng.choice(len(train), size=len(empty), replace=False)]
        centroids = _unit(sums)
    out = np.empty((n, probes), dtype=np.int64)
    for lo in range(0, n, ASSIGN_BLOCK):
        scores = _unit(x[lo : lo + ASSIGN_BLOCK] - mean) @ centroids.T
        near = np.argpartition(-scores, probes - 1, axis=1)[:, :probes]
        order = np.argsort(-np.take_along_axis(scores, near, axis=1), axis=1, kind="stable")
        out[lo : lo + ASSIGN_BLOCK] = np.take_along_axis(near, order, axis=1)
    return out


def _unit(m: np.ndarray) -> np.ndarray:
    out: np.ndarray = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return out
