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
    idx = list(lead)
    if kind in ("max", "argmax"):
        # Window positions in the padding read the nearest in-bounds position
        # of their window instead (the first one before it, the last one
        # after it): the maximum is unchanged, and the first maximum is at
        # eager's index even when every in-bounds value is -inf (-inf
        # padding would tie, and come first).
        firsts = _in_bounds(starts, kernel, dilation, spatial_in)
        for k in range(n):
            step = index_min(index_max(b.rvars[k], firsts[k][0]), firsts[k][1])
            idx.append(index_min(index_max(starts[k] + step * dilation[k], 0), spatial_in[k] - 1))
        v = b.cast(b.load_at(x, idx), acc)
    else:
        mask = None
        for k in range(n):
            coord = starts[k] + b.rvars[k] * dilation[k]
            idx.append(index_min(index_max(coord, 0), spatial_in[k] - 1))
            cond = b.in_range(coord, 0, spatial_in[k])
            mask = cond if mask is None else b.op("logical_and", mask, cond)
        v = b.where(mask, b.cast(b.load_at(x, idx), acc), b.const(0.0))
    r = b.reduce(v, kind)
    if post is not None:
        r = post(b, r, starts)
    b.store(b.cast(r, dtype))
    return ctx.loop("reduction", out.shape, dtype, b, kernel)


def _in_bounds(starts, kernel, dilation, spatial) -> list[tuple]:
    """Per spatial dimension, (first, last) window step whose position
    start + step * dilation is in bounds, as index expressions (every
    window of ATen's pooling has one)."""
    steps = []
    for k, start in enumerate(starts):
        first = FloorDiv(index_max(-start, 0) + dilation[k] - 1, dilation[k])
        last = index_min(FloorDiv(index_max(spatial[k] - 1 - start, 0), dilation[k]), kernel[k] - 1)
        steps.append((first, last))
    return steps


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
            firsts = _in_bounds(starts, kernel, dilation, x.shape[-n:])
            for k in range(n):
                # The step the window read at (positions in the padding read in bounds).
                first, last = (b.index(e) for e in firsts[k])
                offsets[k] = b.op("maximum", b.op("minimum", offsets[k], last), first)
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
