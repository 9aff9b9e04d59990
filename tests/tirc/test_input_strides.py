"""A compiled program accepts inputs of any strides, as eager does: one laid
out otherwise than the compiled input (channels-last, transposed, expanded,
a slice) is copied into the compiled layout before the kernels run, and an
updated one is written back into the caller's tensor."""

from __future__ import annotations

import re

import pytest
import torch

import tirc
from codegen import runtime

BACKENDS = ["cpp", "triton"]  # triton through its interpreter on the CPU


def rows(x):
    """Pointwise and a row reduction: reads every input element at its index."""
    return torch.tanh(x) * 2 + x.sum(-1, keepdim=True)


def channels(x):
    """Pointwise and a reduction over channels, conv-free, of a 4-D input."""
    return (torch.sigmoid(x) * x).mean(1, keepdim=True) - x


def scale_in_place(x, y):
    x.mul_(torch.sigmoid(y))
    return x, y.sum(0)


# 37x129 views, each laid out unlike a contiguous 37x129 tensor.
LAYOUTS = {
    "transposed": lambda: torch.randn(129, 37).t(),
    "expanded": lambda: torch.randn(1, 129).expand(37, 129),
    "slice": lambda: torch.randn(41, 203)[2:39, 7:136],
    "every_other_row": lambda: torch.randn(74, 129)[::2],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_inputs_of_other_strides_compute_as_in_eager(backend, layout):
    torch.manual_seed(0)
    compiled = tirc.compile(rows, [torch.randn(37, 129)], backend=backend)
    x = LAYOUTS[layout]()
    assert not x.is_contiguous()
    torch.testing.assert_close(compiled(x), rows(x))
    torch.testing.assert_close(compiled(x.contiguous()), rows(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_last_and_contiguous_inputs_are_exchangeable(backend):
    """Both directions: compiled for one memory format, called with the other."""
    torch.manual_seed(1)
    x = torch.randn(3, 5, 7, 9)
    last = torch.randn(3, 5, 7, 9).to(memory_format=torch.channels_last)
    for example, other in ((x, last), (last, x)):
        compiled = tirc.compile(channels, [example], backend=backend)
        torch.testing.assert_close(compiled(other), channels(other))
        torch.testing.assert_close(compiled(example), channels(example))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_updated_input_passed_transposed_is_updated_as_in_eager(backend):
    torch.manual_seed(2)
    compiled = tirc.compile(scale_in_place, [torch.randn(37, 129), torch.randn(37, 129)], backend=backend)
    x, y = torch.randn(129, 37).t(), torch.randn(129, 37).t()
    theirs = x.clone()
    updated, total = compiled(x, y)
    expected = scale_in_place(theirs, y)
    torch.testing.assert_close(x, theirs)  # the caller's tensor, through its own strides
    torch.testing.assert_close((updated, total), expected)
    assert updated is x  # `return x` after `x.mul_`: the caller's tensor, as eager returns it


def test_an_updated_input_with_shared_elements_is_refused_before_any_write():
    """Eager refuses an in-place op on an expanded tensor; so does the call,
    and it writes nothing into the caller's tensors."""
    compiled = tirc.compile(scale_in_place, [torch.randn(37, 129), torch.randn(37, 129)])
    x, y = torch.randn(1, 129).expand(37, 129), torch.randn(37, 129)
    before = x.clone()
    with pytest.raises(RuntimeError, match="more than one element"):
        scale_in_place(torch.randn(1, 129).expand(37, 129), y)
    message = "input x, which the program updates in place, has elements that share memory (strides [0, 1]"
    with pytest.raises(ValueError, match=re.escape(message)):
        compiled(x, y)
    assert torch.equal(x, before)


def test_a_program_compiled_for_a_broadcast_input_refuses_other_strides():
    """Compiled for a stride-0 input, the program reads one row for all:
    a full input's other rows cannot be held in that layout."""
    compiled = tirc.compile(rows, [torch.randn(1, 129).expand(37, 129)])
    x = torch.randn(1, 129).expand(37, 129)
    torch.testing.assert_close(compiled(x), rows(x))
    message = (
        "input x: the program was compiled for an input broadcast along dimension(s) [0] (strides [0, 1])"
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        compiled(torch.randn(37, 129))


def test_the_compiled_layout_is_passed_without_a_copy():
    """The common path returns the caller's tensor; a layout that differs
    only in strides of size-1 dimensions addresses the same elements."""
    x = torch.randn(37, 129)
    assert runtime.checked_input(x, (37, 129), (129, 1), torch.float32, "x", "cpu") is x
    column = torch.randn(37, 1)
    assert column.stride() == (1, 1)
    assert runtime.checked_input(column, (37, 1), (1, 37), torch.float32, "x", "cpu") is column
    copied = runtime.checked_input(x.t().contiguous().t(), (37, 129), (129, 1), torch.float32, "x", "cpu")
    assert copied.stride() == (129, 1) and torch.equal(copied, x)


def test_shape_dtype_and_device_are_still_checked_with_other_strides():
    compiled = tirc.compile(rows, [torch.randn(37, 129)])
    with pytest.raises(
        ValueError, match=re.escape("expected torch.float32 [37, 129], got torch.float32 [129, 37]")
    ):
        compiled(torch.randn(37, 129).t())
    with pytest.raises(ValueError, match=re.escape("got torch.float64 [37, 129]")):
        compiled(torch.randn(129, 37, dtype=torch.float64).t())
    with pytest.raises(ValueError, match=re.escape("expected a tensor on cpu, got one on meta")):
        compiled(torch.empty(129, 37, device="meta").t())


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_with_a_transposed_input(dynamic):
    torch._dynamo.reset()
    compiled = torch.compile(rows, backend="tirc", dynamic=dynamic)
    try:
        for x in (torch.randn(37, 129), torch.randn(129, 37).t(), torch.randn(37, 129)):
            torch.testing.assert_close(compiled(x), rows(x))
    finally:
        torch._dynamo.reset()


def test_a_module_buffer_of_another_layout_is_updated_in_place():
    """Batch norm in training updates its running statistics, lifted inputs:
    replaced by strided views, they are updated through their own strides."""
    torch.manual_seed(3)
    mine, theirs = torch.nn.BatchNorm1d(5).train(), torch.nn.BatchNorm1d(5).train()
    compiled = tirc.compile(mine, [torch.randn(37, 5)])
    for model in (mine, theirs):
        model.running_mean = torch.randn(10)[::2]
        model.running_var = torch.rand(5, 3)[:, 1] + 0.5
    theirs.load_state_dict(mine.state_dict())
    x = torch.randn(37, 5)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), theirs(x))
    torch.testing.assert_close(mine.running_mean, theirs.running_mean)
    torch.testing.assert_close(mine.running_var, theirs.running_var)
    assert mine.running_mean.stride() == (2,)
