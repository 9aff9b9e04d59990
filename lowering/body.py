"""Building loop bodies: loads with broadcasting, constants, typed ops, casts."""

from __future__ import annotations

import sympy

from ir_text import BODY_OPS, BodyOp, BufferType, Enum, Value, is_float, loop_vars

# Reduced-precision floats are computed in float32 and rounded at the store,
# as Inductor does; per-op rounding then matches eager PyTorch.
_COMPUTE_UPCAST = {"f16": "f32", "bf16": "f32"}

_RESULT_RULES = {"compare": "b8", "logical": "b8"}


def compute_dtype(dtype: str) -> str:
    return _COMPUTE_UPCAST.get(dtype, dtype)


class BodyBuilder:
    """Emits the ops of one pointwise loop body over `shape`."""

    def __init__(self, shape: tuple[int, ...], compute: str):
        self.shape = tuple(shape)
        self.vars = loop_vars(len(shape))
        self.compute = compute
        self.ops: list[BodyOp] = []

    def _emit(self, name: str, operands, dtype: str, attrs=()) -> Value:
        value = Value("", dtype)
        self.ops.append(BodyOp(value, name, tuple(operands), tuple(sorted(attrs))))
        return value

    def load(self, buffer: Value) -> Value:
        """Load `buffer` broadcast to this body's shape (dimensions aligned right)."""
        t: BufferType = buffer.type
        offset = len(self.shape) - len(t.shape)
        index = sympy.Integer(0)
        for d, (size, stride) in enumerate(zip(t.shape, t.strides)):
            if size != 1:
                index += self.vars[offset + d] * stride
        v = Value("", t.dtype)
        self.ops.append(BodyOp(v, "load", (buffer,), (("index", index),)))
        return v

    def const(self, value, dtype: str | None = None) -> Value:
        dtype = dtype or self.compute
        if dtype == "b8":
            value = bool(value)
        elif is_float(dtype):
            value = float(value)
        else:
            value = int(value)
        return self._emit("constant", (), dtype, (("value", value),))

    def cast(self, v: Value, dtype: str) -> Value:
        if v.type == dtype:
            return v
        return self._emit("to_dtype", (v,), dtype, (("dtype", Enum(dtype)),))

    def value(self, arg, dtype: str | None = None) -> Value:
        """A tensor argument (loaded) or a scalar (a constant), in `dtype`."""
        dtype = dtype or self.compute
        if isinstance(arg, Value):
            return self.cast(self.load(arg), dtype)
        return self.const(arg, dtype)

    def op(self, name: str, *operands: Value) -> Value:
        rule = BODY_OPS[name].rule
        return self._emit(name, operands, _RESULT_RULES.get(rule, operands[0].type))

    def where(self, cond: Value, a: Value, b: Value) -> Value:
        return self._emit("where", (cond, a, b), a.type)

    def store(self, v: Value) -> None:
        self.ops.append(BodyOp(None, "store", (v,)))
