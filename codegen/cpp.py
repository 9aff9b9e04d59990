"""C++ kernels: one loop nest per fused kernel, OpenMP across the outer loop.

Op spellings are a table of templates; reduced-precision floats use
`_Float16` and a small bfloat16 struct, and are computed in float32 (the
lowering inserts the casts).
"""

from __future__ import annotations

from ir_text import IndexStyle, render_index

from .kernel_plan import Compute, KernelPlan, Load, Store

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

# Parallelise the outer loop only when there is enough work to pay for the threads.
PARALLEL_MIN_NUMEL = 32768

CPP_INDEX = IndexStyle(floordiv="({} / {})", mod="({} % {})")

PRELUDE = r"""#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// bfloat16 storage: conversions round to nearest even, as PyTorch does.
struct tirc_bf16 {
  uint16_t bits;
  tirc_bf16() = default;
  tirc_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = 0x7fc0; return; }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = (uint16_t)(u >> 16);
  }
  operator float() const {
    uint32_t u = (uint32_t)bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// NaN-propagating max/min, as torch.maximum/minimum.
template <typename T> static inline T tirc_maximum(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}
template <typename T> static inline T tirc_minimum(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? a : b;
}
// Python's floor division and modulo (the sign of the divisor).
template <typename T> static inline T tirc_floordiv(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) {
    return std::floor(a / b);
  } else {
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
}
template <typename T> static inline T tirc_remainder(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) {
    T r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else {
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
}
// pow: integers by squaring with wrap-around (as PyTorch); a negative exponent
// gives 0 except for bases 1 and -1.
template <typename T> static inline T tirc_pow(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) {
    return std::pow(a, b);
  } else {
    if (b < 0) return a == 1 ? T(1) : (a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0));
    using W = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
    W result = 1, base = (W)a;
    for (W e = (W)b; e; e >>= 1) {
      if (e & 1) result *= base;
      base *= base;
    }
    return (T)result;
  }
}
template <typename T> static inline T tirc_sign(T a) { return (T)((T(0) < a) - (a < T(0))); }
template <typename T> static inline T tirc_round(T a) {
  if constexpr (std::is_floating_point<T>::value) return std::nearbyint(a);
  else return a;
}
"""

_OPS = {
    "neg": "(-{0})",
    "abs": "std::abs({0})",
    "floor": "std::floor({0})",
    "ceil": "std::ceil({0})",
    "round": "tirc_round({0})",
    "trunc": "std::trunc({0})",
    "sign": "tirc_sign({0})",
    "reciprocal": "(1 / {0})",
    "exp": "std::exp({0})",
    "exp2": "std::exp2({0})",
    "expm1": "std::expm1({0})",
    "log": "std::log({0})",
    "log2": "std::log2({0})",
    "log10": "std::log10({0})",
    "log1p": "std::log1p({0})",
    "sqrt": "std::sqrt({0})",
    "rsqrt": "(1 / std::sqrt({0}))",
    "sin": "std::sin({0})",
    "cos": "std::cos({0})",
    "tan": "std::tan({0})",
    "asin": "std::asin({0})",
    "acos": "std::acos({0})",
    "atan": "std::atan({0})",
    "sinh": "std::sinh({0})",
    "cosh": "std::cosh({0})",
    "tanh": "std::tanh({0})",
    "sigmoid": "(1 / (1 + std::exp(-{0})))",
    "erf": "std::erf({0})",
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "truediv": "({0} / {1})",
    "maximum": "tirc_maximum({0}, {1})",
    "minimum": "tirc_minimum({0}, {1})",
    "pow": "tirc_pow({0}, {1})",
    "atan2": "std::atan2({0}, {1})",
    "floor_divide": "tirc_floordiv({0}, {1})",
    "remainder": "tirc_remainder({0}, {1})",
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
    "where": "({0} ? {1} : {2})",
    "to_dtype": "static_cast<{dtype}>({0})",
}
# Spellings that depend on the operand dtype.
_BOOL_OPS = {
    "bitwise_not": "(!{0})",
    "bitwise_and": "({0} && {1})",
    "bitwise_or": "({0} || {1})",
    "bitwise_xor": "({0} != {1})",
}
SUPPORTED_OPS = frozenset(_OPS) | {"load", "store", "constant"}


def _literal(value, dtype: str) -> str:
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


def _expr(stmt: Compute, dtypes: dict[str, str]) -> str:
    if stmt.op == "constant":
        return _literal(dict(stmt.attrs)["value"], stmt.dtype)
    operand_dtype = dtypes.get(stmt.args[0]) if stmt.args else None
    template = _BOOL_OPS.get(stmt.op) if operand_dtype == "b8" else None
    template = template or _OPS[stmt.op]
    return template.format(*stmt.args, dtype=C_TYPES[stmt.dtype])


def render_kernel(plan: KernelPlan) -> str:
    params = []
    for k, (name, dtype) in enumerate(plan.params):
        const = "const " if k < plan.num_inputs else ""
        params.append(f"{const}{C_TYPES[dtype]}* __restrict__ p_{name}")
    lines = [f"// {plan.name}: {', '.join(plan.nodes)}"]
    lines.append(f'extern "C" void {plan.name}({", ".join(params)}) {{')
    depth = 1
    numel = 1
    for s in plan.ranges:
        numel *= s
    for k, size in enumerate(plan.ranges):
        pad = "  " * depth
        if k == 0 and numel >= PARALLEL_MIN_NUMEL:
            lines.append(f"{pad}#pragma omp parallel for")
        lines.append(f"{pad}for (int64_t i{k} = 0; i{k} < {size}; ++i{k}) {{")
        depth += 1
    pad = "  " * depth
    dtypes: dict[str, str] = {}
    for stmt in plan.statements:
        if isinstance(stmt, Load):
            index = render_index(stmt.index, CPP_INDEX)
            lines.append(f"{pad}{C_TYPES[stmt.dtype]} {stmt.var} = p_{stmt.source}[{index}];")
            dtypes[stmt.var] = stmt.dtype
        elif isinstance(stmt, Compute):
            lines.append(f"{pad}{C_TYPES[stmt.dtype]} {stmt.var} = {_expr(stmt, dtypes)};")
            dtypes[stmt.var] = stmt.dtype
        elif isinstance(stmt, Store):
            index = render_index(stmt.index, CPP_INDEX)
            lines.append(f"{pad}p_{stmt.target}[{index}] = {stmt.var};")
    for k in range(len(plan.ranges), 0, -1):
        lines.append("  " * k + "}")
    lines.append("}")
    return "\n".join(lines)


def render_source(plans: list[KernelPlan]) -> str:
    return PRELUDE + "\n" + "\n\n".join(render_kernel(p) for p in plans) + "\n"
