"""Triton kernels, one per fused kernel, in the shape its plan needs:

- pointwise: a 1-D block over the flattened iteration space; loop variables
  are recovered from `xindex` with // and %.
- reduction: a 2-D tile of output elements (XBLOCK) by reduction lanes
  (RBLOCK). A loop walks the reduction in chunks of RBLOCK, each lane keeping
  its own partial result; the lanes of a row are combined after the loop (as
  Inductor's looped reductions), and the epilogue runs on an [XBLOCK, 1] column.
- scan: a 2-D tile of rows (every element but the scanned dimension) by RBLOCK
  positions along it; each chunk is scanned with tl.cumsum/tl.cumprod and the
  running total is carried to the next chunk.

The same source runs on NVIDIA GPUs and, with TRITON_INTERPRET=1, on the CPU.
Only `triton.language` core functions are used (libdevice does not run under
the interpreter), so functions it lacks are spelled with identities.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy
import torch

from ir_text import FloorDiv, IndexStyle, Mod, render_index, to_torch

from .kernel_plan import Compute, KernelPlan, Load, Loop, Reduce, Scan, Store

TL_TYPES = {
    "b8": "tl.int1",
    "u8": "tl.uint8",
    "i8": "tl.int8",
    "i16": "tl.int16",
    "i32": "tl.int32",
    "i64": "tl.int64",
    "f16": "tl.float16",
    "bf16": "tl.bfloat16",
    "f32": "tl.float32",
    "f64": "tl.float64",
}

# render_index leaves operands bare (`13*i2 + 15`), so the infix operators parenthesize them.
TRITON_INDEX = IndexStyle(
    floordiv="(({}) // ({}))", mod="(({}) % ({}))", min="tl.minimum({}, {})", max="tl.maximum({}, {})"
)
# Triton's integer // and % truncate toward zero, as C's do; an index whose
# dividend may be negative uses the helpers that round as Python does.
SIGNED_INDEX = IndexStyle(
    floordiv="_floordiv({}, {})", mod="_remainder({}, {})", min="tl.minimum({}, {})", max="tl.maximum({}, {})"
)
XBLOCK_MAX = 1024
RBLOCK_MAX = 1024
TILE_MAX = 4096  # XBLOCK * RBLOCK of reduction and scan kernels

_NAN = "tl.PropagateNan.ALL"
_OPS = {
    "neg": "(-{0})",
    "abs": "tl.abs({0})",
    "floor": "tl.floor({0})",
    "ceil": "tl.ceil({0})",
    "trunc": "tl.where({0} < 0, tl.ceil({0}), tl.floor({0}))",
    "round": "_round_half_even({0})",
    "sign": "(({0} > 0).to({dtype}) - ({0} < 0).to({dtype}))",
    "reciprocal": "(1.0 / {0})",
    "exp": "tl.exp({0})",
    "exp2": "tl.exp2({0})",
    "expm1": "(tl.exp({0}) - 1.0)",
    "log": "tl.log({0})",
    "log2": "tl.log2({0})",
    "log10": "(tl.log({0}) * 0.4342944819032518)",
    "log1p": "tl.log(1.0 + {0})",
    "sqrt": "tl.sqrt({0})",
    "rsqrt": "tl.rsqrt({0})",
    "sin": "tl.sin({0})",
    "cos": "tl.cos({0})",
    "tan": "(tl.sin({0}) / tl.cos({0}))",
    "asin": "_asin({0})",
    "acos": "(1.5707963267948966 - _asin({0}))",
    "atan": "_atan({0})",
    "sinh": "((tl.exp({0}) - tl.exp(-{0})) * 0.5)",
    "cosh": "((tl.exp({0}) + tl.exp(-{0})) * 0.5)",
    "tanh": "(2.0 * tl.sigmoid(2.0 * {0}) - 1.0)",
    "sigmoid": "tl.sigmoid({0})",
    "erf": "tl.erf({0})",
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "truediv": "({0} / {1})",
    "maximum": "tl.maximum({0}, {1}, propagate_nan=" + _NAN + ")",
    "minimum": "tl.minimum({0}, {1}, propagate_nan=" + _NAN + ")",
    "pow": "_pow({0}, {1})",
    "atan2": "_atan2({0}, {1})",
    "floor_divide": "_floordiv({0}, {1})",
    "remainder": "_remainder({0}, {1})",
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
    "logical_and": "(({0} != 0) & ({1} != 0))",
    "logical_or": "(({0} != 0) | ({1} != 0))",
    "logical_xor": "(({0} != 0) ^ ({1} != 0))",
    "logical_not": "({0} == 0)",
    "isnan": "({0} != {0})",
    "where": "tl.where({0}, {1}, {2})",
    "to_dtype": "{0}.to({dtype})",
}
# Spellings that depend on the operand dtype: rounding is the identity on
# integers, and bool arithmetic is logic (int1 addition would wrap).
_INT_OPS = {"floor": "{0}", "ceil": "{0}", "trunc": "{0}", "round": "{0}"}
_BOOL_OPS = {"add": "({0} | {1})", "mul": "({0} & {1})", "maximum": "({0} | {1})", "minimum": "({0} & {1})"}
SUPPORTED_OPS = frozenset(_OPS) | {"load", "store", "constant", "index", "indirect", "reduce", "scan"}

# Helpers for ops triton.language lacks; emitted once per module, when used.
# A dtype branch is an if/else with one return: compiled Triton (unlike the
# interpreter) still builds the code after an early return in a constexpr if.
HELPERS = {
    "_round_half_even": """
