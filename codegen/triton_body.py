"""The statement-level part of Triton kernels, shared by every kernel shape
(triton.py) and by split reductions (triton_split.py): type and op tables,
tiles, and a kernel's statements on a tile (loads, stores, index math with
int32 or int64 offsets, cache hints). One pass of a reduction over a row,
with its per-lane accumulators, is in triton_passes.py."""

from __future__ import annotations

import math
import re

from math import prod

from dataclasses import dataclass

import sympy

from ir_text import FloorDiv, IndexStyle, Mod, index_var, render_index

from .kernel_comments import kernel_comment
from .kernel_plan import Compute, KernelPlan, Load, Store
from .triton_configs import LaunchConfig

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
# Lanes a block may run past its extent (masked): the int32 decision allows for them.
BLOCK_OVERRUN = 2**16

NAN = "tl.PropagateNan.ALL"
# float32 divisions rounded once, as IEEE and eager's CUDA kernels round
# them: Triton's `/` is div.full.f32 (2 ulp), and x / x.amax() at the
# maximum gave 0.99999994 on an H200, 254 for 255 once scaled to uint8.
# div_rn takes float32 only; float64's `/` rounds once already.
_F32_OPS = {
    "truediv": "tl.math.div_rn({0}, {1})",
    "reciprocal": "tl.math.div_rn(1.0, {0})",
}
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
    "expm1": "_expm1({0})",
    "log": "tl.log({0})",
    "log2": "tl.log2({0})",
    "log10": "(tl.log({0}) * 0.4342944819032518)",
    "log1p": "_log1p({0})",
    "sqrt": "tl.sqrt({0})",
    "rsqrt": "tl.rsqrt({0})",
    "sin": "tl.sin({0})",
    "cos": "tl.cos({0})",
    "tan": "(tl.sin({0}) / tl.cos({0}))",
    "asin": "_asin({0})",
    "acos": "_acos({0})",
    "atan": "_atan({0})",
    "sinh": "_sinh({0})",
    "cosh": "_cosh({0})",
    "tanh": "_tanh({0})",
    "sigmoid": "tl.sigmoid({0})",
    "erf": "tl.erf({0})",
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "truediv": "({0} / {1})",
    "maximum": "tl.maximum({0}, {1}, propagate_nan=" + NAN + ")",
    "minimum": "tl.minimum({0}, {1}, propagate_nan=" + NAN + ")",
    "pow": "_pow({0}, {1})",
    "atan2": "_atan2({0}, {1})",
    "floor_divide": "_floordiv({0}, {1})",
    "remainder": "_remainder({0}, {1})",
    "fmod": "_fmod({0}, {1})",
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
    "signbit": "_signbit({0})",
    "copysign": "_copysign({0}, {1})",
    "where": "tl.where({0}, {1}, {2})",
    "to_dtype": "{0}.to({dtype})",
}
# Spellings that depend on the operand dtype: rounding is the identity on
# integers, and bool arithmetic is logic (int1 addition would wrap).
_INT_OPS = {"floor": "{0}", "ceil": "{0}", "trunc": "{0}", "round": "{0}"}
_BOOL_OPS = {"add": "({0} | {1})", "mul": "({0} & {1})", "maximum": "({0} | {1})", "minimum": "({0} & {1})"}
SUPPORTED_OPS = frozenset(_OPS) | {"load", "store", "constant", "index", "indirect", "reduce", "scan"}

# A float -0.0 as its bits: Triton's tl.full gives +0.0 for it on the GPU
# (copysign(x, -0.0) came out positive on an H200; the interpreter keeps it).
_NEGATIVE_ZERO_BITS = {"f64": ("tl.int64", -(2**63)), "f32": ("tl.int32", -(2**31))}
_NEGATIVE_ZERO_BITS.update({"f16": ("tl.int16", -(2**15)), "bf16": ("tl.int16", -(2**15))})


def checks_indices(plan: KernelPlan) -> bool:
    """Whether the kernel reads through an indirect index, which it checks
    (the `_index` helper): it then takes `p_error`, an error slot under the
    interpreter and None compiled, and compiles with device asserts on."""
    return any(isinstance(s, Compute) and s.op == "indirect" for s in plan.statements)


def _assert_message(plan: KernelPlan, site: int) -> str:
    """The device assert's message (compiled for a GPU) as a string literal,
    naming the op by its ATen name alone: a source line would change the
    kernel's source, hence its compile and tuning caches, with unrelated
    edits of the user's file. Only the characters of ATen names: Triton puts
    the text into the mangled name of the `_index` it specializes."""
    op = re.sub(r"[^A-Za-z0-9_.]", "_", plan.sites[site][0])
    return f'"index out of bounds in {op}"'


