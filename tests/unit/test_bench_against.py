"""bench.against's verdict: the first run of a pair costing more cancels out of it."""

from __future__ import annotations

import math

import pytest

from bench.against import balanced_ratios


def test_the_first_runs_extra_cost_cancels() -> None:
    # this checkout 5% slower; the first run of a pair costs 20% more, whoever runs it
    true, bias = 1.05, 1.2
    ratios = [true / bias, true * bias] * 3
    assert all(math.isclose(r, true) for r in balanced_ratios(ratios))
    assert sorted(ratios)[len(ratios) // 2] != pytest.approx(true)  # the plain median misses it


def test_a_last_odd_pair_stands_alone() -> None:
    assert balanced_ratios([0.5, 2.0, 1.3]) == [1.0, 1.3]
    assert balanced_ratios([]) == []
