"""Lowering rules of pointwise ATen ops: one small function per op, in a table.

A rule gets a BodyBuilder whose compute dtype is already chosen, the op's
arguments (tensor arguments as buffer Values, scalars as Python numbers) and
keyword arguments; it returns the body value to store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from ir_text import is_float, to_torch

from .body import BodyBuilder
from .tensors import NotLowerable


@dataclass(frozen=True)
class PointwiseRule:
    fn: Callable
    # How the compute dtype is chosen: "out" (the result's dtype), "promote"
    # (the promoted dtype of the tensor arguments, for comparisons), "bool".
    compute: str = "out"
    # Positions of the arguments that take part in type promotion.
    promote_args: tuple[int, ...] = (0, 1)


POINTWISE: dict[str, PointwiseRule] = {}


def rule(*targets: str, compute: str = "out", promote_args=(0, 1)):
    def register(fn):
        for target in targets:
            POINTWISE[target] = PointwiseRule(fn, compute, promote_args)
        return fn

    return register


def _unary(body_op: str, *targets: str):
    rule(*targets)(lambda b, x: b.op(body_op, b.value(x)))


def _binary(body_op: str, *targets: str, compute: str = "out"):
    rule(*targets, compute=compute)(lambda b, x, y: b.op(body_op, b.value(x), b.value(y)))


for _name in (
    "neg abs floor ceil trunc sign exp exp2 expm1 log log2 log10 log1p sqrt rsqrt "
    "sin cos tan asin acos atan sinh cosh tanh sigmoid erf reciprocal"
).split():
    _unary(_name, f"aten.{_name}.default")
_unary("round", "aten.round.default")
_unary("bitwise_not", "aten.bitwise_not.default")

_binary("mul", "aten.mul.Tensor", "aten.mul.Scalar")


@rule("aten.div.Tensor", "aten.div.Scalar")
def _truediv(b: BodyBuilder, x, y):
    """On a GPU, eager divides a float tensor by a Python number as a
    multiplication by the number's reciprocal, rounded to the compute dtype
    (ATen's CUDA kernel for a CPU scalar divisor); `(x - m) / 41.0` then
    differs from the rounded quotient by an ulp, and a floor of it by 1. On
    the CPU it divides."""
    number = isinstance(y, (int, float)) and not isinstance(y, bool)
    if b.device == "cuda" and number and y != 0 and b.compute in ("f32", "f64"):
        dtype = to_torch(b.compute)
        inverse = float(torch.tensor(1.0, dtype=dtype) / torch.tensor(y, dtype=dtype))
        return b.op("mul", b.value(x), b.const(inverse, b.compute))
    return b.op("truediv", b.value(x), b.value(y))


_binary("maximum", "aten.maximum.default")
_binary("minimum", "aten.minimum.default")
_binary("pow", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")


@rule("aten.pow.Tensor_Scalar")
def _pow_scalar(b: BodyBuilder, x, exponent):
    """Eager computes a float tensor to the power 0.5 as sqrt and to -0.5 as
    rsqrt, which differ from C's pow at -inf (NaN, not inf) and -0.0, and
    to -1 as reciprocal. Its float kernels (CPU and CUDA) multiply for 2, 3
    and -2: x*x, x*x*x, 1/(x*x), each step rounded to the tensor's dtype;
    so does tirc (`_POWERS`), where the steps round alike: every float
    dtype for 2 and -1 (a square of a half is exact in float32), float32
    and float64 for 3 and -2. powf gave other last bits on some inputs
    (test_numeric_edges' small_integer_powers)."""
    if type(exponent) is int and exponent < 0 and not is_float(b.compute):
        # Eager raises "Integers to negative integer powers are not allowed";
        # the ATen call does the same when the program runs.
        raise NotLowerable("an integer tensor to a negative integer power")
    if b.compute in ("f32", "f64") and exponent in (0.5, -0.5):
        return b.op("sqrt" if exponent > 0 else "rsqrt", b.value(x))
    stored = b.operands.dtype if b.operands is not None else b.compute
    power = _POWERS.get(exponent) if not isinstance(exponent, bool) and is_float(b.compute) else None
    if power is not None and (exponent in (2, -1) or stored == b.compute):
        return power(b, b.value(x))
    return b.op("pow", b.value(x), b.value(exponent))


_POWERS = {
    2: lambda b, v: b.op("mul", v, v),
    3: lambda b, v: b.op("mul", b.op("mul", v, v), v),
    -1: lambda b, v: b.op("reciprocal", v),
    -2: lambda b, v: b.op("reciprocal", b.op("mul", v, v)),
}


_binary("atan2", "aten.atan2.default")
_binary("remainder", "aten.remainder.Tensor", "aten.remainder.Scalar")
_binary("bitwise_and", "aten.bitwise_and.Tensor", "aten.bitwise_and.Scalar")
_binary("bitwise_or", "aten.bitwise_or.Tensor", "aten.bitwise_or.Scalar")
_binary("bitwise_xor", "aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar")
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _binary(_name, f"aten.{_name}.Tensor", f"aten.{_name}.Scalar", compute="promote")
for _name in ("logical_and", "logical_or", "logical_xor"):
    _binary(_name, f"aten.{_name}.default", compute="bool")


@rule("aten.logical_not.default", compute="bool")
def _logical_not(b, x):
    return b.op("logical_not", b.value(x))


@rule("aten.isinf.default", compute="promote", promote_args=(0,))
def _isinf(b, x):
    v = b.value(x)
    if not b.compute.startswith(("f", "bf")):
        return b.const(False, "b8")
    return b.op("eq", b.op("abs", v), b.const(float("inf")))


@rule("aten.round.decimals")
def _round_decimals(b: BodyBuilder, x, decimals=0):
    """As ATen: round(x * 10^d) / 10^d (and x / 10^-d * 10^-d for d < 0)."""
    v = b.value(x)
    if decimals >= 0:
        scale = b.const(10.0**decimals)
        return b.op("truediv", b.op("round", b.op("mul", v, scale)), scale)
    scale = b.const(10.0 ** (-decimals))
    return b.op("mul", b.op("round", b.op("truediv", v, scale)), scale)


@rule("aten.isnan.default", compute="promote", promote_args=(0,))
def _isnan(b, x):
    return b.op("isnan", b.value(x))


@rule("aten.signbit.default", compute="promote", promote_args=(0,))
def _signbit(b, x):
    return b.op("signbit", b.value(x))


@rule("aten.copysign.Tensor", "aten.copysign.Scalar")
def _copysign(b: BodyBuilder, x, y):
    """|x| with y's sign bit (-0.0 and a negative NaN count as negative)."""
    return b.op("copysign", b.value(x), b.value(y))


def _nan_ignoring(body_op: str):
    """fmax and fmin: a NaN operand gives the other one (NaN when both are)."""

    def lowering(b: BodyBuilder, x, y):
        x, y = b.value(x), b.value(y)
        best = b.op(body_op, x, y)
        if not b.compute.startswith(("f", "bf")):
            return best
        return b.where(b.op("isnan", x), y, b.where(b.op("isnan", y), x, best))

    return lowering


rule("aten.fmax.default")(_nan_ignoring("maximum"))
rule("aten.fmin.default")(_nan_ignoring("minimum"))


def _scaled(body_op: str):
    """`x OP alpha * y`, the form of aten.add and aten.sub."""

    def lowering(b: BodyBuilder, x, y, alpha=1):
        x, y = b.value(x), b.value(y)
        if alpha != 1:
            y = b.op("mul", y, b.const(alpha))
        return b.op(body_op, x, y)

    return lowering


_add = rule("aten.add.Tensor", "aten.add.Scalar")(_scaled("add"))
_sub = rule("aten.sub.Tensor", "aten.sub.Scalar")(_scaled("sub"))


@rule("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(b: BodyBuilder, x, y, alpha=1):
    return _sub(b, y, x, alpha)


@rule("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(b: BodyBuilder, x, y, rounding_mode=None):
    x, y = b.value(x), b.value(y)
    if rounding_mode == "floor":
        return b.op("floor_divide", x, y)
    if rounding_mode != "trunc":
        return b.op("truediv", x, y)
    if b.compute.startswith(("f", "bf")):
        return b.op("trunc", b.op("truediv", x, y))
    # Integers: floor division, one up where the signs differ and it was inexact.
    q = b.op("floor_divide", x, y)
    zero = b.const(0)
    inexact = b.op("ne", b.op("remainder", x, y), zero)
    signs_differ = b.op("ne", b.op("lt", x, zero), b.op("lt", y, zero))
    return b.where(b.op("logical_and", inexact, signs_differ), b.op("add", q, b.const(1)), q)


_binary("fmod", "aten.fmod.Tensor", "aten.fmod.Scalar")


@rule("aten.relu.default")
def _relu(b: BodyBuilder, x):
    return _bound(b, b.value(x), 0, "lt")


def _clamp(b: BodyBuilder, x, low, high):
    v = b.value(x)
    if low is not None:
        v = _bound(b, v, low, "lt")
    if high is not None:
        v = _bound(b, v, high, "gt")
    return v


def _bound(b: BodyBuilder, v, bound, past: str):
    """`v`, or `bound` where `v` is past it (`lt` a lower bound, `gt` an
    upper one). On the CPU a number bound is a select, as eager's clamp
    there, so that relu(-0.0) is -0.0 and a NaN passes; eager's CUDA clamp
    is a maximum (relu(-0.0) is 0.0), and so is a tensor bound (which may be
    NaN, and then wins): a NaN-propagating maximum or minimum."""
    if b.device == "cpu" and isinstance(bound, (int, float)) and not math.isnan(bound):
        c = b.value(bound)
        return b.where(b.op(past, v, c), c, v)
    return b.op("maximum" if past == "lt" else "minimum", v, b.value(bound))


@rule("aten.clamp.default", "aten.clamp.Tensor")
def _clamp_rule(b, x, min=None, max=None):
    return _clamp(b, x, min, max)


@rule("aten.clamp_min.default", "aten.clamp_min.Tensor")
def _clamp_min(b, x, min):
    return _clamp(b, x, min, None)


@rule("aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp_max(b, x, max):
    return _clamp(b, x, None, max)


@rule("aten.hardtanh.default")
def _hardtanh(b, x, min_val=-1.0, max_val=1.0):
    return _clamp(b, x, min_val, max_val)


@rule("aten.gelu.default")
def _gelu(b: BodyBuilder, x, approximate="none"):
    v = b.value(x)
    half = b.op("mul", v, b.const(0.5))
    if approximate == "tanh":
        cube = b.op("mul", b.op("mul", v, v), v)
        inner = b.op("add", v, b.op("mul", cube, b.const(0.044715)))
        t = b.op("tanh", b.op("mul", inner, b.const(math.sqrt(2.0 / math.pi))))
    else:
        t = b.op("erf", b.op("mul", v, b.const(math.sqrt(0.5))))
    return b.op("mul", half, b.op("add", t, b.const(1.0)))


@rule("aten.silu.default")
def _silu(b: BodyBuilder, x):
    v = b.value(x)
    return b.op("mul", v, b.op("sigmoid", v))


@rule("aten.leaky_relu.default")
def _leaky_relu(b: BodyBuilder, x, negative_slope=0.01):
    v = b.value(x)
    return b.where(b.op("gt", v, b.const(0)), v, b.op("mul", v, b.const(negative_slope)))


@rule("aten.elu.default")
def _elu(b: BodyBuilder, x, alpha=1.0, scale=1.0, input_scale=1.0):
    v = b.value(x)
    neg = b.op("mul", b.op("expm1", b.op("mul", v, b.const(input_scale))), b.const(alpha))
    return b.op("mul", b.where(b.op("gt", v, b.const(0)), v, neg), b.const(scale))


@rule("aten.where.self", compute="out", promote_args=(1, 2))
def _where(b: BodyBuilder, cond, x, y):
    return b.where(b.value(cond, "b8"), b.value(x), b.value(y))


# dtype, layout, device, pin_memory, memory_format: the result's type already
# says the dtype, and the rest do not change the values.
@rule("aten.copy.default")
def _copy(b: BodyBuilder, destination, source, non_blocking=False):
    """`destination` overwritten with `source` (broadcast, cast): the functional copy_."""
    return b.value(source)


@rule("aten._to_copy.default")
def _to_copy(b: BodyBuilder, x, **_dtype_layout_device):
    return b.value(x)


@rule("aten.full.default")
def _full(b: BodyBuilder, size, fill_value, **_dtype_layout_device):
    return b.const(fill_value)


@rule("aten.scalar_tensor.default")
def _scalar_tensor(b: BodyBuilder, s, **_dtype_layout_device):
    return b.const(s)
