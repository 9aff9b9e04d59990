"""Index and shape arguments that ATen kernels trust, checked before the kernel runs.

Most ATen ops that take indices check them (gather, index_select, scatter,
embedding). A few write through them unchecked: the CPU kernel of
max_pool2d_with_indices_backward adds each gradient at `indices[k]` in the
input plane, and embedding_dense_backward's CUDA kernel at `indices[k]` in
the weight's rows; the CPU flash attention backward reads its `logsumexp` and
`out` at the query's sizes, whatever their own. A dump is untrusted input (op_policy.py): its seeded or
hand-written indices would write outside the buffer, which can corrupt the
process's heap. The reference interpreter and the generated code's extern
calls therefore check these arguments first (GUARDS: op name -> check):
on the CPU with a clear error, on a GPU with an assertion on the device,
which stops the stream before the kernel runs, without a host sync.
"""

from __future__ import annotations

import torch


class IndexOutOfRange(ValueError):
    """An index argument outside the range its op writes through."""


def _in_range(op: str, what: str, indices: torch.Tensor, size: int) -> None:
    if indices.numel() == 0:
        return
    if indices.is_cuda:
        torch._assert_async(((indices >= 0) & (indices < size)).all())
        return
    low, high = (bound.item() for bound in torch.aminmax(indices))
    if low < 0 or high >= size:
        raise IndexOutOfRange(f"{op}: {what} must lie in [0, {size}), got values in [{low}, {high}]")


def _same_shape(op: str, a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise IndexOutOfRange(f"{op}: {what} has shape {list(a.shape)}, expected {list(b.shape)}")


def _pool_backward(args: list, kwargs: dict) -> None:
    """max_pool2d_with_indices_backward(grad_output, self, kernel_size,
    stride, padding, dilation, ceil_mode, indices): each index is a position
    in its input plane (H_in x W_in), one per gradient element."""
    op = "aten.max_pool2d_with_indices_backward"
    grad, source = args[0], args[1]
    indices = args[7] if len(args) > 7 else kwargs["indices"]
    _same_shape(op, indices, grad, "indices")
    _in_range(op, "indices", indices, source.shape[-2] * source.shape[-1])


def _embedding_backward(args: list, kwargs: dict) -> None:
    """embedding_dense_backward(grad_output, indices, num_weights, ...):
    each index is a row of the weight, one per row of the gradient."""
    op = "aten.embedding_dense_backward"
    grad, indices = args[0], args[1]
    rows = args[2] if len(args) > 2 else kwargs["num_weights"]
    if tuple(grad.shape[:-1]) != tuple(indices.shape):
        raise IndexOutOfRange(
            f"{op}: grad_output has shape {list(grad.shape)} for indices of {list(indices.shape)}"
        )
    _in_range(op, "indices", indices, int(rows))


def _flash_cpu_backward(args: list, kwargs: dict) -> None:
    """_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query,
    key, value, out, logsumexp, ...): out and grad_out are the query's
    shape ([B, H, L, E]), logsumexp is [B, H, L]."""
    op = "aten._scaled_dot_product_flash_attention_for_cpu_backward"
    grad, query, out, logsumexp = args[0], args[1], args[4], args[5]
    _same_shape(op, out, query, "out")
    _same_shape(op, grad, query, "grad_out")
    if tuple(logsumexp.shape) != tuple(query.shape[:-1]):
        raise IndexOutOfRange(
            f"{op}: logsumexp has shape {list(logsumexp.shape)}, expected {list(query.shape[:-1])}"
        )


GUARDS = {
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": _flash_cpu_backward,
    "aten.max_pool2d_with_indices_backward.default": _pool_backward,
    "aten.embedding_dense_backward.default": _embedding_backward,
}


def check_index_arguments(target: str, args: list, kwargs: dict) -> None:
    """Raise IndexOutOfRange when the op named `target` would write through
    an index outside its buffer (nothing to check for other ops)."""
    guard = GUARDS.get(target)
    if guard is not None:
        guard(list(args), dict(kwargs))


def guards_indices(target: str) -> bool:
    """Whether the op named `target` has its index arguments checked."""
    return target in GUARDS
