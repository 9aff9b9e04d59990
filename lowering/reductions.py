"""Lowering rules that build loop.reduction and loop.scan nodes.

A reduction node iterates its output shape with i-variables and the reduced
dimensions with r-variables; its body loads and computes per (i, r), then
`reduce`s, then an epilogue (a mean's division, say) runs per output
element. Variance is one pass of two sums in float64, of the deviations
from the row's first element and of their squares (float64 data: two
passes, a first mean then the deviations from it: _variance).
"""

from __future__ import annotations

import sympy

from .body import BodyBuilder, compute_dtype
from .tensors import LTensor, NotLowerable, norm_dim, view_strides

# Reductions whose result depends on the order of the reduced elements: an
# arg-reduction's index counts them in the dimensions' order.
ORDERED = frozenset({"argmax", "argmin"})


def _dims(x: LTensor, dim) -> list[int]:
    rank = len(x.shape)
    if dim is None or (isinstance(dim, tuple) and len(dim) == 0):
        return list(range(rank))
    if isinstance(dim, int):
        dim = (dim,)
    return sorted({norm_dim(d, rank) for d in dim}) if rank else []


def reduction(ctx, x: LTensor, dims, keepdim, out_dtype, kind, acc=None, pre=None, post=None) -> LTensor:
    """A reduction of `x` over `dims`: per element `pre(b, v, idx)` (the loaded
    value in the accumulator dtype `acc`), `reduce kind`, then `post(b, r, ivars)`."""
    acc = acc or compute_dtype(out_dtype)
    rank = len(x.shape)
    if keepdim:
        out_shape = [1 if d in dims else s for d, s in enumerate(x.shape)]
    else:
        out_shape = [s for d, s in enumerate(x.shape) if d not in dims]
    order = dims if kind in ORDERED else _memory_order(x, dims)
    b = BodyBuilder(out_shape, acc, [x.shape[d] for d in order])
    rvar = dict(zip(order, b.rvars))
    idx, ivars = [], iter(b.vars)
    for d in range(rank):
        if d in dims:
            idx.append(rvar[d])
            if keepdim:
                next(ivars)
        else:
            idx.append(next(ivars))
    v = b.load_at(x, idx)
    v = pre(b, v, idx) if pre else b.cast(v, acc)
    r = b.reduce(v, kind)
    if post:
        r = post(b, r)
    b.store(b.cast(r, out_dtype))
    strides = view_strides(x)
    if strides is not None:
        kept = [0 if d in dims else st for d, st in enumerate(strides) if keepdim or d not in dims]
        strides = ctx.reduced_strides(out_shape, tuple(kept))
    return ctx.loop("reduction", out_shape, out_dtype, b, [x.shape[d] for d in order], strides=strides)


def _memory_order(x: LTensor, dims: list[int]) -> list[int]:
    """The reduced dimensions in the order `x` lays them out, outermost
    first, so that consecutive r-indices read consecutive addresses (as
    Inductor orders a loop by the strides of what it reads): GroupNorm(1) of
    an NHWC map over (C, H, W) in that order read it at a stride of C, and a
    residual add fused into the pass wrote at that stride too (PoolFormer's
    statistics took 4x Inductor's time on an H200). Dimensions of size 1 go
    last; where `x` has no strides (a computed view), or two reduced
    dimensions share a stride, the order stays the dimensions'."""
    strides = view_strides(x)
    if strides is None:
        return dims
    sized = [d for d in dims if x.shape[d] != 1]
    if len({strides[d] for d in sized}) < len(sized):
        return dims
    return sorted(sized, key=lambda d: -strides[d]) + [d for d in dims if x.shape[d] == 1]


def _numel(x: LTensor, dims) -> int:
    n = 1
    for d in dims:
        n *= x.shape[d]
    return n


def _out(op, k=0) -> str:
    return op.results[k].type.dtype


def _sum(ctx, op, x, dim=None, keepdim=False, dtype=None):
    return reduction(ctx, x, _dims(x, dim), keepdim, _out(op), "sum")


