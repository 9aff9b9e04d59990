"""scaled_dot_product_attention's CUDA backends whose ops return ints
(cuDNN's and flash attention: sequence lengths) are off while a GPU
program is traced, and only then; the flags come back as they were."""

from __future__ import annotations

import pytest
import torch

from lowering.capture import _without_vendor_kernels


@pytest.mark.parametrize("cuda", [False, True])
def test_tracing_turns_off_the_attention_backends_that_return_ints(cuda):
    before = torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled()
    with _without_vendor_kernels(cuda):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() == (before[0] and not cuda)
    assert (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled()) == before
