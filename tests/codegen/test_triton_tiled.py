"""Tiled pointwise kernels (codegen/triton_tiling.py): a kernel whose loads
and stores are contiguous along different variables (a transpose, a
permute to channels-last, `x + y.t()`) runs on YBLOCK x XBLOCK tiles.
Each program is compiled on example inputs and run on fresh random inputs
at odd sizes, against eager PyTorch and, for a few, the C++ backend; the
generated code is checked for the kernel shape the heuristic should pick.
Runs under TRITON_INTERPRET=1."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sympy
import torch

import tirc
from codegen import triton_configs, triton_tiling, triton_tune
from codegen.kernel_plan import KernelPlan, Load, Store
from matching import assert_matches, compiled

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TILED = {
    "transpose_f32": (lambda x: x.t().contiguous(), lambda: [torch.randn(37, 129)]),
    "add_transposed_two_outputs": (
        lambda x, y: (x + y.t(), (x * 2).t().contiguous()),
        lambda: [torch.randn(37, 129), torch.randn(129, 37)],
    ),
    "to_channels_last_bf16": (
        lambda x: x.permute(0, 2, 3, 1).contiguous() * 3,
        lambda: [torch.randn(2, 19, 17, 33).bfloat16()],
    ),
    "rotate_three_dims_f16": (
        lambda x: x.permute(2, 0, 1).contiguous() + 1,
        lambda: [torch.randn(37, 20, 129).half()],
    ),
    "transposed_plus_broadcast_bias": (
        lambda x, b: (x.t() + b).relu(),
        lambda: [torch.randn(1000, 129), torch.randn(1000)],
    ),
    "int32_transpose_mixed": (
        lambda a, x: a.t() * 3 + x,
        lambda: [torch.randint(-50, 50, (129, 200), dtype=torch.int32), torch.randn(200, 129)],
    ),
    "bool_transpose": (lambda x: (x.t() > 0) & (x.t() < 1), lambda: [torch.randn(37, 40)]),
    "gather_then_transpose": (
        lambda x, i: torch.gather(x, 1, i).t() * 2,
        lambda: [torch.randn(37, 40), torch.randint(0, 40, (37, 29))],
    ),
    "exact_tiles": (lambda x, y: x.t() - y, lambda: [torch.randn(128, 64), torch.randn(64, 128)]),
    "bf16_in_f32_out": (lambda x: x.t().float() * 0.5, lambda: [torch.randn(33, 70).bfloat16()]),
}

NOT_TILED = {
    "contiguous": (lambda x, y: x * y + 1, lambda: [torch.randn(37, 129), torch.randn(37, 129)]),
    "broadcast_on_short_rows": (
        lambda x, b: x + b[:, None],
        lambda: [torch.randn(129, 37), torch.randn(129)],
    ),
    # Runs of 64 contiguous elements in both: a 1-D block is coalesced already.
    "split_heads": (lambda x: x.transpose(1, 2).contiguous(), lambda: [torch.randn(2, 37, 4, 64)]),
    "short_dimension": (lambda x: x.permute(0, 2, 3, 1).contiguous(), lambda: [torch.randn(2, 3, 17, 33)]),
}


def tiled(program) -> bool:
    return "yindex = (pid // xprograms) * YBLOCK" in program.code


@pytest.mark.parametrize("name", sorted(TILED))
def test_transposing_programs_run_tiled_and_match_eager(name):
    program, actual, expected = compiled(*TILED[name])
    assert tiled(program), program.code
    assert_matches(actual, expected)


@pytest.mark.parametrize("name", sorted(NOT_TILED))
def test_programs_without_a_transposed_access_keep_a_1d_block(name):
    program, actual, expected = compiled(*NOT_TILED[name])
    assert not tiled(program) and "XBLOCK=" in program.code, program.code
    assert_matches(actual, expected)


@pytest.mark.parametrize(
    "name", ["add_transposed_two_outputs", "int32_transpose_mixed", "gather_then_transpose"]
)
def test_tiled_kernels_match_the_cpp_backend(name):
    _, triton_out, _ = compiled(*TILED[name])
    _, cpp_out, _ = compiled(*TILED[name], backend="cpp")
    assert_matches(triton_out, cpp_out)


def test_small_tiles_cover_both_axes_with_masked_edges(monkeypatch):
    # Tiles of 8 x 4 over 37 x 129: many programs along both axes, every edge masked.
    monkeypatch.setattr(
        triton_configs, "power_of_two", lambda n, limit: min(8, limit, 1 << (n - 1).bit_length())
    )
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")  # its key does not see the patch
    program, actual, expected = compiled(*TILED["add_transposed_two_outputs"])
    assert "XBLOCK=8, YBLOCK=8" in " ".join(program.code.split())
    assert_matches(actual, expected)


@pytest.mark.parametrize(
    "x_dtype, expected",
    [
        # x's 4 bytes along i1 tie with y's and out's 2 + 2 along i2: the
        # innermost, i2, runs along XBLOCK; i1, x's, is the last y variable,
        # after i0, which x reads contiguously from i1 outwards.
        ("f32", triton_tiling.Tiling((("i2", 30),), (("i0", 5), ("i1", 40)))),
        # x's 8 bytes along i1 outweigh them: i1 along XBLOCK, with i0, which
        # x reads contiguously from i1 outwards; i2 in y.
        ("f64", triton_tiling.Tiling((("i0", 5), ("i1", 40)), (("i2", 30),))),
    ],
)
def test_the_tile_follows_the_bytes_and_puts_the_other_variable_innermost(x_dtype, expected):
    # out[i0, i1, i2] = x[i2, i0, i1] + y[i0, i1, i2], out and y bf16
    plan = KernelPlan(
        name="k",
        ranges=(5, 40, 30),
        reduction=(),
        params=(("x", x_dtype), ("y", "bf16"), ("out", "bf16")),
        num_inputs=2,
        steps=(
            Load("t0", "x", sympy.sympify("200*i2 + 40*i0 + i1"), x_dtype),
            Load("t1", "y", sympy.sympify("1200*i0 + 30*i1 + i2"), "bf16"),
            Store("out", sympy.sympify("1200*i0 + 30*i1 + i2"), "t1", "bf16"),
        ),
        nodes=("%out",),
    )
    assert triton_tiling.choose(plan) == expected
    # Too short a variable along either axis: a 1-D block.
    assert triton_tiling.choose(replace(plan, ranges=(5, 40, 8))) is None


def test_the_tuned_tile_is_pinned_and_launched(tmp_path, monkeypatch):
    # The tuner through the interpreter, with made-up times that make each
    # config timed faster than the one before: the last offered wins.
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    monkeypatch.setattr(triton_tune, "enabled", lambda device: True)
    timed = []
    monkeypatch.setattr(triton_tune, "_do_bench", lambda run: (run(), timed.append(1), 0.95 ** len(timed))[2])
    monkeypatch.setattr(triton_configs, "TILED_TUNED_MIN", 1024)  # alternatives at a small size
    torch.manual_seed(0)
    program = tirc.compile(
        lambda x: x.t() + 1, [torch.randn(37, 129)], backend="triton", dump_after="memplan", dump_dir=tmp_path
    )
    offered = triton_configs.tiled(37, 129).configs  # x: the output rows (37), y: their 129
    last = offered[-1]
    assert len(offered) >= 3 and len(timed) == len(offered) * triton_tune.ROUNDS
    memplan = (tmp_path / "05-memplan.tir").read_text()
    assert f"triton_config = [{last.xblock}, {last.rblock}, {last.num_warps}, {last.num_stages}]" in memplan
    launch = f"XBLOCK={last.xblock}, YBLOCK={last.rblock}, num_warps={last.num_warps}"
    assert launch in " ".join(program.code.split())
    fresh = torch.randn(37, 129)
    assert_matches(program(fresh.clone()), fresh.t() + 1)
