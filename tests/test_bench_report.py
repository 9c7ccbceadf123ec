"""The benchmark's report logic: ratios, targets, exponents and argument checks (no timing is asserted)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

import bench  # noqa: E402


def test_ratio_is_engram_over_floor_and_none_without_floor() -> None:
    assert bench.Row(100_000, "recall (process)", 0.6, 0.3).ratio == pytest.approx(2.0)
    assert bench.Row(100_000, "hook (process)", 0.1, None).ratio is None
    assert bench.Row(None, "x", 1.0, 0.0).ratio is None


def test_a_target_is_judged_only_at_its_size() -> None:
    at_10k = bench.judge(bench.Row(10_000, "recall (process)", 0.9, 0.3), 1.5, at=100_000)
    at_100k = bench.judge(bench.Row(100_000, "recall (process)", 0.9, 0.3), 1.5, at=100_000)
    assert at_10k.met is None and at_10k.target == "<= 1.5x at 100,000"
    assert at_100k.met is False
    assert bench.judge(bench.Row(100_000, "recall (process)", 0.4, 0.3), 1.5, at=100_000).met is True


def test_rates_are_better_when_higher_and_absolute_targets_use_seconds() -> None:
    fast = bench.judge(bench.Row(None, "add", 95.0, 100.0, rate=True), 0.9, higher=True)
    slow = bench.judge(bench.Row(None, "add", 80.0, 100.0, rate=True), 0.9, higher=True)
    assert (fast.met, slow.met) == (True, False)
    hook = bench.judge(bench.Row(100_000, "hook (process)", 0.12, None), 0.150, at=100_000, absolute=True)
    assert hook.met is True and hook.target == "<= 0.15 s at 100,000"


def test_growth_exponent_from_20k_to_100k() -> None:
    rows = [
        bench.Row(20_000, "audit", 2.0, None),
        bench.Row(100_000, "audit", 10.0, None),  # 5x the time for 5x the rows: exponent 1
        bench.Row(20_000, "compact --dry-run", 1.0, None),
        bench.Row(100_000, "compact --dry-run", 25.0, None),  # quadratic
    ]
    found = {r.figure: r for r in bench.exponents(rows)}
    assert found["audit growth exponent 20k->100k"].engram == pytest.approx(1.0)
    assert found["audit growth exponent 20k->100k"].met is True
    assert found["compact --dry-run growth exponent 20k->100k"].engram == pytest.approx(2.0)
    assert found["compact --dry-run growth exponent 20k->100k"].met is False


def test_exact_knn_floor_returns_the_true_neighbours_best_first() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((500, 16)).astype(np.float32)
    queries = rng.standard_normal((3, 16)).astype(np.float32)
    _, answers = bench.exact_knn_floor(matrix, queries, 5)
    for q, top in zip(queries, answers, strict=True):
        assert list(top) == list(np.argsort(-(matrix @ q))[:5])


def test_table_shows_ratio_target_and_verdict() -> None:
    rows = [bench.judge(bench.Row(100_000, "recall (process)", 0.9, 0.3), 1.5, at=100_000)]
    text = bench.table(rows)
    assert "3.00x" in text and "NO" in text and "100,000" in text


def test_bad_arguments_are_refused_with_a_reason() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1000"):
        bench.parse_sizes("10")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown figures"):
        bench.parse_only("recall,teleport")
    assert bench.parse_sizes("10_000,1000") == [1000, 10_000]
