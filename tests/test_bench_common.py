"""bench/common.py: the interleaved timing rounds the CPU benchmark reports."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "bench_common", Path(__file__).parents[1] / "bench" / "common.py"
)
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)


def test_rounds_vary_what_runs_before_each_call():
    """Each callable is called once per round, and over six rounds of three
    each one runs in each position, and right after each other one within a
    round, equally often."""
    calls: list[str] = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    result = common.medians(fns, min_runs=6, max_runs=6, budget_s=0.0)
    assert set(result) == {"a", "b", "c"}
    warm_up, rounds = calls[:3], [calls[3 + 3 * k : 6 + 3 * k] for k in range(6)]
    assert warm_up == ["a", "b", "c"]
    assert len(calls) == 3 + 18
    assert sorted("".join(r) for r in rounds) == ["abc", "acb", "bac", "bca", "cab", "cba"]
    pairs = Counter((r[j], r[j + 1]) for r in rounds for j in range(2))
    assert set(pairs.values()) == {2} and len(pairs) == 6


def test_ordering():
    assert common.ordering([1, 2, 3], 0) == [1, 2, 3]
    assert common.ordering([1, 2, 3], 7) == [1, 3, 2]
    assert common.ordering([], 3) == []
