"""The allocator a generated `call` makes its buffers with (runtime.allocator):
ATen's allocation without the dispatcher where torch has it, torch.empty_strided
elsewhere, both giving exactly the layout asked for."""

from __future__ import annotations

import pytest
import torch

from codegen import runtime

LAYOUTS = [((37, 5), (5, 1)), ((2, 3, 4), (1, 2, 6)), ((0, 3), (3, 1)), ((), ()), ((1000,), (2,))]


@pytest.mark.parametrize("shape,strides", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_buffers_have_the_layout_dtype_and_device_asked_for(shape, strides, dtype, device):
    buffer = runtime.allocator(device)(shape, strides, dtype)
    assert (tuple(buffer.shape), buffer.stride(), buffer.dtype, buffer.device.type) == (
        shape,
        strides,
        dtype,
        device,
    )
    assert not buffer.requires_grad


@pytest.mark.skipif(
    not hasattr(torch._C._dynamo.guards, "_empty_strided_cpu"),
    reason="this torch has no _empty_strided_cpu (torch 2.11 and 2.13 have it); the fallback is tested above",
)
def test_the_cpu_allocator_skips_the_dispatcher_where_torch_has_it():
    assert runtime.allocator("cpu") is torch._C._dynamo.guards._empty_strided_cpu


def test_generated_code_allocates_through_it():
    import tirc

    program = tirc.compile(lambda x: torch.softmax(x, -1) * 2, [torch.randn(5, 7)])
    assert '_empty = runtime.allocator("cpu")' in program.code
    assert "torch.empty_strided" not in program.code
    x = torch.randn(5, 7)
    torch.testing.assert_close(program(x), torch.softmax(x, -1) * 2)
