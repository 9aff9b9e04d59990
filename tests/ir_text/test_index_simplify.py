"""Range-aware index simplification (ir_text/index.py: simplify_index) keeps
every value: each simplified expression is evaluated over its variables' whole
ranges and compared with the original, element by element."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from ir_text import FloorDiv, Mod, simplify_index
from ir_text.index import eval_index, index_var

i0, i1, i2 = (index_var(f"i{k}") for k in range(3))


def values(expr, ranges: dict[str, int]) -> torch.Tensor:
    names = sorted(ranges)
    grids = torch.meshgrid(*(torch.arange(ranges[n]) for n in names), indexing="ij")
    return eval_index(expr, dict(zip(names, grids))).expand(grids[0].shape)


def test_a_reshaped_buffers_split_index_joins_again():
    # A [4, 128, 1024] view of a [512, 1024] buffer read at the latter's loop.
    ranges = {"i0": 512, "i1": 1024}
    expr = 131072 * FloorDiv(1024 * i0 + i1, 131072) + i1 + 1024 * Mod(i0, 128)
    assert simplify_index(expr, ranges) == 1024 * i0 + i1
    assert simplify_index(FloorDiv(1024 * i0 + i1, 131072), ranges) == FloorDiv(i0, 128)


def test_a_remainder_past_the_factor_keeps_the_division():
    ranges = {"i0": 512, "i1": 2048}  # i1 can carry into i0's multiple
    expr = Mod(1024 * i0 + i1, 131072)
    assert simplify_index(expr, ranges) == expr
    assert torch.equal(values(simplify_index(expr, ranges), ranges), values(expr, ranges))


@pytest.mark.parametrize("seed", range(40))
def test_random_divisions_keep_their_values(seed):
    rng = random.Random(seed)
    ranges = {"i0": rng.randint(1, 12), "i1": rng.randint(1, 9), "i2": rng.randint(1, 7)}
    g = rng.choice([1, 2, 3, 4, 8])
    terms = [rng.randint(-3, 3) * g * v for v in (i0, i1)] + [rng.randint(0, 2) * i2, rng.randint(0, 5)]
    inner = sum(terms)
    for divisor, op in itertools.product([g * rng.randint(1, 5), rng.randint(2, 7)], (FloorDiv, Mod)):
        expr = 3 * op(inner, divisor) + i2
        assert torch.equal(values(simplify_index(expr, ranges), ranges), values(expr, ranges)), expr
