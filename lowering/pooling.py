"""Pooling as reductions over the window: max (with the flat argmax index),
average (with ATen's divisor rules) and adaptive average, for any number of
spatial dimensions. Out-of-bounds window elements are masked, never read."""

from __future__ import annotations


from ir_text import FloorDiv, index_max, index_min

from .body import BodyBuilder, compute_dtype
from .tensors import LTensor, NotLowerable


def _expand(v, n: int, default=None) -> list[int]:
    if v is None or (isinstance(v, tuple) and not v):
        v = default
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    return v * n if len(v) == 1 else v


def _window(ctx, op, x: LTensor, kernel, stride, padding, dilation, kind, dtype, post=None):
    """A reduction over windows; `kind` max/argmax/sum. Returns the node's tensor."""
    out = op.results[0].type
    n = len(kernel)
    spatial_in = x.shape[-n:]
    acc = compute_dtype(x.dtype)
    if acc not in ("f32", "f64"):
        raise NotLowerable("pooling of an integer tensor")
    b = BodyBuilder(out.shape, acc, kernel)
    lead = list(b.vars[: len(out.shape) - n])
    starts = [b.vars[len(lead) + k] * stride[k] - padding[k] for k in range(n)]
    coords = [starts[k] + b.rvars[k] * dilation[k] for k in range(n)]
    mask = None
    idx = list(lead)
    for k in range(n):
        size = spatial_in[k]
        idx.append(index_min(index_max(coords[k], 0), size - 1))
        cond = b.in_range(coords[k], 0, size)
        mask = cond if mask is None else b.op("logical_and", mask, cond)
    v = b.cast(b.load_at(x, idx), acc)
    fill = float("-inf") if kind in ("max", "argmax") else 0.0
    v = b.where(mask, v, b.const(fill))
    r = b.reduce(v, kind)
    if post is not None:
        r = post(b, r, starts)
    b.store(b.cast(r, dtype))
    return ctx.loop("reduction", out.shape, dtype, b, kernel)


def _max_pool(n: int):
    def rule(ctx, op, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        kernel = _expand(kernel_size, n)
        stride = _expand(stride, n, kernel)
        padding, dilation = _expand(padding, n), _expand(dilation, n)
        values = _window(ctx, op, x, kernel, stride, padding, dilation, "max", op.results[0].type.dtype)

        def flat_index(b, r, starts):
            # The argmax over the window (row-major over r-variables) as a flat
            # index into the input's spatial dimensions, as ATen returns it.
            flat = None
            rest = r
            offsets = []
            for k in reversed(range(n)):
                offsets.append(b.op("remainder", rest, b.const(kernel[k], "i64")))
                rest = b.op("floor_divide", rest, b.const(kernel[k], "i64"))
            offsets.reverse()
            for k in range(n):
                coord = b.op("add", b.index(starts[k]), b.op("mul", offsets[k], b.const(dilation[k], "i64")))
                flat = (
                    coord
                    if flat is None
                    else b.op("add", b.op("mul", flat, b.const(x.shape[-n + k], "i64")), coord)
                )
            return flat

        indices = _window(ctx, op, x, kernel, stride, padding, dilation, "argmax", "i64", post=flat_index)
        return values, indices

    return rule


def _avg_pool(n: int):
    def rule(
        ctx,
        op,
        x,
        kernel_size,
        stride=(),
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        kernel = _expand(kernel_size, n)
        stride = _expand(stride, n, kernel)
        padding = _expand(padding, n)
        spatial = x.shape[-n:]

        def divide(b, r, starts):
            if divisor_override:
                return b.op("truediv", r, b.const(divisor_override))
            count = None
            for k in range(n):
                start = starts[k]
                end = index_min(start + kernel[k], spatial[k] + padding[k])
                if not count_include_pad:
                    start, end = index_max(start, 0), index_min(end, spatial[k])
                size = b.index(end - start)
                count = size if count is None else b.op("mul", count, size)
            return b.op("truediv", r, b.cast(count, r.type))

        dtype = op.results[0].type.dtype
        return _window(ctx, op, x, kernel, stride, padding, [1] * n, "sum", dtype, post=divide)

    return rule


def _adaptive_avg_pool(n: int):
    def rule(ctx, op, x, output_size):
        out = op.results[0].type
        spatial = x.shape[-n:]
        osize = out.shape[-n:]
        # The largest window: ceil(in / out) + 1 covers every start/end rounding.
        kernel = [-(-spatial[k] // osize[k]) + 1 for k in range(n)]
        acc = compute_dtype(x.dtype)
        if acc not in ("f32", "f64"):
            raise NotLowerable("adaptive pooling of an integer tensor")
        b = BodyBuilder(out.shape, acc, kernel)
        lead = list(b.vars[: len(out.shape) - n])
        idx, mask, counts = list(lead), None, []
        for k in range(n):
            o = b.vars[len(lead) + k]
            start = FloorDiv(o * spatial[k], osize[k])
            end = FloorDiv((o + 1) * spatial[k] + osize[k] - 1, osize[k])
            coord = start + b.rvars[k]
            idx.append(index_min(coord, spatial[k] - 1))
            cond = b.op("lt", b.index(coord), b.index(end))
            mask = cond if mask is None else b.op("logical_and", mask, cond)
            counts.append(end - start)
        v = b.where(mask, b.cast(b.load_at(x, idx), acc), b.const(0.0))
        r = b.reduce(v, "sum")
        count = None
        for c in counts:
            size = b.index(c)
            count = size if count is None else b.op("mul", count, size)
        r = b.op("truediv", r, b.cast(count, acc))
        b.store(b.cast(r, out.dtype))
        return ctx.loop("reduction", out.shape, out.dtype, b, kernel)

    return rule


POOLING_RULES = {
    "aten.max_pool2d_with_indices.default": _max_pool(2),
    "aten.max_pool3d_with_indices.default": _max_pool(3),
    "aten.avg_pool1d.default": _avg_pool(1),
    "aten.avg_pool2d.default": _avg_pool(2),
    "aten.avg_pool3d.default": _avg_pool(3),
    "aten._adaptive_avg_pool2d.default": _adaptive_avg_pool(2),
    "aten._adaptive_avg_pool3d.default": _adaptive_avg_pool(3),
    "aten.adaptive_avg_pool1d.default": _adaptive_avg_pool(1),
}
