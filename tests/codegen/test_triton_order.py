"""The order Triton reduction kernels walk their variables in
(codegen/triton_order.py): by the sectors their loads and stores touch, not
only by the stores. Programs on channels-last inputs at odd sizes, on fresh
random inputs against eager PyTorch, under TRITON_INTERPRET=1."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from codegen.kernel_plan import KernelPlan, Load, Loop, Reduce, Store
from codegen.triton_order import reduction_orders
import tirc
from matching import assert_matches, check_against_eager, compiled

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def _channels_last(*shape, dtype=torch.float32):
    return lambda: [torch.randn(shape).to(dtype).contiguous(memory_format=torch.channels_last)]


def _kernels(code: str) -> list[str]:
    return re.findall(r"\ndef k\d+\(.*?(?=\n\n\n)", code, re.S)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_group_norm_of_a_channels_last_map_walks_the_group_s_channels_fastest(dtype):
    """Each row is a group of 3 channels over 13 x 11 pixels; in the map
    the 3 channels are contiguous, the pixels 24 elements apart, so the
    lanes walk the channel fastest (lowering orders the r-variables so).
    The result keeps the input's layout."""
    fn = lambda x: F.silu(F.group_norm(x, 8))  # noqa: E731
    program, actual, expected = compiled(fn, _channels_last(3, 24, 13, 11, dtype=DTYPES[dtype]))
    assert_matches(actual, expected)
    (kernel,) = [k for k in _kernels(program.code) if "rindex" in k]
    # the channel is the fastest r-variable, the pixels (24 apart) the other
    channel, pixel = re.search(r"(r\d) = rindex % 3\n", kernel), re.search(r"(r\d) = rindex // 3\n", kernel)
    assert channel and pixel and f"24 * {pixel[1]} + {channel[1]})" in kernel


def test_a_pool_returned_nchw_from_a_channels_last_map_reads_along_the_channel():
    """The pool's loads (four per result) are contiguous along the channel,
    its stores (NCHW) along the width: the loads carry the bytes, so the
    rows run channel fastest."""
    fn = lambda x: F.avg_pool2d(x, 2).contiguous()  # noqa: E731
    program, actual, expected = compiled(fn, _channels_last(2, 40, 13, 9))
    assert_matches(actual, expected)
    assert actual.is_contiguous()
    (kernel,) = [k for k in _kernels(program.code) if "rindex" in k]
    assert "i1 = xindex % 40" in kernel


def test_argmax_keeps_the_logical_order_for_its_flat_index():
    """argmax returns the flat index of the first maximum: its rows walk the
    reduced variables in their logical order whatever the layout, and ties
    (integer values) resolve as eager's."""

    def fn(x):
        return torch.argmax(x.reshape(x.shape[0], x.shape[1], -1), 2), torch.argmax(x, 1)

    def make():
        return [torch.randint(0, 4, (3, 6, 5, 7)).float().contiguous(memory_format=torch.channels_last)]

    program, actual, expected = compiled(fn, make)
    assert_matches(actual, expected)


def test_plans_whose_accesses_agree_keep_their_order():
    """An NCHW group norm reads and writes along the pixels: no reorder."""
    fn = lambda x: F.group_norm(x, 4)  # noqa: E731
    program, actual, expected = compiled(fn, lambda: [torch.randn(2, 8, 9, 7)])
    assert_matches(actual, expected)
    (kernel,) = [k for k in _kernels(program.code) if "rindex" in k]
    assert "r1 = rindex % 63" in kernel


@pytest.mark.parametrize("kind", ["max", "argmax"])
def test_only_flat_index_reductions_keep_the_logical_reduced_order(kind):
    """A row of 4 x 64 elements contiguous along r0 (the outer variable):
    max walks r0 fastest, argmax keeps (r0, r1), since its result is the
    flat index of the walk."""
    x = "p_x"
    plan = KernelPlan(
        name="k0",
        ranges=(16,),
        reduction=(4, 64),
        params=((x, "f32"), ("p_y", "i64" if kind == "argmax" else "f32")),
        num_inputs=1,
        steps=(
            Loop((Load("t0", x, "1024*i0 + r0 + 16*r1", "f32"), Reduce("t1", kind, "t0", "f32", "f32"))),
            Store("p_y", "i0", "t1", "f32"),
        ),
        nodes=("buf0",),
    )
    _, orders = reduction_orders(plan, persistent=True)
    reduced = orders[0]  # the loop is the plan's first step
    assert [name for name, _ in reduced] == (["r0", "r1"] if kind == "argmax" else ["r1", "r0"])


def test_a_looped_kernel_orders_each_pass_by_its_own_accesses(monkeypatch):
    """A group norm of an NCHW map written channels-last for the
    convolution after it, as rows too long to hold (looped): the statistics
    pass only loads, along the pixels; the pass that stores walks the
    group's channels fastest."""
    from codegen import triton_configs

    monkeypatch.setattr(triton_configs, "PERSISTENT_MAX", 64)

    def fn(x, w):
        return F.conv2d(F.group_norm(x, 4).relu(), w)

    def make():
        return [torch.randn(2, 12, 9, 7), torch.randn(5, 12, 1, 1)]

    torch.manual_seed(0)
    program = tirc.compile(fn, make(), backend="triton", options={"layout": "channels-last"})
    check_against_eager(program, fn, make)
    (kernel,) = [k for k in _kernels(program.code) if "rindex" in k]
    stats, normalize = kernel.split("for roffset")[1:]
    assert "r1 = rindex % 63" in stats and "tl.store" not in stats
    assert "r0 = rindex % 3" in normalize and "tl.store" in normalize