def assert_options(plan: KernelPlan) -> dict[str, bool]:
    """Launch options of a kernel that checks indices: device asserts on
    (`debug`), without the integer overflow checks Triton adds with them."""
    return {"debug": True, "sanitize_overflow": False} if checks_indices(plan) else {}


def launch_args(args: list[str]) -> str:
    """A launch's positional arguments as a tuple literal, with no trailing
    comma past one element (black would split the tuple one per line)."""
    return f"({args[0]},)" if len(args) == 1 else f"({', '.join(args)})"


def launch_meta(plan: KernelPlan, config) -> str:
    """A launch's keyword arguments as generated code spells them: the
    config's, then the kernel's assert options."""
    extra = "".join(f", {key}={value}" for key, value in assert_options(plan).items())
    return config.meta() + extra


def full(shape: str, value, dtype: str) -> str:
    if (
        isinstance(value, float)
        and value == 0
        and math.copysign(1.0, value) < 0
        and dtype in _NEGATIVE_ZERO_BITS
    ):
        bits, pattern = _NEGATIVE_ZERO_BITS[dtype]
        return f"tl.full({shape}, {pattern}, {bits}).to({TL_TYPES[dtype]}, bitcast=True)"
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


@dataclass(frozen=True)
class Tile:
    """Where statements run: the block's shape, the mask of its live lanes, and
    the loop variables that vary along each of its axes."""

    shape: str
    mask: str
    axes: tuple[frozenset[str], ...]
    flat: object = None  # the index that `xindex` equals, if any
    # A tiled pointwise kernel's tile, on which a value keeps size 1 along an
    # axis it does not vary along (a per-channel parameter is [YBLOCK, 1]):
    # each axis's block and mask, and its variables (the fastest last) whose
    # row-major flat index its `yindex` / `xindex` is. Empty elsewhere.
    blocks: tuple[str, ...] = ()
    masks: tuple[str, ...] = ()
    flats: tuple[tuple[tuple[tuple[str, int], ...], str], ...] = ()

    def span_shape(self, span: frozenset[int]) -> str:
        return "[" + ", ".join(b if k in span else "1" for k, b in enumerate(self.blocks)) + "]"

    def span_mask(self, span: frozenset[int]) -> str | None:
        """The mask of the lanes of a value varying along `span` (None: no axis)."""
        if len(span) == len(self.blocks):
            return self.mask
        return " & ".join(self.masks[k] for k in sorted(span)) or None

    def span(self, variables) -> frozenset[int]:
        """The axes along which some of the variables vary."""
        return frozenset(k for k, axis in enumerate(self.axes) if axis & set(variables))


