"""C++ kernels: one loop nest per fused kernel, OpenMP across the outer loop.

Op spellings are a table of templates; reduced-precision floats use
`_Float16` and a small bfloat16 struct, and are computed in float32 (the
lowering inserts the casts).
"""

from __future__ import annotations

from ir_text import IndexStyle, render_index

from .kernel_plan import Compute, KernelPlan, Load, Loop, Reduce, Scan, Store

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

CPP_INDEX = IndexStyle(
    floordiv="tirc_floordiv<int64_t>({}, {})",
    mod="tirc_remainder<int64_t>({}, {})",
    min="std::min<int64_t>({}, {})",
    max="std::max<int64_t>({}, {})",
)

PRELUDE = r"""#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <limits>
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
// Reduction identities, and the comparisons of argmax/argmin: the first
// NaN wins, then the first extreme value (as ATen).
template <typename T> static inline T tirc_lowest() {
  if constexpr (std::is_floating_point<T>::value) return -INFINITY;
  else return std::numeric_limits<T>::lowest();
}
template <typename T> static inline T tirc_highest() {
  if constexpr (std::is_floating_point<T>::value) return INFINITY;
  else return std::numeric_limits<T>::max();
}
template <typename T> static inline bool tirc_better_max(T v, T best) {
  return v > best || (v != v && best == best);
}
template <typename T> static inline bool tirc_better_min(T v, T best) {
  return v < best || (v != v && best == best);
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
    "indirect": "({0} < 0 ? {0} + {size} : {0})",
}
# Spellings that depend on the operand dtype.
_BOOL_OPS = {
    "bitwise_not": "(!{0})",
    "bitwise_and": "({0} && {1})",
    "bitwise_or": "({0} || {1})",
    "bitwise_xor": "({0} != {1})",
}
SUPPORTED_OPS = frozenset(_OPS) | {"load", "store", "constant", "index", "reduce", "scan"}


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
    if stmt.op == "index":
        return render_index(dict(stmt.attrs)["index"], CPP_INDEX)
    if stmt.op == "indirect":
        return _OPS["indirect"].format(stmt.args[0], size=f"INT64_C({dict(stmt.attrs)['size']})")
    operand_dtype = dtypes.get(stmt.args[0]) if stmt.args else None
    template = _BOOL_OPS.get(stmt.op) if operand_dtype == "b8" else None
    template = template or _OPS[stmt.op]
    return template.format(*stmt.args, dtype=C_TYPES[stmt.dtype])


def _signature(plan: KernelPlan, linkage: str = 'extern "C"') -> list[str]:
    params = []
    for k, (name, dtype) in enumerate(plan.params):
        const = "const " if k < plan.num_inputs else ""
        restrict = "" if name in plan.aliased else "__restrict__ "
        params.append(f"{const}{C_TYPES[dtype]}* {restrict}p_{name}")
    return [
        f"// {plan.name}: {', '.join(plan.nodes)}",
        f"{linkage} void {plan.name}({', '.join(params)}) {{",
    ]


def _numel(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


class _Body:
    """Renders statements at a given indentation, tracking each variable's dtype."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.dtypes: dict[str, str] = {}

    def statement(self, stmt, pad: str) -> None:
        if isinstance(stmt, Load):
            index = render_index(stmt.index, CPP_INDEX)
            self.lines.append(f"{pad}{C_TYPES[stmt.dtype]} {stmt.var} = p_{stmt.source}[{index}];")
        elif isinstance(stmt, Compute):
            self.lines.append(f"{pad}{C_TYPES[stmt.dtype]} {stmt.var} = {_expr(stmt, self.dtypes)};")
        elif isinstance(stmt, Store):
            index = render_index(stmt.index, CPP_INDEX)
            self.lines.append(f"{pad}p_{stmt.target}[{index}] = {stmt.var};")
            return
        self.dtypes[stmt.var] = stmt.dtype


def _open_loops(lines, names_sizes, depth: int, parallel: bool) -> int:
    for k, (name, size) in enumerate(names_sizes):
        pad = "  " * depth
        if k == 0 and parallel:
            lines.append(f"{pad}#pragma omp parallel for")
        lines.append(f"{pad}for (int64_t {name} = 0; {name} < {size}; ++{name}) {{")
        depth += 1
    return depth


def _close_loops(lines, depth: int, count: int) -> int:
    for _ in range(count):
        depth -= 1
        lines.append("  " * depth + "}")
    return depth


def render_kernel(plan: KernelPlan, linkage: str = 'extern "C"') -> str:
    if plan.nests:
        return _render_nests(plan)
    lines = _signature(plan, linkage)
    scan = next((s for s in plan.statements if isinstance(s, Scan)), None)
    if scan is not None:
        _scan_body(plan, scan, lines)
    else:
        _row_body(plan, lines)
    lines.append("}")
    return "\n".join(lines)


def _render_nests(plan: KernelPlan) -> str:
    """A kernel of several loop nests: one function per nest, and the
    kernel's entry point calling them in order (one launch from Python)."""
    parts = [render_kernel(nest, "static") for nest in plan.nests]
    lines = _signature(plan)
    for nest in plan.nests:
        lines.append(f"  {nest.name}({', '.join('p_' + name for name, _ in nest.params)});")
    lines.append("}")
    return "\n\n".join(parts + ["\n".join(lines)])