def _prod(ctx, op, x, dim=None, keepdim=False, dtype=None):
    return reduction(ctx, x, _dims(x, dim), keepdim, _out(op), "prod")


def _mean(ctx, op, x, dim=None, keepdim=False, dtype=None):
    dims = _dims(x, dim)
    n = _numel(x, dims)
    return reduction(ctx, x, dims, keepdim, _out(op), "sum", post=lambda b, r: b.op("truediv", r, b.const(n)))


def _minmax(kind):
    # On bools, max is any and min is all.
    bool_kind = {"max": "any", "min": "all"}[kind]

    def rule(ctx, op, x, dim=(), keepdim=False):
        if x.dtype == "b8":
            return reduction(ctx, x, _dims(x, dim), keepdim, "b8", bool_kind, acc="b8")
        return reduction(ctx, x, _dims(x, dim), keepdim, _out(op), kind)

    return rule


def _arg(kind):
    def rule(ctx, op, x, dim=None, keepdim=False):
        if x.dtype == "b8":
            raise NotLowerable("argmax/argmin of bool")
        acc = compute_dtype(x.dtype)
        if dim is None:
            dims = list(range(len(x.shape)))
            out = reduction(ctx, x, dims, False, "i64", kind, acc=acc)
            return _keep_all(out, len(x.shape)) if keepdim else out
        return reduction(ctx, x, _dims(x, dim), keepdim, "i64", kind, acc=acc)

    return rule


def _keep_all(t: LTensor, rank: int) -> LTensor:
    return t.derive((1,) * rank, lambda idx: ())


def _value_and_index(value_kind, index_kind):
    def rule(ctx, op, x, dim, keepdim=False):
        if x.dtype == "b8":
            raise NotLowerable("max/min of bool")
        dims = _dims(x, dim)
        values = reduction(ctx, x, dims, keepdim, _out(op), value_kind)
        indices = reduction(ctx, x, dims, keepdim, "i64", index_kind, acc=compute_dtype(x.dtype))
        return values, indices

    return rule


def _logical(kind):
    def rule(ctx, op, x, dim=None, keepdim=False):
        def truth(b, v, idx):
            if v.type == "b8":
                return v
            v = b.cast(v, compute_dtype(v.type))  # f16 and bf16 are compared in f32
            return b.op("ne", v, b.const(0, v.type))

        return reduction(ctx, x, _dims(x, dim), keepdim, _out(op), kind, acc="b8", pre=truth)

    return rule


def _variance(ctx, x: LTensor, dims, correction, keepdim, out_dtype):
    """(var, mean); both shaped as the keepdim-or-not output.

    Both come from the sums of the deviations d = x - c from a center c,
    s1, and of their squares, s2, in float64: the mean is c + s1 / n and
    the variance (s2 - s1^2 / n) / divisor, which cancels by about
    (mean - c)^2 / var; s1 and s2 are one pass over the data.

    - float16, bfloat16 and float32 data: c is the row's first element, so
      the whole is one pass of two sums, which a backend splits over few
      long rows (a whole-tensor variance, GroupNorm); the scheduler inlines
      the data's producer into that one read per row (scheduler/inline.py),
      so the producer still fuses into the pass. Deviations of float32
      values are exact in float64, so a constant row's are exactly 0 (its
      variance 0 and layer norm's output exactly 0, as eager's Welford
      gives them; rsqrt(var + eps) scales a variance's error by up to
      316), and an outlying first element (a zero pad before values near
      1000: a cancellation of 1e6) still leaves 1e-10 of the result.
    - float64 data: c is a first mean, a pass of its own, so nothing
      cancels beyond the mean's last ulp.
    """
    n = _numel(x, dims)
    acc = "f64"
    compute = compute_dtype(out_dtype)

    def average(b, r):
        return b.op("truediv", r, b.const(n, acc))

    first = None
    if x.dtype == "f64":
        first = reduction(ctx, x, dims, keepdim, acc, "sum", acc=acc, post=average)

    def center(b, ivars):
        """c of the row the output variables `ivars` name, in `acc`."""
        if first is not None:
            return b.load_at(first, list(ivars))
        ivars, idx = iter(ivars), []
        for d in range(len(x.shape)):
            if d in dims:
                if keepdim:
                    next(ivars)
                idx.append(sympy.Integer(0))
            else:
                idx.append(next(ivars))
        return b.cast(b.load_at(x, idx), acc)

    def deviation(b, v, idx):
        return b.op("sub", b.cast(v, acc), center(b, b.vars))

    def squared(b, v, idx):
        d = deviation(b, v, idx)
        return b.op("mul", d, d)

    s1 = reduction(ctx, x, dims, keepdim, acc, "sum", acc=acc, pre=deviation)
    s2 = reduction(ctx, x, dims, keepdim, acc, "sum", acc=acc, pre=squared)

    def mean_of(b):
        return b.cast(b.op("add", center(b, b.vars), average(b, b.load(s1))), compute)

    mean = ctx.pointwise(s1.shape, compute, mean_of)
    divisor = max(n - (1 if correction is None else correction), 0)

    def variance(b):
        t = b.load(s1)
        centered = b.op("sub", b.load(s2), b.op("truediv", b.op("mul", t, t), b.const(n, acc)))
        # Rounding can leave a constant row's at -1e-20: its std would be NaN.
        centered = b.op("maximum", centered, b.const(0.0, acc))
        return b.cast(b.op("truediv", centered, b.const(divisor, acc)), compute)

    var = ctx.pointwise(s1.shape, out_dtype, variance, compute=compute)
    return var, mean


