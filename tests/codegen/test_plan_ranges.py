"""Triton plans split a loop variable that every index divides
(codegen/plan_ranges.py): the split indices equal the originals at every
point, divisors that do not nest leave the plan alone, and the transposes
behind a flattening view (MLP-Mixer's token MLP, attention's head split) are
tiled and match eager PyTorch. Runs under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import pytest
import sympy
import torch
import torch.nn.functional as F

import codegen.triton_tiling
import tirc
from codegen.kernel_plan import KernelPlan, Load, Store
from codegen.plan_ranges import split_ranges
from ir_text import FloorDiv, Mod, index_var
from matching import assert_matches

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

i0, i1 = index_var("i0"), index_var("i1")


def plan_of(ranges, loads, store):
    steps = tuple(Load(f"t{k}", "x", index, "f32") for k, index in enumerate(loads))
    steps += (Store("y", store, "t0", "f32"),)
    return KernelPlan("k0", tuple(ranges), (), (("x", "f32"), ("y", "f32")), 1, steps, ("%y",))


def values(plan, point):
    """Every index of the plan at one point of its iteration space."""
    env = {index_var(f"i{k}"): v for k, v in enumerate(point)}
    return [int(sympy.sympify(s.index).xreplace(env)) for s in plan.statements]


def flat_point(ranges, flat):
    out = []
    for n in reversed(ranges):
        out.append(flat % n)
        flat //= n
    return tuple(reversed(out))


def test_a_reshaped_channels_last_read_splits_into_its_dimensions():
    # A group norm's (n, g, c'*h*w) reshape of a channels-last map (4 channels
    # a group, 6 x 5 pixels, 12 channels): c' = i1 // 30, h = i1 // 5 % 6, w =
    # i1 % 5, with the group's multiple left inside the divisions, as views
    # compose them. Every part becomes a variable of its own.
    loads = [
        FloorDiv(120 * i0 + i1, 30) + 12 * Mod(120 * i0 + i1, 5) + 60 * Mod(FloorDiv(120 * i0 + i1, 5), 6)
    ]
    plan = plan_of((3, 120), loads, 120 * i0 + i1)
    split = split_ranges(plan)
    assert split.ranges == (3, 4, 6, 5)
    assert not any(sympy.sympify(s.index).atoms(FloorDiv, Mod) for s in split.statements)
    for flat in range(3 * 120):
        assert values(plan, flat_point(plan.ranges, flat)) == values(split, flat_point(split.ranges, flat))


def test_tiling_ignores_a_strided_read_that_is_contiguous_along_nothing():
    # x is i1 (the big contiguous load and the store); the only other read
    # that moves along i1 is strided along both variables, so no y follows
    # from it: a 1-D or rows kernel, not a crash looking for y.
    loads = [64 * i0 + i1, i0, 2 * i1 + 128 * i0]
    choice = codegen.triton_tiling.choose(plan_of((64, 64), loads, 64 * i0 + i1))
    assert choice is None or choice.kind != "transpose"


def test_split_indices_equal_the_originals_everywhere():
    # i0 in 24 used as i0 // 6, i0 % 6, i0 % 2 (divides 6), i0 // 12 (a
    # multiple of 6), and whole: split until no index divides a variable.
    loads = [
        5 * FloorDiv(i0, 6) + 100 * Mod(i0, 6) + i1,
        Mod(i0, 2) + 7 * FloorDiv(i0, 12) + 3 * i1,
        i0 + 24 * i1,
    ]
    plan = plan_of((24, 5), loads, 5 * i0 + i1)
    split = split_ranges(plan)
    assert split.ranges == (2, 2, 3, 2, 5)
    assert split_ranges(split) == split
    assert not any(sympy.sympify(s.index).atoms(FloorDiv, Mod) for s in split.statements)
    for flat in range(24 * 5):
        assert values(plan, flat_point(plan.ranges, flat)) == values(split, flat_point(split.ranges, flat))


def test_divisors_that_do_not_nest_leave_the_plan():
    plan = plan_of((12, 5), [FloorDiv(i0, 3) + Mod(i0, 4) + i1], 5 * i0 + i1)
    assert split_ranges(plan) == plan


def test_a_divided_expression_leaves_the_plan():
    plan = plan_of((12, 5), [FloorDiv(i0 + i1, 3)], 5 * i0 + i1)
    assert split_ranges(plan) == plan


def mixer_token_input(x, w, b):
    # MLP-Mixer: the layer norm of (B, T, C), transposed and flattened for the token MLP.
    return F.layer_norm(x, (x.shape[-1],), w, b).transpose(1, 2).reshape(-1, x.shape[1]) * 2


def head_split(x):
    # Attention's heads: (B, S, H * D) -> (B * H, S, D).
    b, s, _ = x.shape
    return (x * 0.5).view(b, s, 3, 17).permute(0, 2, 1, 3).reshape(b * 3, s, 17)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "fn, shapes",
    [(mixer_token_input, [(3, 37, 29), (29,), (29,)]), (head_split, [(5, 37, 51)])],
    ids=["mixer_token_input", "head_split"],
)
def test_flattened_transposes_are_tiled(fn, shapes, dtype):
    make = lambda: [torch.randn(s).to(dtype) for s in shapes]  # noqa: E731
    program = tirc.compile(fn, make(), backend="triton")
    fresh = make()
    assert_matches(program(*fresh), fn(*fresh))
    assert "yindex = " in program.code  # a 2-D tile, not a 1-D block of strided lanes