def _row_body(plan: KernelPlan, lines: list[str]) -> None:
    """Loops over the rows (OpenMP across the outer one); per row, the plan's
    steps: statements, and passes over the r-variables that accumulate."""
    outer = [(f"i{k}", s) for k, s in enumerate(plan.ranges)]
    total = _numel(plan.ranges) * _numel(plan.reduction)
    parallel = len(outer) > 0 and _numel(plan.ranges) > 1 and total >= PARALLEL_MIN_NUMEL
    depth = _open_loops(lines, outer, 1, parallel)
    body = _Body(lines)
    for step in plan.steps:
        if isinstance(step, Loop):
            _pass(plan, step, body, depth)
        else:
            body.statement(step, "  " * depth)
    _close_loops(lines, depth, len(outer))


# Accumulator start values and combining steps per reduction kind; {acc} is
# the accumulator, {v} the value of this iteration, {T} its C type.
_INIT = {
    "sum": "0",
    "prod": "1",
    "max": "tirc_lowest<{T}>()",
    "min": "tirc_highest<{T}>()",
    "any": "false",
    "all": "true",
}
_COMBINE = {
    "sum": "{acc} = {acc} + {v};",
    "prod": "{acc} = {acc} * {v};",
    "max": "{acc} = tirc_maximum({acc}, {v});",
    "min": "{acc} = tirc_minimum({acc}, {v});",
    "any": "{acc} = {acc} || {v};",
    "all": "{acc} = {acc} && {v};",
}


def _rindex(sizes) -> str:
    """The flat (row-major) index over the r-variables."""
    text = ""
    for k, size in enumerate(sizes):
        text = f"r{k}" if k == 0 else f"({text}) * {size} + r{k}"
    return text or "0"


def _pass(plan: KernelPlan, loop: Loop, body: "_Body", depth: int) -> None:
    """One pass over the r-variables: accumulators before it, results after."""
    lines = body.lines
    pad = "  " * depth
    reduces = [s for s in loop.statements if isinstance(s, Reduce)]
    for reduce in reduces:
        acc_type = C_TYPES[reduce.arg_dtype]
        acc = f"acc_{reduce.var}"
        if reduce.kind in ("argmax", "argmin"):
            lines.append(f"{pad}{acc_type} {acc} = 0;")
            lines.append(f"{pad}int64_t {acc}_index = 0;")
            lines.append(f"{pad}bool {acc}_first = true;")
        else:
            lines.append(f"{pad}{acc_type} {acc} = {_INIT[reduce.kind].format(T=acc_type)};")
    inner = [(f"r{k}", s) for k, s in enumerate(plan.reduction)]
    depth = _open_loops(lines, inner, depth, False)
    ipad = "  " * depth
    for stmt in loop.statements:
        if not isinstance(stmt, Reduce):
            body.statement(stmt, ipad)
            continue
        acc = f"acc_{stmt.var}"
        if stmt.kind in ("argmax", "argmin"):
            better = "tirc_better_max" if stmt.kind == "argmax" else "tirc_better_min"
            lines.append(f"{ipad}if ({acc}_first || {better}({stmt.arg}, {acc})) {{")
            lines.append(f"{ipad}  {acc} = {stmt.arg};")
            lines.append(f"{ipad}  {acc}_index = {_rindex(plan.reduction)};")
            lines.append(f"{ipad}  {acc}_first = false;")
            lines.append(f"{ipad}}}")
        else:
            lines.append(ipad + _COMBINE[stmt.kind].format(acc=acc, v=stmt.arg))
    depth = _close_loops(lines, depth, len(inner))
    for reduce in reduces:
        acc = f"acc_{reduce.var}"
        result = f"{acc}_index" if reduce.kind in ("argmax", "argmin") else acc
        lines.append(f"{pad}{C_TYPES[reduce.dtype]} {reduce.var} = {result};")
        body.dtypes[reduce.var] = reduce.dtype


def _scan_body(plan: KernelPlan, scan: Scan, lines: list[str]) -> None:
    """Loops over every dimension but the scanned one, which runs innermost
    and in order, carrying the running value."""
    outer = [(f"i{k}", s) for k, s in enumerate(plan.ranges) if k != scan.dim]
    parallel = len(outer) > 0 and _numel(plan.ranges) >= PARALLEL_MIN_NUMEL
    depth = _open_loops(lines, outer, 1, parallel)
    acc = f"acc_{scan.var}"
    lines.append(f"{'  ' * depth}{C_TYPES[scan.dtype]} {acc} = {_INIT[scan.kind]};")
    depth = _open_loops(lines, [(f"i{scan.dim}", plan.ranges[scan.dim])], depth, False)
    pad = "  " * depth
    body = _Body(lines)
    for stmt in plan.statements:
        if stmt is scan:
            lines.append(pad + _COMBINE[scan.kind].format(acc=acc, v=scan.arg))
            lines.append(f"{pad}{C_TYPES[scan.dtype]} {scan.var} = {acc};")
            body.dtypes[scan.var] = scan.dtype
        else:
            body.statement(stmt, pad)
    depth = _close_loops(lines, depth, 1)
    _close_loops(lines, depth, len(outer))


def render_source(plans: list[KernelPlan]) -> str:
    return PRELUDE + "\n" + "\n\n".join(render_kernel(p) for p in plans) + "\n"
