"""Lowering rules for indexing and data movement: gather, index_select,
embedding, advanced indexing (indirect loads), cat and constant_pad_nd
(index-clamped loads under a mask), arange and fills.

An out-of-range read is never emitted: a masked-off load reads a clamped,
in-bounds index and its value is discarded by a `where`, so no backend
needs masked loads.
"""

from __future__ import annotations

import sympy

from ir_text import FloorDiv, index_max, index_min, is_float

from .body import compute_dtype
from .tensors import LTensor, NotLowerable, norm_dim


def _out(op, k=0):
    return op.results[k].type


def _load_index(b, index: LTensor, vars_) -> object:
    """Load an index tensor (its elements at `vars_`, aligned right) as an indirect symbol source."""
    offset = len(vars_) - len(index.shape)
    idx = [sympy.Integer(0) if s == 1 else vars_[offset + d] for d, s in enumerate(index.shape)]
    return b.load_at(index, idx)


def _check_index(index: LTensor) -> None:
    if index.dtype not in ("i64", "i32", "i16", "i8", "u8"):
        raise NotLowerable(f"index tensor of dtype {index.dtype}")


def _gather(ctx, op, x, dim, index, sparse_grad=False):
    _check_index(index)
    out = _out(op)
    dim = norm_dim(dim, len(x.shape))

    def body(b):
        if not x.shape:
            # A 0-d input gathers along a dimension of size 1: its one element,
            # wherever the index (checked to be 0) points.
            b.indirect(b.load_at(index, list(b.vars)), 1, wrap=False)
            return b.cast(b.load_at(x, ()), b.compute)
        ind = b.indirect(b.load_at(index, list(b.vars)), x.shape[dim], wrap=False)
        # A 0-d index into a 1-d input counts as one element.
        idx = list(b.vars) if out.shape else [sympy.Integer(0)] * len(x.shape)
        idx[dim] = ind
        return b.cast(b.load_at(x, idx), b.compute)

    return ctx.pointwise(out.shape, out.dtype, body)


def _index_select(ctx, op, x, dim, index):
    _check_index(index)
    out = _out(op)
    if not x.shape:
        return ctx.pointwise(out.shape, out.dtype, lambda b: b.value(x))
    dim = norm_dim(dim, len(x.shape))

    def body(b):
        where = [b.vars[dim]] if index.shape else []
        ind = b.indirect(b.load_at(index, where), x.shape[dim], wrap=False)
        idx = list(b.vars)
        idx[dim] = ind
        return b.cast(b.load_at(x, idx), b.compute)

    return ctx.pointwise(out.shape, out.dtype, body)


