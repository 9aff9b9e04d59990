"""A third backend, for tests only: kernels as NumPy functions.

It exists to show that a backend is new files plus one entry in codegen's
table (test_numpy_backend.py adds the entry): nothing in the pipeline names
it. Each KernelPlan becomes one Python function in output_code.py that views
every buffer's storage as a flat NumPy array (the plans index storage with
flat index expressions), builds the loop variables as broadcasting index
grids over the whole iteration space, and evaluates each statement once,
vectorised over that space: a reduction reduces the grid's r-axes (kept as
axes of size 1, so per-row values broadcast against per-element ones), a
scan runs along its loop variable's axis, a store is a fancy-index
assignment. The semantics are the reference interpreter's
(lowering/interpreter.py), which is also vectorised that way; the code is
written for reading, not speed.

f16 and bf16 are storage types in the IR (only loads, stores, casts,
constants and selects touch them): f16 is NumPy's float16, bf16 (which NumPy
lacks) is read from its bits into float32 and rounded back to nearest even
when cast or stored, as PyTorch rounds it.
"""

from __future__ import annotations

import math
import re

import black

from codegen import Backend, Compute, KernelPlan, Load, Reduce, Scan, Store, checked_op, site_names
from ir_text import INT_DTYPES, IndexStyle, is_float, render_index
from scheduler import Target

NP_TYPES = {
    "b8": "np.bool_",
    "u8": "np.uint8",
    "i8": "np.int8",
    "i16": "np.int16",
    "i32": "np.int32",
    "i64": "np.int64",
    "f16": "np.float16",
    "bf16": "np.float32",  # values; the storage holds their bits (uint16)
    "f32": "np.float32",
    "f64": "np.float64",
}

NUMPY_INDEX = IndexStyle(
    floordiv="({} // {})", mod="({} % {})", min="np.minimum({}, {})", max="np.maximum({}, {})"
)

# Body ops as NumPy expressions of their operands ({0}, {1}, {2}), with
# torch's semantics on floats; _BY_OPERAND overrides them where an operand
# dtype needs another spelling.
_OPS = {
    "neg": "np.negative({0})",
    "abs": "np.abs({0})",
    "floor": "np.floor({0})",
    "ceil": "np.ceil({0})",
    "round": "np.round({0})",  # half to even, as torch.round
    "trunc": "np.trunc({0})",
    # torch.sign(nan) is 0, NumPy's is nan.
    "sign": "np.where(np.isnan({0}), 0, np.sign({0}))",
    "reciprocal": "(1 / {0})",
    "exp": "np.exp({0})",
    "exp2": "np.exp2({0})",
    "expm1": "np.expm1({0})",
    "log": "np.log({0})",
    "log2": "np.log2({0})",
    "log10": "np.log10({0})",
    "log1p": "np.log1p({0})",
    "sqrt": "np.sqrt({0})",
    "rsqrt": "(1 / np.sqrt({0}))",
    "sin": "np.sin({0})",
    "cos": "np.cos({0})",
    "tan": "np.tan({0})",
    "asin": "np.arcsin({0})",
    "acos": "np.arccos({0})",
    "atan": "np.arctan({0})",
    "sinh": "np.sinh({0})",
    "cosh": "np.cosh({0})",
    "tanh": "np.tanh({0})",
    "sigmoid": "(1 / (1 + np.exp(-{0})))",
    "erf": "_erf({0})",
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "truediv": "({0} / {1})",
    "maximum": "np.maximum({0}, {1})",  # NaN-propagating, as torch's
    "minimum": "np.minimum({0}, {1})",
    "pow": "np.power({0}, {1})",
    "atan2": "np.arctan2({0}, {1})",
    "copysign": "np.copysign({0}, {1})",
    # Python's floor division and modulo (the divisor's sign), as torch's.
    "floor_divide": "np.floor_divide({0}, {1})",
    "remainder": "np.remainder({0}, {1})",
    "fmod": "np.fmod({0}, {1})",
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
    "logical_and": "np.logical_and({0}, {1})",
    "logical_or": "np.logical_or({0}, {1})",
    "logical_xor": "np.logical_xor({0}, {1})",
    "logical_not": "np.logical_not({0})",
    "isnan": "np.isnan({0})",
    "signbit": "np.signbit({0})",
    "where": "np.where({0}, {1}, {2})",
}
# Integer operands: pow by squaring with wrap-around (NumPy refuses negative
# exponents), and divisions that raise on a divisor of 0 as eager does.
_INT_OPS = {
    "pow": "_int_pow({0}, {1})",
    "floor_divide": "_int_division(np.floor_divide, {0}, {1}, {site}, sites)",
    "remainder": "_int_division(np.remainder, {0}, {1}, {site}, sites)",
    "fmod": "_int_division(np.fmod, {0}, {1}, {site}, sites)",
}
_BY_OPERAND = {
    **{dtype: _INT_OPS for dtype in INT_DTYPES},
    "b8": {"sign": "{0}"},  # NumPy has no sign of a bool; torch's is the bool itself
}
# Reductions over the flattened r-axes, and scans along one axis.
_REDUCERS = {
    "sum": "np.sum",
    "prod": "np.prod",
    "max": "np.max",
    "min": "np.min",
    "argmax": "np.argmax",  # the first NaN, then the first extreme: as ATen
    "argmin": "np.argmin",
    "any": "np.any",
    "all": "np.all",
}
_SCANS = {"sum": "np.cumsum", "prod": "np.cumprod"}

