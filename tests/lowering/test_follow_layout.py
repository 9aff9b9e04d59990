"""A loop node's layout follows its operands' as eager lays a result out:
with the layout decision off (the CPU's `keep`), a pointwise op or a
concatenation on channels-last maps is channels-last when its first operand
that spans the result's dimensions is (a convolution's output that oneDNN
made NHWC is not transposed to NCHW by the next kernel). With the decision
on, a reduction's result is channels-last when its input's kept dimensions
are (the sum across branches stacked from NHWC maps). Checked in the lower
dump, and against eager PyTorch on fresh inputs at odd sizes."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import tirc

_BUFFER = re.compile(r"^(%\w+) = loop\.(\w+) .*? : \w+\[([\d, ]+)\] strides \[([\d, ]+)\]", re.M)


def _layouts(text: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{value: (kind, strides)} of the loop nodes of a lower dump."""
    return {m[1]: (m[2], tuple(int(s) for s in m[4].split(", "))) for m in _BUFFER.finditer(text)}


def _channels_last(strides, shape) -> bool:
    return tuple(strides) == torch.empty(shape).to(memory_format=torch.channels_last).stride()


def _compile(fn, inputs, tmp_path, backend="cpp", options=None):
    program = tirc.compile(
        fn, inputs, backend=backend, dump_after="lower", dump_dir=tmp_path, options=options
    )
    text = (tmp_path / "02-lower.tir").read_text()
    return program, text


def _check(program, fn, make_inputs):
    fresh = make_inputs()
    torch.testing.assert_close(program(*fresh), fn(*fresh), rtol=1e-4, atol=1e-4)


W = torch.randn(5, 7, 3, 3)


def _relu_conv(x):
    return F.conv2d(torch.relu(x) * 0.5, W, padding=1)


def _sum_conv(a, b):
    return F.conv2d(a + b, W)


def test_a_pointwise_op_on_a_channels_last_map_stays_channels_last(tmp_path):
    def make():
        return [torch.randn(2, 7, 9, 11).to(memory_format=torch.channels_last)]

    program, text = _compile(_relu_conv, make(), tmp_path)
    assert "layout keep" in text
    layouts = list(_layouts(text).values())
    assert layouts and all(k == "pointwise" and _channels_last(st, (2, 7, 9, 11)) for k, st in layouts)
    _check(program, _relu_conv, make)


@pytest.mark.parametrize("first", ["contiguous", "channels_last"])
def test_the_first_operand_decides_a_mixed_sum(first, tmp_path):
    def make():
        a = torch.randn(2, 7, 9, 11)
        b = torch.randn(2, 7, 9, 11).to(memory_format=torch.channels_last)
        return [a, b] if first == "contiguous" else [b, a]

    program, text = _compile(_sum_conv, make(), tmp_path)
    ((_, strides),) = _layouts(text).values()
    eager = (make()[0] + make()[1]).stride()
    assert strides == eager and _channels_last(strides, (2, 7, 9, 11)) == (first == "channels_last")
    _check(program, _sum_conv, make)


def _branch_sum(a):
    feats = torch.stack([torch.relu(a), a * 2.0], 1)
    return F.conv2d(feats.sum(1), W, padding=1)


@pytest.mark.parametrize("backend, layout", [("cpp", "auto"), ("triton", "channels-last")])
def test_a_reduction_keeps_its_inputs_channels_last_order(backend, layout, tmp_path):
    def make():
        return [torch.randn(2, 7, 9, 11).to(memory_format=torch.channels_last)]

    program, text = _compile(_branch_sum, make(), tmp_path, backend, options={"layout": layout})
    layouts = _layouts(text).values()
    (stacked,) = [st for kind, st in layouts if kind == "pointwise" and len(st) == 4 and st[0] == 2 * 693]
    assert _channels_last(stacked, (2, 14, 9, 11))  # as eager's cat of channels-last maps
    (reduced,) = [st for kind, st in layouts if kind == "reduction"]
    # channels-last only by the layout decision: eager's sum is contiguous
    assert _channels_last(reduced, (2, 7, 9, 11)) == (layout == "channels-last")
    _check(program, _branch_sum, make)


def test_contiguous_of_a_channels_last_result_is_a_contiguous_copy(tmp_path):
    """`.contiguous()` captures as clone(memory_format=contiguous_format):
    of a pool laid out channels-last (as its input), it is a copy that the
    program returns contiguous, as eager's."""

    def fn(x):
        return F.avg_pool2d(x, 2).contiguous() * 1.0, F.max_pool2d(x, 2).contiguous()

    def make():
        return [torch.randn(2, 7, 9, 11).to(memory_format=torch.channels_last)]

    program, _ = _compile(fn, make(), tmp_path)
    fresh = make()
    for got, want in zip(program(*fresh), fn(*fresh)):
        assert got.is_contiguous() and want.is_contiguous()
        torch.testing.assert_close(got, want)
