"""Lowering rules that build loop.reduction and loop.scan nodes.

A reduction node iterates its output shape with i-variables and the reduced
dimensions with r-variables; its body loads and computes per (i, r), then
`reduce`s, then an epilogue (a mean's division, say) runs per output
element. Variance is two passes over the data: a first mean, then the
sums of the deviations from it and of their squares, which give the mean
and the variance (_variance).
"""

from __future__ import annotations

from .body import BodyBuilder, compute_dtype
from .tensors import LTensor, NotLowerable, norm_dim


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
    red = [x.shape[d] for d in dims]
    b = BodyBuilder(out_shape, acc, red)
    idx, ivars, rvars = [], iter(b.vars), iter(b.rvars)
    for d in range(rank):
        if d in dims:
            idx.append(next(rvars))
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
    return ctx.loop("reduction", out_shape, out_dtype, b, red)


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
    """(var, mean) in two passes over the data; both shaped as the
    keepdim-or-not output."""
    n = _numel(x, dims)
    acc = compute_dtype(out_dtype)

    def average(b, r):
        return b.op("truediv", r, b.const(n))

    def deviation_from(center):
        def pre(b, v, idx):
            return b.op(
                "sub", b.cast(v, acc), b.load_at(center, [b.vars[k] for k in range(len(center.shape))])
            )

        return pre

    # Shifted data: the deviations from a first mean m0 = sum / n (exact
    # differences) give the mean, m0 + s1 / n, rounded about once where sum
    # / n is off by an ulp or more, which layer norm's rsqrt(var + eps)
    # scales by up to 316 (a constant row gave 4e-5 where eager gives
    # exactly 0); and the variance, (s2 - s1^2 / n) / divisor, with s2 the
    # sum of squared deviations. s1 and s2 come from one pass over the data.
    first = reduction(ctx, x, dims, keepdim, acc, "sum", acc=acc, post=average)
    deviation = deviation_from(first)
    s1 = reduction(ctx, x, dims, keepdim, acc, "sum", acc=acc, pre=deviation)

    def squared(b, v, idx):
        d = deviation(b, v, idx)
        return b.op("mul", d, d)

    s2 = reduction(ctx, x, dims, keepdim, acc, "sum", acc=acc, pre=squared)
    mean = ctx.pointwise(
        first.shape, acc, lambda b: b.op("add", b.load(first), b.op("truediv", b.load(s1), b.const(n)))
    )
    divisor = max(n - (1 if correction is None else correction), 0)

    def variance(b):
        t = b.load(s1)
        centered = b.op("sub", b.load(s2), b.op("truediv", b.op("mul", t, t), b.const(n)))
        # Rounding can leave a constant row's at -1e-20: its std would be NaN.
        centered = b.op("maximum", centered, b.const(0.0))
        return b.op("truediv", centered, b.const(divisor))

    var = ctx.pointwise(first.shape, out_dtype, variance, compute=acc)
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
