"""The decomposition table capture traces with: core ATen, the norms, softmax
and activations Inductor also decomposes, and tirc's own forms of a few ops
(softmax rounded as eager's CPU kernel, take, inference batch norm) where
torch's decompositions do not suit it."""

from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=1)
def _decompositions():
    """Core ATen, plus the decompositions Inductor also applies to norms,
    softmax and a few activations, so they lower to reductions and pointwise
    ops (and fuse) instead of running as ATen calls. Built once per process:
    building it is slow, as torch materializes its CIA ops (measured:
    docs/design-notes.md, "C++ kernels")."""
    from torch._decomp import core_aten_decompositions, get_decompositions

    aten = torch.ops.aten
    extra = [
        aten._log_softmax,
        aten.native_layer_norm,
        aten.native_group_norm,
        aten.native_batch_norm,
        aten._native_batch_norm_legit_no_training,
        # Batch norm in training mode, as AOTAutograd's functional graphs
        # hold it: statistics, normalization and the running averages.
        aten._native_batch_norm_legit_functional,
        aten.linalg_vector_norm,
        aten.full_like,
        aten.empty_like,
        aten.mish,
        aten.softplus,
        aten.hardswish,
        aten.hardsigmoid,
        aten.expand_copy,
        aten.std.correction,
        aten.logsumexp,
        aten.upsample_bilinear2d,
    ]
    table = {**core_aten_decompositions(), **get_decompositions(extra)}
    table[aten._native_batch_norm_legit_no_training.default] = _batch_norm_inference
    table[aten.take.default] = _take
    table[aten._softmax.default] = _softmax
    # Attention on the CPU stays ATen's flash kernel, as eager and Inductor
    # run it: one pass over blocks of keys with the softmax online, where
    # its decomposition (two bmm, a softmax over the scores in memory) read
    # and wrote the scores (a Perceiver's cross-attention, 256 latents over
    # 1024 inputs: 1.16x eager's time on 2 cores). On a GPU, tracing
    # turns flash attention off (capture.py): it is never chosen there.
    table.pop(aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    return table


def _softmax(x, dim, half_to_float):
    """Softmax as eager's CPU kernel rounds it: in float32 for halves, exp(x
    - max) times the reciprocal of their sum. The backends compute what the
    IR says and never turn a division into a multiplication themselves:
    `x / x.amax(1, keepdim=True)` must give exactly 1 at the maximum. (Eager's
    CUDA kernels divide instead; the results are within an ulp, and the
    reciprocal costs one rounded division a row where a division per element
    rounded once costs more than the approximate one Triton's `/` is.)"""
    x = x.contiguous()
    result = torch.float32 if half_to_float else x.dtype
    compute = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    x = x.to(compute)
    shifted = x - torch.amax(x, dim, keepdim=True) if x.numel() else x
    unnormalized = torch.exp(shifted)
    return (unnormalized * torch.reciprocal(torch.sum(unnormalized, dim, keepdim=True))).to(result)


def _take(input, index):
    """take as an index of the flattened input; torch's decomposition indexes
    with the index tensor as a Python index, which reads a 0-d index's value."""
    return torch.ops.aten.index.Tensor(input.reshape(-1), [index])


def _batch_norm_inference(input, weight, bias, running_mean, running_var, momentum, eps):
    """Inference batch norm as native_batch_norm with training=False, which the
    table decomposes into pointwise ops. torch's own decomposition goes through
    the in-place `_native_batch_norm_legit`, which torch.export's
    run_decompositions rejects (its graph must stay functional)."""
    return torch.ops.aten.native_batch_norm.default(
        input, weight, bias, running_mean, running_var, False, momentum, eps
    )
