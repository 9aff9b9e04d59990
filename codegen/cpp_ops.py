"""C++ spellings of body ops, literals and reduction steps: tables, one entry per op."""

from __future__ import annotations

from ir_text import INT_DTYPES, IndexStyle, is_float, render_index

from .cpp_prelude import MATH_FUNCTIONS
from .kernel_plan import Compute, checked_op

C_TYPES = {
    "b8": "bool",
    "u8": "uint8_t",
    "i8": "int8_t",
    "i16": "int16_t",
    "i32": "int32_t",
    "i64": "int64_t",
    "f16": "_Float16",
    "bf16": "tirc_bf16",
    "f32": "float",
    "f64": "double",
}

CPP_INDEX = IndexStyle(
    floordiv="tirc_floordiv<int64_t>({}, {})",
    mod="tirc_remainder<int64_t>({}, {})",
    min="tirc_min_i64({}, {})",
    max="tirc_max_i64({}, {})",
)

_OPS = {
    "neg": "(-{0})",
    "abs": "tirc_abs({0})",
    "floor": "tirc_floor({0})",
    "ceil": "tirc_ceil({0})",
    "round": "tirc_round({0})",
    "trunc": "tirc_trunc({0})",
    "sign": "tirc_sign({0})",
    "reciprocal": "(1 / {0})",
    "sqrt": "tirc_sqrt({0})",
    "rsqrt": "(1 / tirc_sqrt({0}))",
    "sigmoid": "(1 / (1 + tirc_exp{f}(-{0})))",
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "truediv": "({0} / {1})",
    "maximum": "tirc_maximum({0}, {1})",
    "minimum": "tirc_minimum({0}, {1})",
    "pow": "tirc_pow({0}, {1})",
    "floor_divide": "tirc_floordiv({0}, {1})",
    "remainder": "tirc_remainder({0}, {1})",
    "fmod": "tirc_fmod({0}, {1})",
    "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})",
    "bitwise_xor": "({0} ^ {1})",
    "bitwise_not": "(~{0})",
    "eq": "({0} == {1})",
    "ne": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "logical_and": "((bool){0} && (bool){1})",
    "logical_or": "((bool){0} || (bool){1})",
    "logical_xor": "((bool){0} != (bool){1})",
    "logical_not": "(!{0})",
    "isnan": "({0} != {0})",
    "signbit": "tirc_signbit({0})",
    "copysign": "tirc_copysign({0}, {1})",
    "where": "({0} ? {1} : {2})",
    "to_dtype": "static_cast<{dtype}>({0})",
    # Checked (the prelude's tirc_index): an index out of range is recorded
    # for the wrapper's IndexError and read as 0, never out of bounds.
    # `site` names the op for the error (KernelPlan.sites).
    "indirect": "tirc_index({0}, {size}, {wrap}, p_error, {site})",
}
# libm functions: `expf` for float results, `exp` for double ones.
_OPS.update(
    {
        name: f"{name}{{f}}({', '.join('{%d}' % k for k in range(arity))})"
        for name, arity in MATH_FUNCTIONS
        if name != "pow"
    }
)
# exp through the prelude's tirc_expf, inlined into the vector loop rather
# than a call of libmvec's (figures in the prelude).
_OPS["exp"] = "tirc_exp{f}({0})"
# erf likewise, through the prelude's tirc_erff (figures there).
_OPS["erf"] = "tirc_erf{f}({0})"
# Spellings that depend on the operand dtype.
_BOOL_OPS = {
    "bitwise_not": "(!{0})",
    "bitwise_and": "({0} && {1})",
    "bitwise_or": "({0} || {1})",
    "bitwise_xor": "({0} != {1})",
}
_CHECKED_DIVISIONS = {
    "floor_divide": "tirc_floordiv({0}, {1}, p_error, {site})",
    "remainder": "tirc_remainder({0}, {1}, p_error, {site})",
    "fmod": "tirc_fmod({0}, {1}, p_error, {site})",
}
SUPPORTED_OPS = frozenset(_OPS) | {"load", "store", "constant", "index", "reduce", "scan"}


def literal(value, dtype: str) -> str:
    if dtype == "b8":
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "NAN"
        if value in (float("inf"), float("-inf")):
            return "INFINITY" if value > 0 else "-INFINITY"
        return f"{C_TYPES[dtype]}({value!r})"
    if dtype == "i64":
        return f"INT64_C({value})"
    return f"{C_TYPES[dtype]}({value})"


# 1 and 0 of each floating type (bfloat16's as floats, converted after).
_BOOL_AS_FLOAT = {
    "f16": ("(_Float16)1", "(_Float16)0"),
    "bf16": ("1.0f", "0.0f"),
    "f32": ("1.0f", "0.0f"),
    "f64": ("1.0", "0.0"),
}