# The helpers a kernel may call, in the order output_code.py defines them;
# a module holds those its kernels use (and what those use, _NEEDS).
_HELPERS = {
    "_flat": '''
def _flat(t):
    """The storage `t` spans, from its first element, as a flat NumPy view
    (a bfloat16 tensor as its bits, uint16): the plans index storage."""
    bits = t.dtype == torch.bfloat16
    if bits:
        t = t.view(torch.int16)
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) if t.numel() else 0
    flat = t.detach().as_strided((span,), (1,), t.storage_offset()).numpy()
    return flat.view(np.uint16) if bits else flat
''',
    "_store": '''
def _store(flat, index, value):
    """`flat[index] = value` over the whole iteration space: a value that
    does not vary along some loop variable is broadcast first."""
    index, value = np.broadcast_arrays(index, value)
    flat[index] = value
''',
    "_from_bf16": """
def _from_bf16(bits):
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)
""",
    "_to_bf16": '''
def _to_bf16(value):
    """float32 values as bfloat16 bits, rounded to nearest even (a NaN stays one)."""
    u = np.asarray(value, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(value), np.uint16(0x7FC0), rounded)
''',
    "_round_bf16": """
def _round_bf16(value):
    return _from_bf16(_to_bf16(value))
""",
    "_erf": '''
def _erf(x):
    """NumPy has no erf: math.erf per element (in double), in x's dtype."""
    x = np.asarray(x)
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)
''',
    "_int_pow": '''
def _int_pow(a, b):
    """Integer pow as eager's: wraps around; a negative exponent gives 0 but
    for the bases 1 and -1."""
    a, b = np.broadcast_arrays(a, b)
    negative = b < 0
    power = np.power(a, np.where(negative, 0, b))
    inverse = np.where(a == 1, 1, np.where(a == -1, 1 - 2 * (b & 1), 0))
    return np.where(negative, inverse, power).astype(a.dtype)
''',
    "_int_division": '''
def _int_division(divide, a, b, site, sites):
    """An integer division: a divisor of 0 raises eager's ZeroDivisionError,
    naming the op (`sites`, the kernel's checked ops)."""
    if np.any(np.asarray(b) == 0):
        runtime.check_values([2, 0, 0, site], sites)
    return divide(a, b)
''',
    "_indirect": '''
def _indirect(value, size, wrap, site, sites):
    """A loaded integer as an index into a dimension of `size`: a negative
    one counts from the end when `wrap`; one still outside raises eager's
    IndexError, naming the op."""
    value = np.asarray(value).astype(np.int64)
    index = np.where(value < 0, value + size, value) if wrap else value
    bad = (index < 0) | (index >= size)
    if np.any(bad):
        runtime.check_values([1, int(value[bad].flat[0]), size, site], sites)
    return index
''',
    "_reduced": '''
def _reduced(reduce, value, shape, rank, dtype):
    """`value` over the iteration space `shape`, reduced over its last
    `rank` axes (the r-variables), which stay as axes of size 1."""
    rows = shape[: len(shape) - rank]
    count = math.prod(shape[len(rows) :])
    flat = np.broadcast_to(value, shape).reshape(rows + (count,))
    return np.asarray(reduce(flat, axis=-1)).reshape(rows + (1,) * rank).astype(dtype)
''',
    "_scanned": '''
def _scanned(scan, value, shape, axis, accumulate, dtype):
    """The inclusive scan of `value` along `axis`, carried in `accumulate`
    (double for floats, as eager's CPU kernel carries float32)."""
    return scan(np.broadcast_to(value, shape), axis=axis, dtype=accumulate).astype(dtype)
''',
}
_NEEDS = {"_round_bf16": ("_from_bf16", "_to_bf16")}