class Kernel:
    """Renders one plan's statements onto tiles."""

    def __init__(self, plan: KernelPlan, config: LaunchConfig):
        self.plan = plan
        self.ranges = {f"i{k}": s for k, s in enumerate(plan.ranges)}
        self.ranges.update({f"r{k}": s for k, s in enumerate(plan.reduction)})
        self.constants = {}  # var -> value of the plan's constants
        self.passes = 1  # loops over each row (a looped reduction may make several)
        self.persistent = False
        # The first kernel of a split reduction (triton_split.py): its loop
        # walks one chunk of `rchunk` elements from `rstart`, and each
        # reduction's result is a partial, kept in the accumulator's dtype.
        self.chunked = False
        for stmt in plan.statements:
            if isinstance(stmt, Compute) and stmt.op == "indirect":
                self.ranges[stmt.var] = dict(stmt.attrs)["size"]
            if isinstance(stmt, Compute) and stmt.op == "constant":
                self.constants[stmt.var] = dict(stmt.attrs)["value"]
        self.index_type = "tl.int64" if self._largest_index() >= 2**31 else "tl.int32"
        self.spans: dict[str, frozenset[int]] = {}  # value -> the tile axes it varies along
        # Whether every config's blocks tile the rows (and the reduction) exactly.
        self.full_x = all(config.xnumel % c.xblock == 0 for c in config.configs)
        self.full_r = config.rnumel is not None and all(
            c.rblock and config.rnumel >= c.rblock and config.rnumel % c.rblock == 0 for c in config.configs
        )

    def _largest_index(self) -> int:
        # Flat indices run up to a block past their extent; masked lanes may
        # overflow harmlessly, so only live lanes' offsets count.
        largest = max(prod(self.plan.ranges), prod(self.plan.reduction)) + BLOCK_OVERRUN
        for stmt in self.plan.statements:
            if isinstance(stmt, (Load, Store)):
                largest = max(largest, _magnitude(sympy.sympify(stmt.index), self.ranges))
            elif isinstance(stmt, Compute) and stmt.op == "index":
                largest = max(largest, _magnitude(dict(stmt.attrs)["index"], self.ranges))
        return largest

    def header(self, sizes: list[str], blocks: list[str]) -> list[str]:
        params = [f"p_{name}" for name, _ in self.plan.params] + (
            ["p_error"] if checks_indices(self.plan) else []
        )
        params += sizes
        params += [f"{block}: tl.constexpr" for block in blocks]
        # The comment stands above the function, out of the source Triton
        # hashes (from `def`) and of triton_dedupe's key.
        return [*kernel_comment(self.plan, "#"), "@triton.jit", f"def {self.plan.name}({', '.join(params)}):"]

    def xindex(self, suffix: str) -> list[str]:
        pid = "tl.program_id(0)" if self.index_type == "tl.int32" else "tl.program_id(0).to(tl.int64)"
        lines = [f"    xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK){suffix}"]
        if self.full_x:
            # Every block is full: a constant mask, which Triton folds away.
            shape = "[XBLOCK, 1]" if suffix else "[XBLOCK]"
            return lines + [f"    xmask = tl.full({shape}, 1, tl.int1)"]
        return lines + ["    xmask = xindex < xnumel"]

    def rindex(self, pad: str, start: str) -> list[str]:
        lanes = "tl.arange(0, RBLOCK)[None, :]"
        if self.index_type != "tl.int32":
            lanes += ".to(tl.int64)"
        rmask = "tl.full([1, RBLOCK], 1, tl.int1)" if self.full_r else "rindex < rnumel"
        return [
            f"{pad}rindex = {start}{lanes}",
            f"{pad}rmask = {rmask}",
            f"{pad}mask = xmask & rmask",
        ]

    def statement(self, stmt, tile: Tile) -> str:
        if tile.blocks:
            return self.spanned_statement(stmt, tile)
        if isinstance(stmt, Load):
            where = f"p_{stmt.source} + {self.offset(stmt.index, tile)}, {tile.mask}, other=0"
            return f"{stmt.var} = tl.load({where}{self.eviction(stmt, tile)})"
        if isinstance(stmt, Store):
            return f"tl.store(p_{stmt.target} + {self.offset(stmt.index, tile)}, {stmt.var}, {tile.mask})"
        return f"{stmt.var} = {self.expr(stmt, tile)}"

    def spanned_statement(self, stmt, tile: Tile) -> str:
        """A statement on a tile whose values keep only the axes they vary
        along (Tile.blocks): a load that does not depend on an axis is one
        load per row or column of the tile ([YBLOCK, 1], [1, XBLOCK]) and
        the values computed from it stay that shape until they meet another
        (Triton broadcasts them there), as Inductor's tiled kernels load a
        per-channel parameter. Constants are [1, 1]."""
        if isinstance(stmt, Store):
            # Pointer, value and mask broadcast together to the store's full tile.
            return f"tl.store(p_{stmt.target} + {self.spanned_offset(stmt.index, tile)}, {stmt.var}, {tile.mask})"
        if isinstance(stmt, Load):
            span = self._index_span(stmt.index, tile)
            mask = tile.span_mask(span)
            where = f"p_{stmt.source} + {self.spanned_offset(stmt.index, tile, span)}"
            where += f", {mask}, other=0" if mask else ""
        elif stmt.op == "constant":
            span = frozenset()
            where = full(tile.span_shape(span), dict(stmt.attrs)["value"], stmt.dtype)
        elif stmt.op == "index":
            index = dict(stmt.attrs)["index"]
            span = self._index_span(index, tile)
            where = f"tl.zeros({tile.span_shape(span)}, tl.int64) + ({self.index(index)})"
        else:
            # An indirect index is checked under the full mask: it has the full tile's shape.
            every = frozenset(range(len(tile.axes)))
            span = every if stmt.op == "indirect" else frozenset().union(*(self.spans[a] for a in stmt.args))
            where = self.expr(stmt, tile)
        self.spans[stmt.var] = span
        return f"{stmt.var} = tl.load({where})" if isinstance(stmt, Load) else f"{stmt.var} = {where}"

    def _index_span(self, expr, tile: Tile) -> frozenset[int]:
        """The axes an index varies along; one through an indirect index (a
        loaded value of the tile's shape) varies along all."""
        names = {s.name for s in sympy.sympify(expr).free_symbols}
        if any(n.startswith("ind") for n in names):
            return frozenset(range(len(tile.axes)))
        return tile.span(names)

    def spanned_offset(self, expr, tile: Tile, span: frozenset[int] | None = None) -> str:
        """Offsets of the shape of the axes the index varies along (all but
        an index of no loop variable, made [1, 1]); an axis whose variables
        the index reads at a stride of a constant times their flat index
        uses the axis's `yindex` or `xindex` instead of its variables."""
        expr = sympy.sympify(expr)
        for variables, flat_name in tile.flats:
            expr = _through_flat(expr, variables, flat_name)
        text = self.index(expr)
        if span is not None and not span:
            return f"(tl.zeros([{', '.join('1' for _ in tile.blocks)}], {self.index_type}) + {text})"
        return f"({text})"

    def eviction(self, stmt: Load, tile: Tile) -> str:
        """A cache hint for a reduction's per-element loads (as Inductor's): an
        input read many times over (a weight, a mask broadcast over rows) stays
        in L2; one streamed through once makes way first."""
        if len(tile.axes) != 2 or not self.plan.reduction:
            return ""
        names = {s.name for s in sympy.sympify(stmt.index).free_symbols}
        if any(n.startswith("ind") for n in names):
            return ""
        extent = _magnitude(sympy.sympify(stmt.index), self.ranges) + 1
        if extent * 8 <= prod(self.plan.ranges) * prod(self.plan.reduction):
            return ', eviction_policy="evict_last"'
        # Streamed once by a looped reduction: make way first (a row read
        # again by a later pass had better stay; a persistent kernel's single
        # read measured no better with the hint).
        return ', eviction_policy="evict_first"' if self.passes == 1 and not self.persistent else ""

    def expr(self, stmt: Compute, tile: Tile) -> str:
        attrs = dict(stmt.attrs)
        if stmt.op == "constant":
            return full(tile.shape, attrs["value"], stmt.dtype)
        if stmt.op == "index":
            return f"tl.zeros({tile.shape}, tl.int64) + ({self.index(attrs['index'])})"
        if stmt.op == "indirect":
            wrap = bool(attrs.get("wrap", True))
            site = attrs["site"]
            checks = f"p_error, {site}, {_assert_message(self.plan, site)}"
            return f"_index({stmt.args[0]}, {attrs['size']}, {wrap}, {tile.mask}, {checks})"
        if stmt.op == "to_dtype" and stmt.dtype == "bf16":
            return f"_to_bf16({stmt.args[0]})"
        if stmt.op == "pow" and self.constants.get(stmt.args[1]) == 2:
            return f"({stmt.args[0]} * {stmt.args[0]})"  # exactly pow(x, 2), without exp and log
        template = _OPS[stmt.op]
        if stmt.dtype == "b8":
            template = _BOOL_OPS.get(stmt.op, template)
        elif not stmt.dtype.startswith(("f", "bf")):
            template = _INT_OPS.get(stmt.op, template)
        elif stmt.dtype == "f32":
            template = _F32_OPS.get(stmt.op, template)
        return template.format(*stmt.args, dtype=TL_TYPES[stmt.dtype])

    def index(self, expr) -> str:
        expr = sympy.sympify(expr)
        signed = any(not _nonnegative(d.args[0]) for d in expr.atoms(FloorDiv, Mod))
        return render_index(expr, SIGNED_INDEX if signed else TRITON_INDEX)

    def offset(self, expr, tile: Tile) -> str:
        """The index as offsets of the tile's shape: pointers must have the
        shape of the mask, so an index not varying along every axis is broadcast."""
        expr = sympy.sympify(expr)
        if tile.flat is not None and sympy.expand(expr - tile.flat) == 0:
            return "(xindex)"  # contiguous: no // and % to recover the variables
        names = {s.name for s in expr.free_symbols}
        text = self.index(expr)
        # Indirect indices are loaded values, which have the tile's shape.
        if any(n.startswith("ind") for n in names) or all(names & axis for axis in tile.axes):
            return f"({text})"
        return f"(tl.zeros({tile.shape}, {self.index_type}) + {text})"