@triton.jit
def _round_half_even(x):
    r = tl.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0
    return tl.where(tie & odd, r - 1.0, r)
""",
    "_floordiv": """
@triton.jit
def _floordiv(a, b):
    if a.dtype.is_floating():
        q = tl.floor(a / b)
    else:
        q = a // b
        q = tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)
    return q
""",
    "_remainder": """
@triton.jit
def _remainder(a, b):
    if a.dtype.is_floating():
        r = a - b * tl.floor(a / b)
    else:
        r = a % b
        r = tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return r
""",
    "_pow": """
@triton.jit
def _pow(a, b):
    if a.dtype.is_floating():
        mag = tl.exp(b * tl.log(tl.abs(a)))
        b_odd = (b - 2.0 * tl.floor(b * 0.5)) == 1.0
        b_int = tl.floor(b) == b
        neg = tl.where(b_int, tl.where(b_odd, -mag, mag), float("nan"))
        zero = tl.where(b == 0, 1.0, tl.where(b > 0, 0.0, float("inf")))
        out = tl.where(a > 0, mag, tl.where(a == 0, zero, neg))
        acc = tl.where(b == 0, 1.0, out)
    else:
        # Integers: square and multiply, wrapping as PyTorch does; a negative
        # exponent gives 0 except for bases 1 and -1.
        acc = tl.full(a.shape, 1, a.dtype)
        base = a
        e = tl.where(b < 0, 0, b)
        for _ in tl.static_range(63):
            acc = tl.where((e & 1) != 0, acc * base, acc)
            base = base * base
            e = e >> 1
        if a.dtype.is_int_signed():
            odd = (b & 1) != 0
            negative = tl.where(a == 1, 1, tl.where(a == -1, tl.where(odd, -1, 1), 0)).to(a.dtype)
            acc = tl.where(b < 0, negative, acc)
    return acc
""",
    "_atan": """
@triton.jit
def _atan(x):
    # atan by range reduction to |t| <= tan(pi/12) and a short series.
    ax = tl.abs(x)
    inv = ax > 1.0
    t = tl.where(inv, 1.0 / ax, ax)
    shift = t > 0.2679491924311227
    t = tl.where(shift, (t - 0.5773502691896257) / (1.0 + 0.5773502691896257 * t), t)
    t2 = t * t
    p = t * (1.0 - t2 * (0.3333333333333333 - t2 * (0.2 - t2 * (0.14285714285714285 - t2 * 0.1111111111111111))))
    p = tl.where(shift, p + 0.5235987755982988, p)
    p = tl.where(inv, 1.5707963267948966 - p, p)
    return tl.where(x < 0, -p, p)
