"""bench/common.py: the interleaved timing rounds the CPU benchmark reports."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "bench_common", Path(__file__).parents[1] / "bench" / "common.py"
)
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)


def test_rounds_rotate_the_order():
    """Each callable is called once per round, and each round starts one
    further on, so none always runs right after the same other one."""
    calls: list[str] = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    result = common.medians(fns, min_runs=4, max_runs=4, budget_s=0.0)
    assert set(result) == {"a", "b", "c"}
    warm_up, rounds = calls[:3], calls[3:]
    assert warm_up == ["a", "b", "c"]
    assert rounds == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]


def test_rotated():
    assert common.rotated([1, 2, 3], 4) == [2, 3, 1]
    assert common.rotated([], 3) == []