def expr(stmt: Compute, dtypes: dict[str, str], ref) -> str:
    """The C++ expression of a Compute; `ref(var)` spells a variable.
    bfloat16 values are bits: every op but a select converts its bf16
    operands to float and a bf16 result back."""
    if stmt.op == "constant":
        value = literal(dict(stmt.attrs)["value"], "f32" if stmt.dtype == "bf16" else stmt.dtype)
        return f"tirc_to_bf16({value})" if stmt.dtype == "bf16" else value
    if stmt.op == "index":
        return render_index(dict(stmt.attrs)["index"], CPP_INDEX)
    operand_dtypes = [dtypes.get(a) for a in stmt.args]
    if stmt.op == "where":
        return _OPS["where"].format(*(ref(a) for a in stmt.args))
    args = [f"tirc_from_bf16({ref(a)})" if d == "bf16" else ref(a) for a, d in zip(stmt.args, operand_dtypes)]
    attrs = dict(stmt.attrs)
    if stmt.op == "indirect":
        size, wrap = f"INT64_C({attrs['size']})", int(attrs.get("wrap", True))
        return _OPS["indirect"].format(*args, size=size, wrap=wrap, site=attrs["site"])
    if stmt.op == "to_dtype" and operand_dtypes[0] == "b8" and is_float(stmt.dtype):
        # A select, not a conversion: g++ 12 vectorizes no loop that
        # converts a bool to a floating type, and a reduction that counts
        # a mask (RetinaNet's focal loss, `targets.sum()`) ran scalar, its
        # libmvec calls too: 5x the time (a 2-core EPYC, 1.28M elements).
        one, zero = _BOOL_AS_FLOAT[stmt.dtype]
        select = f"({args[0]} ? {one} : {zero})"
        return f"tirc_to_bf16({select})" if stmt.dtype == "bf16" else select
    if stmt.op == "to_dtype" and is_float(operand_dtypes[0]) and stmt.dtype in INT_DTYPES:
        # Through the prelude's conversions, defined where static_cast is
        # not (out of range, NaN); f16 through float, as their bounds are
        # not f16 values.
        value = f"(float){args[0]}" if operand_dtypes[0] == "f16" else args[0]
        convert = "tirc_to_i64" if stmt.dtype == "i64" else "tirc_to_i32"
        return f"static_cast<{C_TYPES[stmt.dtype]}>({convert}({value}))"
    template = _BOOL_OPS.get(stmt.op) if operand_dtypes and operand_dtypes[0] == "b8" else None
    if checked_op(stmt.op, stmt.dtype):  # an integer division: a divisor of 0 is recorded, not a trap
        template = _CHECKED_DIVISIONS[stmt.op]
    template = template or _OPS[stmt.op]
    if stmt.dtype == "bf16":
        if stmt.op == "to_dtype":
            return f"tirc_to_bf16((float)({args[0]}))"
        return f"tirc_to_bf16({template.format(*args, dtype='float', f='f')})"
    suffix = "" if stmt.dtype == "f64" else "f"
    return template.format(*args, dtype=C_TYPES[stmt.dtype], f=suffix, site=attrs.get("site"))


# Reduction identities per kind and dtype.
_LOWEST = {
    "b8": "false",
    "u8": "0",
    "i8": "INT8_MIN",
    "i16": "INT16_MIN",
    "i32": "INT32_MIN",
    "i64": "INT64_MIN",
}
_HIGHEST = {
    "b8": "true",
    "u8": "UINT8_MAX",
    "i8": "INT8_MAX",
    "i16": "INT16_MAX",
    "i32": "INT32_MAX",
    "i64": "INT64_MAX",
}


def identity(kind: str, dtype: str) -> str:
    """The start value of a `kind` accumulator of C type `dtype`."""
    if kind == "max":
        return _LOWEST.get(dtype, "-INFINITY")
    if kind == "min":
        return _HIGHEST.get(dtype, "INFINITY")
    return {"sum": "0", "prod": "1", "any": "false", "all": "true"}[kind]


# Combining steps; {acc} is the accumulator, {v} this iteration's value.
COMBINE = {
    "sum": "{acc} = {acc} + {v};",
    "prod": "{acc} = {acc} * {v};",
    "max": "{acc} = tirc_maximum({acc}, {v});",
    "min": "{acc} = tirc_minimum({acc}, {v});",
    "any": "{acc} = {acc} || {v};",
    "all": "{acc} = {acc} && {v};",
}
# Accumulating in a simd reduction loop: (C type, operator, start value,
# combining step). Each lane keeps its own accumulator and OpenMP combines
# them after the loop. max/min take the plain select (NaN-propagating
# selects run slower there; measured: docs/design-notes.md, "C++ kernels")
# and an int NaN flag beside, and any/all use ints, as bool accumulators do
# not vectorize.
SIMD_REDUCTION = {
    "sum": (None, "+", None, COMBINE["sum"]),
    "prod": (None, "*", None, COMBINE["prod"]),
    "max": (None, "max", None, "{acc} = {acc} > {v} ? {acc} : {v};"),
    "min": (None, "min", None, "{acc} = {acc} < {v} ? {acc} : {v};"),
    "any": ("int", "|", "0", "{acc} |= ({v} != 0);"),
    "all": ("int", "&", "1", "{acc} &= ({v} != 0);"),
}