""",
    "_asin": """
@triton.jit
def _asin(x):
    return _atan(x / tl.sqrt((1.0 - x) * (1.0 + x)))
""",
    "_atan2": """
@triton.jit
def _atan2(y, x):
    a = _atan(y / x)
    pi = 3.141592653589793
    a = tl.where(x < 0, tl.where(y < 0, a - pi, a + pi), a)
    a = tl.where(x == 0, tl.where(y > 0, pi / 2, tl.where(y < 0, -pi / 2, 0.0)), a)
    return a
""",
}
# Round to nearest even explicitly: the interpreter's float->bfloat16 cast truncates.
HELPERS["_to_bf16"] = """
@triton.jit
def _to_bf16(x):
    x = x.to(tl.float32)
    u = x.to(tl.uint32, bitcast=True)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    rounded = u.to(tl.float32, bitcast=True)
    return tl.where(x != x, x, rounded).to(tl.bfloat16)
"""
# Row reductions of a 2-D tile (along axis 1), for the end of a reduction loop.
HELPERS["_mul"] = """
@triton.jit
def _mul(a, b):
    return a * b
"""
HELPERS["_max_rows"] = """
@triton.jit
def _max_rows(x):
    # tl.max drops NaNs (the interpreter's nanmax, the GPU's maxnum); torch.amax keeps them.
    m = tl.max(x, 1)
    if x.dtype.is_floating():
        m = tl.where(tl.max((x != x).to(tl.int8), 1) != 0, float("nan"), m)
    return m
"""
HELPERS["_min_rows"] = """
@triton.jit
def _min_rows(x):
    m = tl.min(x, 1)
    if x.dtype.is_floating():
        m = tl.where(tl.max((x != x).to(tl.int8), 1) != 0, float("nan"), m)
    return m
"""
# Each lane holds its best value and the first index holding it; a row's
# result is the smallest index among the lanes that hold the row's best value
# (a NaN above all), so ties and NaNs resolve to the first, as in ATen. Two
# plain reductions rather than a tuple tl.reduce, which the interpreter runs
# element by element.
HELPERS["_argmax_rows"] = """
@triton.jit
def _argmax_rows(value, index):
    best = _max_rows(value)[:, None]
    hit = (value == best) | ((value != value) & (best != best))
    return tl.min(tl.where(hit, index, 9223372036854775807), 1)
"""
HELPERS["_argmin_rows"] = """
@triton.jit
def _argmin_rows(value, index):
    best = _min_rows(value)[:, None]
    hit = (value == best) | ((value != value) & (best != best))
    return tl.min(tl.where(hit, index, 9223372036854775807), 1)
"""
HELPERS["_last_column"] = """
@triton.jit
def _last_column(x):
    last = tl.arange(0, x.shape[1])[None, :] == x.shape[1] - 1
    return tl.sum(tl.where(last, x, 0), 1)[:, None]