def _embedding(ctx, op, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    _check_index(indices)
    out = _out(op)

    def body(b):
        ind = b.indirect(b.load_at(indices, list(b.vars[:-1])), weight.shape[0], wrap=False)
        return b.cast(b.load_at(weight, [ind, b.vars[-1]]), b.compute)

    return ctx.pointwise(out.shape, out.dtype, body)


def _index(ctx, op, x, indices):
    indices = list(indices) + [None] * (len(x.shape) - len(indices))
    present = [k for k, t in enumerate(indices) if t is not None]
    for k in present:
        if not isinstance(indices[k], LTensor):
            raise NotLowerable("index with a non-tensor entry")
        _check_index(indices[k])
    out = _out(op)
    bshape = _broadcast([indices[k].shape for k in present])
    adjacent = present == list(range(present[0], present[-1] + 1))
    rest = [d for d in range(len(x.shape)) if d not in present]
    start = present[0] if adjacent else 0

    def body(b):
        bvars = list(b.vars[start : start + len(bshape)])
        other = list(b.vars[:start]) + list(b.vars[start + len(bshape) :])
        idx = [None] * len(x.shape)
        for k in present:
            idx[k] = b.indirect(_load_index(b, indices[k], bvars), x.shape[k])
        for d, v in zip(rest, other):
            idx[d] = v
        return b.cast(b.load_at(x, idx), b.compute)

    return ctx.pointwise(out.shape, out.dtype, body)


def _broadcast(shapes) -> list[int]:
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for k, size in enumerate(s):
            d = rank - len(s) + k
            if size != 1:
                out[d] = size
    return out


def _cat(ctx, op, tensors, dim=0):
    out = _out(op)
    parts = [t for t in tensors if not (len(t.shape) == 1 and t.shape[0] == 0 and len(out.shape) > 1)]
    dim = norm_dim(dim, len(out.shape))
    parts = [t for t in parts if t.shape[dim] > 0] or parts[:1]

    def body(b):
        i = b.vars[dim]
        result, offset = None, 0
        chosen = []
        for t in parts:
            n = t.shape[dim]
            idx = list(b.vars)
            idx[dim] = index_min(index_max(i - offset, 0), n - 1) if len(parts) > 1 else i
            chosen.append((offset + n, b.cast(b.load_at(t, idx), b.compute)))
            offset += n
        result = chosen[-1][1]
        for end, v in reversed(chosen[:-1]):
            cond = b.op("lt", b.index(i), b.const(end, "i64"))
            result = b.where(cond, v, result)
        return result

    return ctx.pointwise(out.shape, out.dtype, body)


def _constant_pad_nd(ctx, op, x, pad, value=0):
    out = _out(op)
    rank = len(x.shape)
    lows = [0] * rank
    for k in range(len(pad) // 2):
        lows[rank - 1 - k] = pad[2 * k]

    def body(b):
        idx, mask = [], None
        for d in range(rank):
            v, low, n = b.vars[d], lows[d], x.shape[d]
            inner = v - low
            needs_low = low > 0
            needs_high = out.shape[d] - low > n
            if needs_low or needs_high:
                idx.append(index_min(index_max(inner, 0), max(n - 1, 0)))
                cond = b.in_range(inner, 0 if needs_low else None, n if needs_high else None)
                mask = cond if mask is None else b.op("logical_and", mask, cond)
            else:
                idx.append(inner)
        if any(s == 0 for s in x.shape):
            return b.const(value)
        v = b.cast(b.load_at(x, idx), b.compute)
        return v if mask is None else b.where(mask, v, b.const(value))

    return ctx.pointwise(out.shape, out.dtype, body)


def _arange(ctx, op, start, end=None, step=1, **_dtype_layout_device):
    out = _out(op)
    if end is None:
        start, end = 0, start
    dtype = compute_dtype(out.dtype)

    def body(b):
        i = b.cast(b.index(b.vars[0]), dtype)
        if is_float(dtype):
            return b.op("add", b.op("mul", i, b.const(step)), b.const(start))
        return b.op("add", b.op("mul", i, b.const(int(step))), b.const(int(start)))

    return ctx.pointwise(out.shape, out.dtype, body)


def _fill(value_arg: int | None, default=None):
    """full/zeros/ones-like ops: `value_arg` is the position of the fill value."""

    def rule(ctx, op, *args, **kwargs):
        out = _out(op)
        value = args[value_arg] if value_arg is not None and value_arg < len(args) else default
        if isinstance(value, LTensor):
            raise NotLowerable("fill with a tensor value")
        return ctx.pointwise(out.shape, out.dtype, lambda b: b.const(value))

    return rule


def _slice_scatter(ctx, op, x, src, dim=0, start=None, end=None, step=1):
    """`x` with `src` written over x[start:end:step] along `dim`."""
    out = _out(op)
    dim = norm_dim(dim, len(x.shape))
    size = x.shape[dim]
    start, end, step = slice(start, end, step).indices(size)
    count = src.shape[dim]

    def body(b):
        i = b.vars[dim]
        if count == 0:
            return b.value(x)
        position = FloorDiv(i - start, step) if step != 1 else i - start
        idx = list(b.vars)
        idx[dim] = index_min(index_max(position, 0), count - 1)
        inside = b.in_range(i, start, start + (count - 1) * step + 1)
        if step != 1:
            offset = b.op("remainder", b.index(i - start), b.const(step, "i64"))
            on_step = b.op("eq", offset, b.const(0, "i64"))
            inside = b.op("logical_and", inside, on_step)
        written = b.cast(b.load_at(src, idx), b.compute)
        return b.where(inside, written, b.value(x))

    return ctx.pointwise(out.shape, out.dtype, body)


def _select_scatter(ctx, op, x, src, dim, index):
    """`x` with `src` written over x.select(dim, index)."""
    out = _out(op)
    dim = norm_dim(dim, len(x.shape))
    index = index % x.shape[dim]

    def body(b):
        idx = list(b.vars[:dim]) + list(b.vars[dim + 1 :])
        on_index = b.op("eq", b.index(b.vars[dim]), b.const(index, "i64"))
        return b.where(on_index, b.cast(b.load_at(src, idx), b.compute), b.value(x))

    return ctx.pointwise(out.shape, out.dtype, body)


INDEXING_RULES = {
    "aten.slice_scatter.default": _slice_scatter,
    "aten.select_scatter.default": _select_scatter,
    "aten.gather.default": _gather,
    "aten.index_select.default": _index_select,
    "aten.embedding.default": _embedding,
    "aten.index.Tensor": _index,
    "aten.cat.default": _cat,
    "aten.constant_pad_nd.default": _constant_pad_nd,
    "aten.arange.start_step": _arange,
    "aten.arange.start": _arange,
    "aten.arange.default": _arange,
    "aten.full_like.default": _fill(1),
    "aten.zeros_like.default": _fill(None, 0),
    "aten.ones_like.default": _fill(None, 1),
    "aten.zeros.default": _fill(None, 0),
    "aten.ones.default": _fill(None, 1),
    # Uninitialised memory: any value is correct; zeros keep runs deterministic.
    "aten.empty.memory_format": _fill(None, 0),
    "aten.empty_like.default": _fill(None, 0),
    "aten.empty_strided.default": _fill(None, 0),
    "aten.new_empty.default": _fill(None, 0),
    "aten.new_zeros.default": _fill(None, 0),
    "aten.new_ones.default": _fill(None, 1),
    "aten.new_full.default": _fill(2),
}