class _Kernel:
    """What rendering one plan's statements needs: the plan, its iteration
    space (loop variables then r-variables) and each var's dtype so far."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        self.shape = tuple(plan.ranges) + tuple(plan.reduction)
        self.dtypes: dict[str, str] = {}

    def statement(self, stmt) -> str:
        line = _STATEMENTS[type(stmt)](self, stmt)
        if not isinstance(stmt, Store):
            self.dtypes[stmt.var] = stmt.dtype
        return line


def _index(expr) -> str:
    return render_index(expr, NUMPY_INDEX)


def _load(kernel: _Kernel, stmt: Load) -> str:
    value = f"p_{stmt.source}[{_index(stmt.index)}]"
    return f"{stmt.var} = " + (f"_from_bf16({value})" if stmt.dtype == "bf16" else value)


def _store_line(kernel: _Kernel, stmt: Store) -> str:
    value = f"_to_bf16({stmt.var})" if stmt.dtype == "bf16" else stmt.var
    return f"_store(p_{stmt.target}, {_index(stmt.index)}, {value})"


def _reduce(kernel: _Kernel, stmt: Reduce) -> str:
    rank = len(kernel.plan.reduction)
    return (
        f"{stmt.var} = _reduced({_REDUCERS[stmt.kind]}, {stmt.arg}, {kernel.shape}, {rank}, "
        f"{NP_TYPES[stmt.dtype]})"
    )


def _scan(kernel: _Kernel, stmt: Scan) -> str:
    accumulate = "np.float64" if is_float(stmt.dtype) else NP_TYPES[stmt.dtype]
    return (
        f"{stmt.var} = _scanned({_SCANS[stmt.kind]}, {stmt.arg}, {kernel.shape}, {stmt.dim}, "
        f"{accumulate}, {NP_TYPES[stmt.dtype]})"
    )


def _compute(kernel: _Kernel, stmt: Compute) -> str:
    special = _SPECIAL.get(stmt.op)
    if special is not None:
        return f"{stmt.var} = {special(kernel, stmt)}"
    operand = kernel.dtypes[stmt.args[0]]
    template = _BY_OPERAND.get(operand, {}).get(stmt.op, _OPS[stmt.op])
    site = dict(stmt.attrs).get("site") if checked_op(stmt.op, stmt.dtype) else None
    return f"{stmt.var} = {template.format(*stmt.args, site=site)}"


def _constant(kernel: _Kernel, stmt: Compute) -> str:
    value = dict(stmt.attrs)["value"]
    # inf and nan have no Python literal: NumPy parses them from strings.
    text = repr(value) if not isinstance(value, float) or math.isfinite(value) else f'"{value!r}"'
    literal = f"{NP_TYPES[stmt.dtype]}({text})"
    return f"_round_bf16({literal})" if stmt.dtype == "bf16" else literal


def _index_value(kernel: _Kernel, stmt: Compute) -> str:
    return f"np.asarray({_index(dict(stmt.attrs)['index'])}, dtype=np.int64)"


def _indirect_index(kernel: _Kernel, stmt: Compute) -> str:
    attrs = dict(stmt.attrs)
    return f"_indirect({stmt.args[0]}, {attrs['size']}, {attrs.get('wrap', True)}, {attrs['site']}, sites)"


def _to_dtype(kernel: _Kernel, stmt: Compute) -> str:
    cast = f"np.asarray({stmt.args[0]}).astype({NP_TYPES[stmt.dtype]})"
    return f"_round_bf16({cast})" if stmt.dtype == "bf16" else cast


# The ops rendered by a function of their own rather than a template.
_SPECIAL = {"constant": _constant, "index": _index_value, "indirect": _indirect_index, "to_dtype": _to_dtype}
_STATEMENTS = {Load: _load, Store: _store_line, Compute: _compute, Reduce: _reduce, Scan: _scan}
# The body ops of the statements other than Compute: load, store, reduce, scan.
SUPPORTED_OPS = frozenset(_OPS) | frozenset(_SPECIAL) | {"load", "store", "reduce", "scan"}


def render_kernel(plan: KernelPlan) -> str:
    """One function per plan. A plan is one loop nest: the target runs no
    more, and the plan check refuses a dump's kernel of several."""
    kernel = _Kernel(plan)
    params = ", ".join("p_" + name for name, _ in plan.params)
    lines = [
        f"# {plan.name}: {', '.join(plan.nodes)}",
        # Kernels compute as C does: overflow to inf and 0/0 to NaN, silently.
        '@np.errstate(all="ignore")',
        f"def {plan.name}({params}):",
        *(f"    p_{name} = _flat(p_{name})" for name, _ in plan.params),
    ]
    if plan.checks_values:
        lines.append(f"    sites = {site_names(plan)}")
    names = [f"i{k}" for k in range(len(plan.ranges))] + [f"r{k}" for k in range(len(plan.reduction))]
    if names:
        aranges = ", ".join(f"np.arange({n})" for n in kernel.shape)
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = np.ix_({aranges})")
    lines += ["    " + kernel.statement(s) for s in _once(plan.statements)]
    return "\n".join(lines)