"""
_HELPER_DEPS = {
    "_asin": ("_atan",),
    "_atan2": ("_atan",),
    "_argmax_rows": ("_max_rows",),
    "_argmin_rows": ("_min_rows",),
}

# Per-lane accumulation of a reduction and the combination of a row's lanes
# after the loop; {acc} is the lane accumulator, {v} this chunk's value.
_ACCUMULATE = {
    "sum": "{acc} + {v}",
    "prod": "{acc} * {v}",
    "max": "tl.maximum({acc}, {v}, propagate_nan=" + _NAN + ")",
    "min": "tl.minimum({acc}, {v}, propagate_nan=" + _NAN + ")",
    "any": "{acc} | ({v} != 0)",
    "all": "{acc} & ({v} != 0)",
}
# argmax/argmin: a strictly better value (or a first NaN) replaces the lane's
# pair; lanes see their indices in increasing order, so a tie keeps the first.
_BETTER = {
    "argmax": "({v} > {acc}) | (({v} != {v}) & ({acc} == {acc}))",
    "argmin": "({v} < {acc}) | (({v} != {v}) & ({acc} == {acc}))",
}
_COMBINE_LANES = {
    "sum": "tl.sum({acc}, 1)",
    "prod": "tl.reduce({acc}, 1, _mul)",
    "max": "_max_rows({acc})",
    "min": "_min_rows({acc})",
    "any": "(tl.max({acc}.to(tl.int8), 1) != 0)",
    "all": "(tl.min({acc}.to(tl.int8), 1) != 0)",
    "argmax": "_argmax_rows({acc}, {acc}_index)",
    "argmin": "_argmin_rows({acc}, {acc}_index)",
}
_CUMULATIVE = {"sum": "tl.cumsum", "prod": "tl.cumprod"}
_CARRY = {"sum": "{carry} + {scan}", "prod": "{carry} * {scan}"}


def _full(shape: str, value, dtype: str) -> str:
    if dtype == "b8":
        value = 1 if value else 0
    elif isinstance(value, float):
        if value != value:
            value = 'float("nan")'
        elif value in (float("inf"), float("-inf")):
            value = 'float("inf")' if value > 0 else 'float("-inf")'
        else:
            value = repr(value)
    return f"tl.full({shape}, {value}, {TL_TYPES[dtype]})"


def _identity(kind: str, dtype: str):
    """The value a lane (or a scan's carry) starts from, which masked lanes keep."""
    if kind in ("sum", "any"):
        return 0
    if kind in ("prod", "all"):
        return 1
    largest = kind in ("min", "argmin")
    if dtype in ("f16", "bf16", "f32", "f64"):
        return float("inf") if largest else float("-inf")
    info = torch.iinfo(to_torch(dtype))
    return info.max if largest else info.min


@dataclass(frozen=True)
class _Tile:
    """Where statements run: the block's shape, the mask of its live lanes, and
    the loop variables that vary along each of its axes."""

    shape: str
    mask: str
    axes: tuple[frozenset[str], ...]


class _Kernel:
    """Renders one plan's statements onto tiles."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        self.ranges = {f"i{k}": s for k, s in enumerate(plan.ranges)}
        self.ranges.update({f"r{k}": s for k, s in enumerate(plan.reduction)})
        for stmt in plan.statements:
            if isinstance(stmt, Compute) and stmt.op == "indirect":
                self.ranges[stmt.var] = dict(stmt.attrs)["size"]
        self.index_type = "tl.int64" if self._largest_index() >= 2**31 else "tl.int32"

    def _largest_index(self) -> int:
        # Flat indices run up to a block past their extent; masked lanes may
        # overflow harmlessly, so only live lanes' offsets count.
        largest = max(_numel(self.plan.ranges), _numel(self.plan.reduction)) + TILE_MAX
        for stmt in self.plan.statements:
            if isinstance(stmt, (Load, Store)):
                largest = max(largest, _magnitude(sympy.sympify(stmt.index), self.ranges))
            elif isinstance(stmt, Compute) and stmt.op == "index":
                largest = max(largest, _magnitude(dict(stmt.attrs)["index"], self.ranges))
        return largest

    def header(self, sizes: list[str], blocks: list[str]) -> list[str]:
        params = [f"p_{name}" for name, _ in self.plan.params] + sizes
        params += [f"{block}: tl.constexpr" for block in blocks]
        return [
            "@triton.jit",
            f"def {self.plan.name}({', '.join(params)}):",
            f"    # {', '.join(self.plan.nodes)}",
        ]

    def xindex(self, suffix: str) -> list[str]:
        pid = "tl.program_id(0)" if self.index_type == "tl.int32" else "tl.program_id(0).to(tl.int64)"
        return [f"    xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK){suffix}", "    xmask = xindex < xnumel"]

    def rindex(self) -> list[str]:
        lanes = "tl.arange(0, RBLOCK)[None, :]"
        if self.index_type != "tl.int32":
            lanes += ".to(tl.int64)"
        return [
            f"        rindex = roffset + {lanes}",
            "        rmask = rindex < rnumel",
            "        mask = xmask & rmask",
        ]

    def statement(self, stmt, tile: _Tile) -> str:
        if isinstance(stmt, Load):
            return f"{stmt.var} = tl.load(p_{stmt.source} + {self.offset(stmt.index, tile)}, {tile.mask}, other=0)"
        if isinstance(stmt, Store):
            return f"tl.store(p_{stmt.target} + {self.offset(stmt.index, tile)}, {stmt.var}, {tile.mask})"
        return f"{stmt.var} = {self.expr(stmt, tile)}"

    def expr(self, stmt: Compute, tile: _Tile) -> str:
        attrs = dict(stmt.attrs)
        if stmt.op == "constant":
            return _full(tile.shape, attrs["value"], stmt.dtype)
        if stmt.op == "index":
            return f"tl.zeros({tile.shape}, tl.int64) + ({self.index(attrs['index'])})"
        if stmt.op == "indirect":
            arg = stmt.args[0]
            return f"tl.where({arg} < 0, {arg} + {attrs['size']}, {arg}).to(tl.int64)"
        if stmt.op == "to_dtype" and stmt.dtype == "bf16":
            return f"_to_bf16({stmt.args[0]})"
        template = _OPS[stmt.op]
        if stmt.dtype == "b8":
            template = _BOOL_OPS.get(stmt.op, template)
        elif not stmt.dtype.startswith(("f", "bf")):
            template = _INT_OPS.get(stmt.op, template)
        return template.format(*stmt.args, dtype=TL_TYPES[stmt.dtype])

    def index(self, expr) -> str:
        expr = sympy.sympify(expr)
        signed = any(not _nonnegative(d.args[0]) for d in expr.atoms(FloorDiv, Mod))
        return render_index(expr, SIGNED_INDEX if signed else TRITON_INDEX)

    def offset(self, expr, tile: _Tile) -> str:
        """The index as offsets of the tile's shape: pointers must have the
        shape of the mask, so an index not varying along every axis is broadcast."""
        names = {s.name for s in sympy.sympify(expr).free_symbols}
        text = self.index(expr)
        # Indirect indices are loaded values, which have the tile's shape.
        if any(n.startswith("ind") for n in names) or all(names & axis for axis in tile.axes):
            return f"({text})"
        return f"(tl.zeros({tile.shape}, {self.index_type}) + {text})"


def _nonnegative(expr) -> bool:
    """Whether an index expression is >= 0 for all values of its variables
    (loop variables and indirect indices are; IR divisors are positive)."""
    if expr.is_Integer:
        return expr >= 0
    if expr.is_Symbol or isinstance(expr, Mod):
        return True
    compound = (sympy.Add, sympy.Mul, sympy.Pow, FloorDiv, sympy.Min, sympy.Max)
    return isinstance(expr, compound) and all(_nonnegative(a) for a in expr.args)


def _magnitude(expr, ranges: dict[str, int]) -> int:
    """An upper bound of |expr| over the loop ranges."""
    if expr.is_Integer:
        return abs(int(expr))
    if expr.is_Symbol:
        return ranges[expr.name]
    if isinstance(expr, Mod):
        return _magnitude(expr.args[1], ranges)
    parts = [_magnitude(a, ranges) for a in expr.args]
    if isinstance(expr, sympy.Mul):
        return _numel(parts)
    if isinstance(expr, sympy.Pow):
        return parts[0] ** parts[1]
    if isinstance(expr, sympy.Add):
        return sum(parts)
    return max(parts)  # floordiv, min, max


def _unflatten(flat: str, variables: list[tuple[str, int]], pad: str) -> list[str]:
    """Row-major loop variables from a flat index (the last varies fastest)."""
    lines = []
    for k in range(len(variables) - 1, -1, -1):
        name, size = variables[k]
        if k == 0:
            lines.append(f"{pad}{name} = {flat}")
        else:
            lines.append(f"{pad}{name} = {flat} % {size}")
            flat = f"({flat} // {size})"
    return lines


def _numel(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _names(variables) -> frozenset[str]:
    return frozenset(name for name, _ in variables)


def render_kernel(plan: KernelPlan) -> str:
    kernel = _Kernel(plan)
    scan = _scan_statement(plan)
    if plan.loops:
        lines = _reduction_kernel(kernel)
    elif scan is not None:
        lines = _scan_kernel(kernel, scan)
    else:
        lines = _pointwise_kernel(kernel)
    return "\n".join(lines)


def _scan_statement(plan: KernelPlan):
    """The kernel's scan (a scan kernel holds one), or None."""
    return next((s for s in plan.statements if isinstance(s, Scan)), None)


def _pointwise_kernel(kernel: _Kernel) -> list[str]:
    variables = [(f"i{k}", s) for k, s in enumerate(kernel.plan.ranges)]
    tile = _Tile("[XBLOCK]", "xmask", (_names(variables),))
    lines = kernel.header(["xnumel"], ["XBLOCK"]) + kernel.xindex("")
    lines += _unflatten("xindex", variables, "    ")
    lines += ["    " + kernel.statement(s, tile) for s in kernel.plan.statements]
    return lines


def _reduction_kernel(kernel: _Kernel) -> list[str]:
    """A block of XBLOCK rows; per-row statements on [XBLOCK, 1] columns, and
    one loop over the r-variables, RBLOCK at a time, per pass of the plan."""
    plan = kernel.plan
    outputs = [(f"i{k}", s) for k, s in enumerate(plan.ranges)]
    reduced = [(f"r{k}", s) for k, s in enumerate(plan.reduction)]
    loop = _Tile("[XBLOCK, RBLOCK]", "mask", (_names(outputs), _names(reduced)))
    column = _Tile("[XBLOCK, 1]", "xmask", (_names(outputs),))
    lines = kernel.header(["xnumel", "rnumel"], ["XBLOCK", "RBLOCK"]) + kernel.xindex("[:, None]")
    lines += _unflatten("xindex", outputs, "    ")
    for step in plan.steps:
        if isinstance(step, Loop):
            lines += _reduction_pass(kernel, step, loop, reduced)
        else:
            lines.append("    " + kernel.statement(step, column))
    return lines


def _reduction_pass(kernel: _Kernel, pass_: Loop, loop: _Tile, reduced) -> list[str]:
    reduces = [(s, *_accumulator(s)) for s in pass_.statements if isinstance(s, Reduce)]
    lines = []
    for reduce, kind, acc_dtype, _ in reduces:
        acc = f"acc_{reduce.var}"
        lines.append(f"    {acc} = {_full(loop.shape, _identity(kind, acc_dtype), acc_dtype)}")
        if kind in _BETTER:
            # Index 0 with the identity is right when no lane finds better: then
            # every element is the identity (or there are none), and the first is 0.
            lines.append(f"    {acc}_index = tl.zeros({loop.shape}, tl.int64)")
    lines.append("    for roffset in range(0, rnumel, RBLOCK):")
    lines += kernel.rindex()
    lines += _unflatten("rindex", reduced, "        ")
    by_stmt = {id(r): (kind, value) for r, kind, _, value in reduces}
    for stmt in pass_.statements:
        if not isinstance(stmt, Reduce):
            lines.append("        " + kernel.statement(stmt, loop))
            continue
        kind, value = by_stmt[id(stmt)]
        acc = f"acc_{stmt.var}"
        if kind in _BETTER:
            lines += [
                f"        take = mask & ({_BETTER[kind].format(acc=acc, v=value)})",
                f"        {acc}_index = tl.where(take, rindex, {acc}_index)",
                f"        {acc} = tl.where(take, {value}, {acc})",
            ]
        else:
            lines.append(
                f"        {acc} = tl.where(mask, {_ACCUMULATE[kind].format(acc=acc, v=value)}, {acc})"
            )
    for reduce, kind, _, _ in reduces:
        lanes = _COMBINE_LANES[kind].format(acc=f"acc_{reduce.var}")
        lines.append(f"    {reduce.var} = {lanes}[:, None].to({TL_TYPES[reduce.dtype]})")
    return lines


def _accumulator(reduce: Reduce) -> tuple[str, str, str]:
    """(kind, accumulator dtype, accumulated value) of a reduction."""
    kind, acc_dtype, value = reduce.kind, reduce.arg_dtype, reduce.arg
    if acc_dtype == "b8":
        # On booleans max and min are any and all; arg-reductions compare int8.
        kind = {"max": "any", "min": "all"}.get(kind, kind)
        if kind in _BETTER:
            acc_dtype, value = "i8", f"{value}.to(tl.int8)"
    return kind, acc_dtype, value


def _scan_kernel(kernel: _Kernel, scan: Scan) -> list[str]:
    plan = kernel.plan
    rows = [(f"i{k}", s) for k, s in enumerate(plan.ranges) if k != scan.dim]
    tile = _Tile("[XBLOCK, RBLOCK]", "mask", (_names(rows), frozenset({f"i{scan.dim}"})))
    carry, dtype = f"carry_{scan.var}", TL_TYPES[scan.dtype]
    lines = kernel.header(["xnumel", "rnumel"], ["XBLOCK", "RBLOCK"]) + kernel.xindex("[:, None]")
    lines += _unflatten("xindex", rows, "    ")
    lines.append(f"    {carry} = {_full('[XBLOCK, 1]', _identity(scan.kind, scan.dtype), scan.dtype)}")
    lines.append("    for roffset in range(0, rnumel, RBLOCK):")
    lines += kernel.rindex()
    lines.append(f"        i{scan.dim} = rindex")
    for stmt in plan.statements:
        if stmt is not scan:
            lines.append("        " + kernel.statement(stmt, tile))
            continue
        # Lanes past the end come after every live one, so they cannot change
        # a live result; the carry is the last lane, live in all but the last chunk.
        chunk = f"{_CUMULATIVE[scan.kind]}({scan.arg}, 1).to({dtype})"
        lines.append(f"        {scan.var} = {_CARRY[scan.kind].format(carry=carry, scan=chunk)}")
        lines.append(f"        {carry} = _last_column({scan.var}).to({dtype})")
    return lines


def helpers_used(plans: list[KernelPlan]) -> list[str]:
    text = "\n".join(render_kernel(p) for p in plans)
    used = {h for h in HELPERS if re.search(rf"\b{h}\b", text)}
    for h in list(used):
        used.update(_HELPER_DEPS.get(h, ()))
    return [HELPERS[h].strip() for h in HELPERS if h in used]


@dataclass(frozen=True)
class LaunchConfig:
    """How `call` launches a kernel: cdiv(xnumel, XBLOCK) programs; reduction
    and scan kernels also take their inner extent, walked RBLOCK at a time."""

    xnumel: int
    xblock: int
    rnumel: int | None = None
    rblock: int | None = None


def launch_config(plan: KernelPlan) -> LaunchConfig:
    scan = _scan_statement(plan)
    if plan.loops:
        xnumel, rnumel = _numel(plan.ranges), _numel(plan.reduction)
    elif scan is not None:
        rnumel = plan.ranges[scan.dim]
        xnumel = _numel(s for k, s in enumerate(plan.ranges) if k != scan.dim)
    else:
        numel = _numel(plan.ranges)
        return LaunchConfig(numel, max(16, _power_of_two(numel, XBLOCK_MAX)))
    rblock = _power_of_two(rnumel, RBLOCK_MAX)
    xblock = _power_of_two(xnumel, min(XBLOCK_MAX, TILE_MAX // rblock))
    return LaunchConfig(xnumel, xblock, rnumel, rblock)


def _power_of_two(n: int, limit: int) -> int:
    """The smallest power of two covering n, at most `limit`."""
    block = 1
    while block < n and block < limit:
        block *= 2
    return block
