"""C++ row passes cut at the points where their loads' clamps switch
(codegen/cpp_segments.py): a concatenation along the reduced dimension
runs one loop per part, each reading its part contiguously. Fresh random
inputs at odd sizes against eager PyTorch, in several dtypes."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from codegen.cpp_segments import MAX_SEGMENTS, segments
from codegen.kernel_plan import Load, Loop
from matching import assert_matches, compiled

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64}


def _patch_merge_norm(x, w, b):
    """Swin's patch merging: the four 2x2 neighbours side by side, then a layer norm over them."""
    parts = [x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]]
    return F.layer_norm(torch.cat(parts, -1), (4 * x.shape[-1],), w, b)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_a_norm_over_a_concatenation_runs_a_loop_per_part(dtype):
    c = 37

    def make():
        return [torch.randn(2, 6, 10, c), torch.randn(4 * c), torch.randn(4 * c)]

    typed = lambda: [t.to(DTYPES[dtype]) for t in make()]  # noqa: E731
    program, actual, expected = compiled(_patch_merge_norm, typed, backend="cpp")
    assert_matches(actual, expected)
    for begin, end in [(0, c), (c, 2 * c), (2 * c, 3 * c), (3 * c, 4 * c)]:
        assert re.search(rf"for \(int64_t r0(_block)? = {begin}; r0(_block)? < {end}", program.code), (
            begin,
            end,
        )


def test_an_argmax_over_a_concatenation_keeps_its_order():
    """The in-order pass (argmax: the first of equal maxima) runs its
    segments one after the other; integer values make ties."""

    def fn(a, b):
        return torch.argmax(torch.cat([a, b], -1), -1), torch.cat([a, b], -1).sum(-1)

    def make():
        return [torch.randint(0, 3, (5, 19)).float(), torch.randint(0, 3, (5, 23)).float()]

    program, actual, expected = compiled(fn, make, backend="cpp")
    assert_matches(actual, expected)


def _loads(*indices):
    return Loop(tuple(Load(f"t{k}", "p_x", index, "f32") for k, index in enumerate(indices)))


def test_segments_follow_the_clamps_and_stay_few():
    loop = _loads("Min(9, r0)", "Min(9, Max(0, r0 - 10)) + 100", "i0 + Min(4, Max(0, r0 - 20))")
    assert segments(loop, "r0", 25) == [(0, 10), (10, 20), (20, 25)]
    assert segments(_loads("i0 + r0"), "r0", 25) == [(0, 25)]
    assert segments(_loads("Min(9, 2*r0)"), "r0", 25) == [(0, 25)]  # not by steps of 1
    many = _loads(*[f"Max(0, r0 - {k})" for k in range(1, MAX_SEGMENTS + 1)])
    assert segments(many, "r0", 100) == [(0, 100)]
