"""Building loop bodies: loads through views with broadcasting, constants,
typed ops, casts, index values, indirect indices, reductions and scans."""

from __future__ import annotations

from dataclasses import dataclass

import sympy
import torch

from ir_text import (
    BODY_OPS,
    REDUCTION_RESULT,
    TORCH_DTYPES,
    BodyOp,
    Enum,
    Value,
    index_var,
    is_float,
    loop_vars,
    body_op_takes,
    wrapped_int,
)

from .tensors import LTensor, NotLowerable

# Reduced-precision floats are computed in float32 and rounded at the store,
# as Inductor does; per-op rounding then matches eager PyTorch.
_COMPUTE_UPCAST = {"f16": "f32", "bf16": "f32"}

_RESULT_RULES = {"compare": "b8", "logical": "b8"}


def compute_dtype(dtype: str) -> str:
    return _COMPUTE_UPCAST.get(dtype, dtype)


@dataclass(frozen=True)
class Operands:
    """How an op's arguments reach its compute dtype when ATen's type
    promotion gives f16 or bf16 (`dtype`) and the op computes in float32:
    as in eager, an argument of another dtype is rounded to `dtype` first
    (`i32 2049 * f16 1.5` is 3072, `f16 0.1 == 0.1` is true). A few ops read
    a scalar (a Python number; `exact_0d`: a 0-d tensor too, on the CPU) at
    its own precision (`exact`), as their ATen kernels take its original
    value: lower.EXACT_SCALARS, per device."""

    dtype: str
    exact: bool = False
    exact_0d: bool = False


def rounded_scalar(value, dtype: str) -> float:
    """A Python number as eager converts it to `dtype` (through float32)."""
    return float(torch.tensor(float(value), dtype=torch.float32).to(TORCH_DTYPES[dtype]))


class BodyBuilder:
    """Emits the ops of one loop body over `shape` (and `reduction` ranges)."""

    def __init__(
        self,
        shape: tuple[int, ...],
        compute: str,
        reduction: tuple[int, ...] = (),
        operands: Operands | None = None,
        device: str = "cpu",
    ):
        self.shape = tuple(shape)
        self.device = device  # "cpu" or "cuda": where eager's semantics differ (pointwise._bound)
        self.vars = loop_vars(len(shape))
        self.rvars = loop_vars(len(reduction), "r")
        self.compute = compute
        self.operands = operands
        self.ops: list[BodyOp] = []
        self.indirect_count = 0

    def _emit(self, name: str, operands, dtype: str, attrs=(), hint: str = "") -> Value:
        value = Value(hint, dtype)
        self.ops.append(BodyOp(value, name, tuple(operands), tuple(sorted(attrs))))
        return value

    def load_at(self, tensor: LTensor, idx) -> Value:
        """Load element `idx` (one index expression per dimension) of `tensor`."""
        v = Value("", tensor.dtype)
        self.ops.append(BodyOp(v, "load", (tensor.buffer,), (("index", tensor.index(idx)),)))
        return v

    def load(self, tensor: LTensor) -> Value:
        """Load `tensor` broadcast to this body's shape (dimensions aligned right)."""
        offset = len(self.shape) - len(tensor.shape)
        idx = [
            sympy.Integer(0) if size == 1 else self.vars[offset + d] for d, size in enumerate(tensor.shape)
        ]
        return self.load_at(tensor, idx)

    def const(self, value, dtype: str | None = None) -> Value:
        dtype = dtype or self.compute
        if dtype == "b8":
            value = bool(value)
        elif is_float(dtype):
            value = float(value)
        else:
            # A Python int operand wraps into the tensor's dtype (u8 + 300 adds 44).
            value = wrapped_int(int(value), dtype)
        return self._emit("constant", (), dtype, (("value", value),))

    def cast(self, v: Value, dtype: str) -> Value:
        if v.type == dtype:
            return v
        return self._emit("to_dtype", (v,), dtype, (("dtype", Enum(dtype)),))

    def value(self, arg, dtype: str | None = None) -> Value:
        """A tensor argument (loaded) or a scalar (a constant), in `dtype`
        (default: the compute dtype, through the promoted one: Operands)."""
        if dtype is None and self.operands is not None:
            return self._promoted(arg, self.operands)
        dtype = dtype or self.compute
        if isinstance(arg, LTensor):
            return self.cast(self.load(arg), dtype)
        return self.const(arg, dtype)

    def _promoted(self, arg, operands: Operands) -> Value:
        if not isinstance(arg, LTensor):
            value = arg if operands.exact else rounded_scalar(arg, operands.dtype)
            return self.const(value, self.compute)
        v = self.load(arg)
        if arg.dtype != operands.dtype and not (operands.exact_0d and not arg.shape):
            v = self.cast(v, operands.dtype)
        return self.cast(v, self.compute)

    def op(self, name: str, *operands: Value) -> Value:
        if operands and operands[0].type == "b8" and not body_op_takes(name, "b8"):
            # ATen refuses these on bool too (neg, sub, abs, pow, ...): the
            # program fails in eager, and its ATen call fails the same way.
            raise NotLowerable(f"{name} of bool")
        rule = BODY_OPS[name].rule
        return self._emit(name, operands, _RESULT_RULES.get(rule, operands[0].type))

    def where(self, cond: Value, a: Value, b: Value) -> Value:
        return self._emit("where", (cond, a, b), a.type)

    def index(self, expr) -> Value:
        """The value of an index expression, as i64."""
        return self._emit("index", (), "i64", (("index", sympy.sympify(expr)),))

    def in_range(self, expr, low: int | None, high: int | None) -> Value | None:
        """A b8 value: low <= expr < high (None when both bounds are absent)."""
        conds = []
        if low is not None:
            conds.append(self.op("ge", self.index(expr), self.const(low, "i64")))
        if high is not None:
            conds.append(self.op("lt", self.index(expr), self.const(high, "i64")))
        if not conds:
            return None
        out = conds[0]
        for c in conds[1:]:
            out = self.op("logical_and", out, c)
        return out

    def indirect(self, v: Value, size: int, wrap: bool = True) -> sympy.Symbol:
        """Use the integer value `v` as an index in [0, size): returns its
        symbol. A negative `v` counts from the end when `wrap` (Python's and
        advanced indexing's rule); gather, index_select and embedding refuse it."""
        name = f"ind{self.indirect_count}"
        self.indirect_count += 1
        attrs = (("size", int(size)),) if wrap else (("size", int(size)), ("wrap", False))
        self._emit("indirect", (v,), "i64", attrs, hint=name)
        return index_var(name)

    def reduce(self, v: Value, kind: str) -> Value:
        dtype = REDUCTION_RESULT.get(kind, v.type)
        return self._emit("reduce", (v,), dtype, (("reduction", Enum(kind)),))

    def scan(self, v: Value, kind: str, dim: int) -> Value:
        return self._emit("scan", (v,), v.type, (("dim", dim), ("reduction", Enum(kind))))

    def store(self, v: Value) -> None:
        self.ops.append(BodyOp(None, "store", (v,)))