def _var(ctx, op, x, dim=None, correction=None, keepdim=False):
    return _variance(ctx, x, _dims(x, dim), correction, keepdim, _out(op))[0]


def _var_mean(ctx, op, x, dim=None, correction=None, keepdim=False):
    var, mean = _variance(ctx, x, _dims(x, dim), correction, keepdim, _out(op))
    if mean.dtype != _out(op, 1):
        mean = ctx.pointwise(mean.shape, _out(op, 1), lambda b: b.load(mean))
    return var, mean


def _std(ctx, op, x, dim=None, correction=None, keepdim=False):
    var, _ = _variance(ctx, x, _dims(x, dim), correction, keepdim, compute_dtype(_out(op)))
    return ctx.pointwise(var.shape, _out(op), lambda b: b.op("sqrt", b.load(var)))


def _scan(kind):
    def rule(ctx, op, x, dim, dtype=None):
        out = _out(op)
        if not x.shape:
            return ctx.pointwise((), out, lambda b: b.value(x))
        dim = norm_dim(dim, len(x.shape))
        b = BodyBuilder(x.shape, compute_dtype(out))
        v = b.value(x)
        b.store(b.cast(b.scan(v, kind, dim), out))
        return ctx.loop("scan", x.shape, out, b)

    return rule


REDUCTION_RULES = {
    "aten.sum.dim_IntList": _sum,
    "aten.sum.default": _sum,
    "aten.prod.default": _prod,
    "aten.prod.dim_int": _prod,
    "aten.mean.dim": _mean,
    "aten.mean.default": _mean,
    "aten.amax.default": _minmax("max"),
    "aten.amin.default": _minmax("min"),
    "aten.max.default": _minmax("max"),
    "aten.min.default": _minmax("min"),
    "aten.max.dim": _value_and_index("max", "argmax"),
    "aten.min.dim": _value_and_index("min", "argmin"),
    "aten.argmax.default": _arg("argmax"),
    "aten.argmin.default": _arg("argmin"),
    "aten.any.default": _logical("any"),
    "aten.any.dim": _logical("any"),
    "aten.any.dims": _logical("any"),
    "aten.all.default": _logical("all"),
    "aten.all.dim": _logical("all"),
    "aten.all.dims": _logical("all"),
    "aten.var.correction": _var,
    "aten.var_mean.correction": _var_mean,
    "aten.std.correction": _std,
    "aten.cumsum.default": _scan("sum"),
    "aten.cumprod.default": _scan("prod"),
}
