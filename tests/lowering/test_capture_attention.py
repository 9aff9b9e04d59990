"""scaled_dot_product_attention's CUDA backends whose ops return ints
(cuDNN's and flash attention: sequence lengths) are off while a GPU
program is traced, and only then; the flags come back as they were. On the
CPU, attention stays ATen's flash kernel, an extern call by design, on
both backends."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tirc
from lowering.capture import _without_vendor_kernels
from lowering.lower import fallback_ops

FLASH_CPU = "aten._scaled_dot_product_flash_attention_for_cpu.default"


@pytest.mark.parametrize("cuda", [False, True])
def test_tracing_turns_off_the_attention_backends_that_return_ints(cuda):
    before = torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled()
    with _without_vendor_kernels(cuda):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() == (before[0] and not cuda)
    assert (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled()) == before


def attention(q, k, v, mask):
    # Scores masked additively, then a residual: the extern's result feeds a kernel.
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask) + q * 0.5


def causal_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_attention_is_the_flash_extern(backend, dtype):
    def make():
        q, k, v = (torch.randn(2, 3, n, 16).to(dtype) for n in (37, 29, 29))
        return [q, k, v, torch.randn(37, 29).to(dtype)]

    program = tirc.compile(attention, make(), backend=backend)
    assert FLASH_CPU in program.extern_ops and not fallback_ops(program.compiled.module)
    assert "bmm" not in " ".join(program.extern_ops)
    fresh = make()
    torch.testing.assert_close(program(*fresh), attention(*fresh))
    make_causal = lambda: [torch.randn(2, 3, 37, 16).to(dtype) for _ in range(3)]  # noqa: E731
    program = tirc.compile(causal_attention, make_causal(), backend=backend)
    fresh = make_causal()
    torch.testing.assert_close(program(*fresh), causal_attention(*fresh))
