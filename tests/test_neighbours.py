"""neighbours: the pairs above a threshold, found tile by tile, are exactly the pairs a full product finds."""

from __future__ import annotations

import numpy as np
import pytest

from engram_cli.memory import neighbours
from engram_cli.memory.neighbours import BLOCK, Neighbours, Pairs, near_pairs, pairs_above, pairs_by_tile, tiles


def _integer_rows(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    # Small integers: every product is exact in float32 whatever the order of summation, so a
    # threshold equal to a product is met exactly, in the tiles and in the full product alike.
    return np.random.default_rng(seed).integers(-3, 4, size=(n, dim)).astype(np.float32)


def _brute(matrix: np.ndarray, threshold: float, other: np.ndarray | None = None) -> set[tuple[int, int, float]]:
    full = matrix @ (matrix if other is None else other).T
    return {
        (i, j, float(full[i, j]))
        for i in range(full.shape[0])
        for j in range(full.shape[1])
        if full[i, j] >= threshold and (other is not None or i < j)
    }


def _found(pairs: Pairs) -> set[tuple[int, int, float]]:
    return set(zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist(), strict=True))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 16, 33])
@pytest.mark.parametrize("block", [1, 3, 8, 16, 64])
def test_pairs_equal_the_full_product_at_every_tile_size(n: int, block: int) -> None:
    matrix = _integer_rows(n)
    full = matrix @ matrix.T
    # Thresholds that some products equal exactly (>= keeps them), and ones nothing reaches.
    values = sorted({float(v) for v in full[np.triu_indices(n, 1)]}) if n > 1 else []
    for threshold in [*values[:: max(1, len(values) // 6)], -1e9, 1e9]:
        pairs = pairs_above(matrix, threshold, block=block)
        assert len(pairs) == len(_found(pairs))  # no pair twice
        assert _found(pairs) == _brute(matrix, threshold)
        assert all(i < j for i, j in zip(pairs.left.tolist(), pairs.right.tolist(), strict=True))


@pytest.mark.parametrize("block", [1, 5, 16, 100])
def test_pairs_between_two_matrices_include_every_row_of_both(block: int) -> None:
    left, right = _integer_rows(23, seed=1), _integer_rows(17, seed=2)
    for threshold in (-1e9, 0.0, 3.0, 9.0):
        assert _found(pairs_above(left, threshold, other=right, block=block)) == _brute(left, threshold, right)


def test_unit_vectors_at_the_default_tile_size_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((BLOCK + 37, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    full = matrix @ matrix.T
    i, j = np.nonzero(np.triu(full >= 0.8, k=1))
    pairs = pairs_above(matrix, 0.8)
    assert set(zip(pairs.left.tolist(), pairs.right.tolist(), strict=True)) == set(
        zip(i.tolist(), j.tolist(), strict=True)
    )
    assert np.allclose(pairs.score, full[pairs.left, pairs.right], atol=1e-5)


def test_tiles_cover_the_upper_triangle_once() -> None:
    n = 10
    seen = np.zeros((n, n), dtype=int)
    for rs, re_, cs, ce in tiles(n, size=3):
        block = np.zeros((n, n), dtype=int)
        block[rs:re_, cs:ce] = 1
        seen += np.triu(block, k=1)
    assert (seen == np.triu(np.ones((n, n), dtype=int), k=1)).all()
    with pytest.raises(ValueError, match="at least one row"):
        list(tiles(3, size=0))


def test_a_caller_may_stop_after_the_first_tile() -> None:
    matrix = np.ones((10, 4), dtype=np.float32)
    batches = pairs_by_tile(matrix, 0.0, block=4)
    first = next(batches)
    assert _found(first) == {(i, j, 4.0) for i in range(4) for j in range(4) if i < j}


def test_neighbours_list_the_closest_first_and_ties_by_row() -> None:
    pairs = Pairs(
        np.array([0, 0, 1, 2], dtype=np.int64),
        np.array([1, 3, 3, 3], dtype=np.int64),
        np.array([0.9, 0.95, 0.9, 0.9], dtype=np.float32),
    )
    near = Neighbours.of(5, pairs)
    assert near.of_row(3)[0] == [0, 1, 2]  # 0.95 first, then the tie at 0.9 by row
    assert near.of_row(0)[0] == [3, 1]
    assert near.count(4) == 0 and near.of_row(4) == ([], [])
    assert near.of_row(1) == ([0, 3], [pytest.approx(0.9), pytest.approx(0.9)])


# -- near_pairs: every pair of a small set, a cell search above EXACT_ROWS ---------------------


def _clustered(clusters: int, size: int, dim: int = 32, noise: float = 0.12, seed: int = 0) -> np.ndarray:
    """Unit rows in tight groups around random directions (cosine ~0.99 within a group, ~0 across)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    rows = np.repeat(centres, size, axis=0) / np.sqrt(dim) + noise * rng.standard_normal(
        (clusters * size, dim)
    ) / np.sqrt(dim)
    rows = rows[rng.permutation(len(rows))]
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_near_pairs_of_a_small_set_are_every_pair_in_order() -> None:
    matrix = _integer_rows(40)
    for threshold in (-1e9, 0.0, 6.0, 1e9):
        pairs = near_pairs(matrix, threshold, per_row=1)  # below EXACT_ROWS: per_row does not cut
        assert _found(pairs) == _brute(matrix, threshold)
        keys = pairs.left * 40 + pairs.right
        assert (np.diff(keys) > 0).all()


def test_the_cell_search_finds_the_close_pairs_with_their_exact_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neighbours, "CELL", 16)  # many cells on a small set
    matrix = _clustered(clusters=40, size=12)
    threshold = 0.9
    truth = _brute(matrix, threshold)
    pairs = near_pairs(matrix, threshold, per_row=64, exact_rows=0)
    assert len(pairs) == len({(i, j) for i, j, _ in _found(pairs)})  # no pair twice
    assert (pairs.left < pairs.right).all()
    full = matrix @ matrix.T
    assert np.allclose(pairs.score, full[pairs.left, pairs.right], atol=1e-5)
    assert (pairs.score >= threshold).all()
    wanted = {(i, j) for i, j, _ in truth}
    got = {(i, j) for i, j, _ in _found(pairs)}
    assert len(got & wanted) >= 0.98 * len(wanted)
    # The same rows and seed give the same pairs.
    again = near_pairs(matrix, threshold, per_row=64, exact_rows=0)
    assert _found(again) == _found(pairs)


def test_each_row_keeps_its_closest_pairs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neighbours, "CELL", 16)
    matrix = _clustered(clusters=10, size=40)
    pairs = near_pairs(matrix, 0.5, per_row=3, exact_rows=0)
    assert 0 < len(pairs) <= 3 * len(matrix)
    full = matrix @ matrix.T
    np.fill_diagonal(full, -np.inf)
    # A row's pairs that it chose itself are among its closest: at least one of every pair's rows
    # has the other within its top 3.
    top3 = np.argsort(-full, axis=1)[:, :3]
    for i, j in zip(pairs.left.tolist(), pairs.right.tolist(), strict=True):
        assert j in top3[i] or i in top3[j]


def test_near_pairs_needs_room_for_a_neighbour() -> None:
    with pytest.raises(ValueError):
        near_pairs(_clustered(2, 5), 0.5, per_row=0, exact_rows=0)