def _through_flat(expr, variables, flat_name: str):
    """`expr` with `c * flat(variables)` replaced by `c * flat_name` where
    that leaves none of the variables (`16*i1 + i3 + 4*i2` with i2, i3 of
    extents (4, 4): `16*i1 + xindex`): no // and % to recover them."""
    if not variables:
        return expr
    by_name = {s.name: s for s in expr.free_symbols}
    if variables[-1][0] not in by_name:
        return expr
    flat, step = sympy.Integer(0), 1
    for name, size in reversed(variables):
        flat += step * by_name.get(name, index_var(name))
        step *= size
    coefficient = sympy.expand(expr).coeff(by_name[variables[-1][0]])
    if not coefficient.is_Integer or coefficient == 0:
        return expr
    rest = sympy.expand(expr - coefficient * flat)
    if {s.name for s in rest.free_symbols} & {name for name, _ in variables}:
        return expr
    return rest + coefficient * index_var(flat_name)


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
        return prod(parts)
    if isinstance(expr, sympy.Pow):
        return parts[0] ** parts[1]
    if isinstance(expr, sympy.Add):
        return sum(parts)
    return max(parts)  # floordiv, min, max


def unflatten(flat: str, variables: list[tuple[str, int]], pad: str) -> list[str]:
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


def names(variables) -> frozenset[str]:
    return frozenset(name for name, _ in variables)
