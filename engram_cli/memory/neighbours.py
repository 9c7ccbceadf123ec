"""Pairs of vectors whose cosine reaches a threshold, found in square tiles of matrix products.

compact and audit both need every pair of memories of a namespace that is similar enough to
matter (a cluster, a duplicate, a conflict), and almost no pair is. The products are taken tile
by tile (``block`` x ``block`` float32 at a time, 16 MB at 2048), each tile is compared with the
threshold in numpy and only the pairs above it leave numpy, so memory stays bounded at any size
and Python only ever sees the few pairs that pass. Among the rows of one matrix each unordered
pair is computed once (tiles on and above the diagonal).

The rows are expected to be unit vectors, so a product is a cosine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

BLOCK = 2048  # rows and columns per tile: 2048 x 2048 float32 is 16 MB


@dataclass(frozen=True)
class Pairs:
    """Pairs (left[k], right[k]) with cosine score[k]: row numbers of the matrices searched."""

    left: np.ndarray  # int64
    right: np.ndarray  # int64
    score: np.ndarray  # float32

    def __len__(self) -> int:
        return len(self.left)

    def take(self, keep: np.ndarray) -> Pairs:
        """The pairs where ``keep`` (a boolean mask or index array) selects them."""
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