def _once(statements) -> list:
    """Each statement once: a value recomputed in several passes over the
    r-variables (as the plan schedules it) is computed once over the whole space."""
    seen: set[int] = set()
    out = []
    for stmt in statements:
        if id(stmt) not in seen:
            seen.add(id(stmt))
            out.append(stmt)
    return out


def _kernels(plans: list[KernelPlan], prebuild: bool) -> list[str]:
    """The helpers the kernels use, then the kernels, formatted by black
    (their expressions are arbitrary). Nothing is built, so `prebuild`
    has nothing to start."""
    kernels = [render_kernel(p) for p in plans]
    text = "\n\n\n".join(helpers_used("\n".join(kernels)) + kernels)
    # Two blank lines after the header's imports, as black puts them before a definition.
    return ["", black.format_str(text, mode=black.Mode()).rstrip("\n")]


def helpers_used(kernels: str) -> list[str]:
    """The source of each helper that the kernels' text calls."""
    used = {name for name in _HELPERS if re.search(rf"\b{name}\(", kernels)}
    used |= {need for name in used for need in _NEEDS.get(name, ())}
    return [source.strip() for name, source in _HELPERS.items() if name in used]


def _launch(plan: KernelPlan, args: list[str], device: str) -> list[str]:
    return [f"{plan.name}({', '.join(args)})"]


NUMPY = Backend(
    name="numpy",
    devices=("cpu",),
    target=Target("numpy"),
    ops=SUPPORTED_OPS,
    header=lambda device: ["import math", "import numpy as np", ""],
    kernels=_kernels,
    launch=_launch,
)
