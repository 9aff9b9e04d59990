"""tirc's own min and max of index expressions (ir_text/index_functions.py):
every simplification keeps the value at every point of the loop grid, the
results are sympy's Min and Max to the rest of the compiler, the examples of
docs/ir.md hold, and text prints back byte for byte."""

from __future__ import annotations

import random

import pytest
import sympy
import torch

from ir_text import FloorDiv, Mod, index_max, index_min
from ir_text.index import eval_index, index_var, render_index
from ir_text.index_functions import IndexMax, IndexMin, never_negative

i0, i1, i2, r0 = (index_var(name) for name in ("i0", "i1", "i2", "r0"))
RANGES = {"i0": 7, "i1": 5, "i2": 4, "r0": 3}


def grid(expr) -> torch.Tensor:
    names = sorted(RANGES)
    grids = torch.meshgrid(*(torch.arange(RANGES[n]) for n in names), indexing="ij")
    return eval_index(sympy.sympify(expr), dict(zip(names, grids))).expand(grids[0].shape)


def random_index(rng: random.Random, depth: int):
    """A random index expression over i0, i1, i2, r0: sums, products by
    constants, floordiv/mod by positive constants, and clamps."""
    leaf = rng.random() < 0.3 or depth == 0
    if leaf:
        return rng.choice([i0, i1, i2, r0, sympy.Integer(rng.randint(-6, 30))])
    kind = rng.choice(["add", "scale", "floordiv", "mod", "min", "max"])
    a, b = random_index(rng, depth - 1), random_index(rng, depth - 1)
    if kind == "add":
        return a + b
    if kind == "scale":
        return rng.choice([-3, -1, 2, 5]) * a
    if kind in ("floordiv", "mod"):
        return (FloorDiv if kind == "floordiv" else Mod)(a, rng.randint(1, 6))
    return (index_min if kind == "min" else index_max)(a, b)


@pytest.mark.parametrize("seed", range(60))
def test_a_clamp_keeps_its_value_everywhere(seed):
    rng = random.Random(seed)
    for _ in range(6):
        a, b = random_index(rng, 3), random_index(rng, 3)
        assert torch.equal(grid(index_min(a, b)), torch.minimum(grid(a), grid(b))), (a, b)
        assert torch.equal(grid(index_max(a, b)), torch.maximum(grid(a), grid(b))), (a, b)


@pytest.mark.parametrize("seed", range(30))
def test_never_negative_is_never_wrong(seed):
    rng = random.Random(seed)
    for _ in range(10):
        expr = random_index(rng, 3)
        if never_negative(expr):
            assert bool((grid(expr) >= 0).all()), expr


@pytest.mark.parametrize(
    "built, canonical",
    [
        (index_max(i1, 0), "i1"),
        (index_min(3, 5), "3"),
        (index_min(i0, i0 + 2), "i0"),
        (index_min(5, index_min(i0, 3)), "min(3, i0)"),
        (index_max(0, FloorDiv(i0, 2)), "floordiv(i0, 2)"),
        (index_min(i0, index_max(i0, i1)), "i0"),
        (index_max(0, i1 - 16), "max(0, i1 - 16)"),
        (index_min(27, 2 * i2 + index_min(1, index_min(r0, index_max(0, 27 - 2 * i2)))), None),
    ],
)
def test_the_documented_simplifications(built, canonical):
    if canonical is not None:
        assert render_index(built) == canonical
    else:  # nothing to simplify: the max-pool window's clamp stays as written
        assert render_index(built) == "min(27, 2*i2 + min(1, min(r0, max(0, -2*i2 + 27))))"


def test_clamps_are_sympy_s_min_and_max_to_the_compiler():
    clamp = index_min(i1, index_max(0, i0 - 3))
    assert isinstance(clamp, sympy.Min) and isinstance(clamp.args[1], sympy.Max)
    assert type(clamp) is IndexMin and type(clamp.args[1]) is IndexMax
    assert clamp.is_nonnegative and clamp.is_integer
    assert clamp.subs({i0: 1, i1: 4}) == 0  # substitution folds through the same rules
    assert clamp.xreplace({i0: sympy.Integer(9)}) == index_min(i1, 6)
    assert IndexMin(i0, i1) == IndexMin(i1, i0) and hash(IndexMin(i0, i1)) == hash(IndexMin(i1, i0))


def test_clamps_print_back_byte_for_byte():
    from ir_text import parse, print_ir

    index = "min(27, 2*i2 + min(1, min(r0, max(0, -2*i2 + 27))))"
    text = (
        'tirc 0.1 stage=schedule source="clamps"\noptions {}\n'
        'input %x : f32[1, 1, 28, 28] {device = "cpu", seed = 0, strides = [784, 784, 28, 1]}\n\n'
        "%buf0 = loop.reduction [i0 < 1, i1 < 1, i2 < 14, i3 < 14; r0 < 2, r1 < 2] : f32[1, 1, 14, 14]"
        " strides [196, 196, 14, 1] {\n"
        f"  %0 = load %x[28*{index} + min(27, 2*i3 + min(1, min(r1, max(0, -2*i3 + 27))))] : f32\n"
        "  %1 = reduce(%0) {reduction = max} : f32\n"
        "  store %1\n"
        "}\n\nreturn (%buf0)\n"
    )
    printed = print_ir(parse(text, "clamps.tir"))
    assert printed == print_ir(parse(printed, "again.tir")) and index in printed
    assert print_ir(parse(printed, "fast.tir", positions=False)) == printed
