"""The Triton backend's kernel shapes for speed, through the interpreter at
small sizes against eager: persistent reductions (one load per input however
many passes), online softmax in looped reductions, outer (column) reductions,
constant masks for blocks that tile exactly, and the heuristic's config where
nothing was timed (the tuner: test_triton_pinned.py).
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import codegen.triton_configs
import tirc
from matching import assert_matches, compiled

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def with_extremes(rows: int, cols: int):
    """Rows of random values, one all -inf, one with an inf, one with a NaN."""
    x = torch.randn(rows, cols) * 3
    x[1] = float("-inf")
    x[2, 5] = float("inf")
    x[3, 7] = float("nan")
    x[4, :3] = float("-inf")
    return x


def cross_entropy(x, t):
    return F.cross_entropy(x, t)


def loop_softmax_like():
    return [
        ("softmax", lambda x: torch.softmax(x, -1), lambda: [with_extremes(37, 129)]),
        ("log_softmax", lambda x: torch.log_softmax(x, -1), lambda: [with_extremes(37, 129)]),
        ("cross_entropy", cross_entropy, lambda: [torch.randn(37, 129) * 4, torch.randint(0, 129, (37,))]),
        ("bf16_softmax", lambda x: torch.softmax(x, -1), lambda: [torch.randn(37, 129).bfloat16()]),
    ]


@pytest.mark.parametrize("case", loop_softmax_like(), ids=lambda c: c[0])
def test_looped_softmax_is_online(case, monkeypatch):
    # Rows too long to persist, read in chunks: the max and the sum of exp
    # share one pass (online softmax), and results match eager.
    monkeypatch.setattr(codegen.triton_configs, "PERSISTENT_MAX", 16)
    monkeypatch.setattr(codegen.triton_configs, "RBLOCK_MAX", 32)
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")  # its key does not see the patch
    _, fn, make = case
    program, got, want = compiled(fn, make)
    assert re.search(r"acc_t\d+_new = tl.where\(\s*mask, tl.maximum\(", program.code)
    first = program.code.split("@triton.jit\ndef k1")[0]
    assert first.count("for roffset") == (2 if "softmax" in case[0] else 1)
    assert_matches(got, want)


@pytest.mark.parametrize("case", loop_softmax_like(), ids=lambda c: c[0])
def test_persistent_softmax_reads_each_input_once(case):
    _, fn, make = case
    program, got, want = compiled(fn, make)
    assert_matches(got, want)
    kernel = program.code.split("@triton.jit\ndef k0")[1].split("\n\n\n")[0]
    assert "for roffset" not in kernel
    first = program.code.split("def call")[0]
    # One load of the rows (a cross entropy also gathers its target's logit).
    assert first.count("tl.load(p_x + (129 * i0 + r0)") == 1


def test_outer_reduction_tiles_along_rows():
    program, got, want = compiled(lambda x: x.sum(0) * 2, lambda: [torch.randn(300, 70)])
    assert_matches(got, want)
    kernel = next(k for k in program.compiled.module.kernels)
    assert kernel is not None
    assert "XBLOCK=32, RBLOCK=128" in " ".join(program.code.split())


def test_outer_reduction_times_small_tiles():
    # Inductor's shape for an outer reduction is among the alternatives.
    configs = codegen.triton_configs.outer(100352, 256).configs
    assert any(c.xblock >= 64 and c.rblock <= 16 for c in configs)


def test_exact_blocks_have_constant_masks():
    program, got, want = compiled(lambda x: torch.softmax(x, -1) * 2, lambda: [torch.randn(64, 256)])
    assert_matches(got, want)
    assert "xmask = tl.full([XBLOCK, 1], 1, tl.int1)" in program.code
    assert "rmask = tl.full([1, RBLOCK], 1, tl.int1)" in program.code
    program, got, want = compiled(lambda x: torch.softmax(x, -1) * 2, lambda: [torch.randn(37, 129)])
    assert_matches(got, want)
    assert "xmask = xindex < xnumel" in program.code and "rmask = rindex < rnumel" in program.code


def test_contiguous_pointwise_index_is_xindex():
    program, got, want = compiled(lambda x, y: x * y + 1, lambda: [torch.randn(37, 29), torch.randn(37, 29)])
    assert_matches(got, want)
    assert "tl.load(p_x + (xindex)" in program.code


def test_square_is_a_product():
    make = lambda: [torch.randn(37, 129)]  # noqa: E731
    program, got, want = compiled(lambda x: x.pow(2).mean(-1), make)
    assert_matches(got, want)
    assert "_pow(" not in program.code


def test_generated_code_is_deterministic():
    make = lambda: [torch.randn(37, 129), torch.randint(0, 129, (37,))]  # noqa: E731
    first = tirc.compile(cross_entropy, make(), backend="triton").code
    assert tirc.compile(cross_entropy, make(), backend="triton").code == first


def test_untuned_kernels_launch_the_heuristics_first_config():
    # Large enough for alternatives; without a GPU nothing is timed.
    program, got, want = compiled(lambda x: x.sum(0), lambda: [torch.randn(1024, 1024)])
    first = codegen.triton_configs.outer(1024, 1024).configs[0]
    assert f"_launch(k0,({-(-1024 // first.xblock)},)," in "".join(program.code.split())
    assert first.meta() in " ".join(program.code.split())
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
