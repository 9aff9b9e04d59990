"""Triton kernels: a 1-D pointwise kernel per fused kernel over the flattened
iteration space; loop variables are recovered with // and %. The same source
runs on NVIDIA GPUs and, with TRITON_INTERPRET=1, on the CPU.

Only `triton.language` core functions are used (libdevice does not run under
the interpreter), so functions it lacks are spelled with identities.
"""

from __future__ import annotations

from ir_text import IndexStyle, render_index

from .kernel_plan import Compute, KernelPlan, Load, Store

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

TRITON_INDEX = IndexStyle(floordiv="({} // {})", mod="({} % {})")
XBLOCK_MAX = 1024

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
SUPPORTED_OPS = frozenset(_OPS) | {"load", "store", "constant"}

# Helpers for ops triton.language lacks; emitted once per module, when used.
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
        return tl.floor(a / b)
    q = a // b
    return tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)
""",
    "_remainder": """
@triton.jit
def _remainder(a, b):
    if a.dtype.is_floating():
        return a - b * tl.floor(a / b)
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
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
        return tl.where(b == 0, 1.0, out)
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
_HELPER_DEPS = {"_asin": ("_atan",), "_atan2": ("_atan",)}


def _literal(value, dtype: str) -> str:
    if dtype == "b8":
        value = 1 if value else 0
    elif isinstance(value, float):
        if value != value:
            value = 'float("nan")'
        elif value in (float("inf"), float("-inf")):
            value = 'float("inf")' if value > 0 else 'float("-inf")'
        else:
            value = repr(value)
    return f"tl.full([XBLOCK], {value}, {TL_TYPES[dtype]})"


def _expr(stmt: Compute) -> str:
    if stmt.op == "constant":
        return _literal(dict(stmt.attrs)["value"], stmt.dtype)
    if stmt.op == "to_dtype" and stmt.dtype == "bf16":
        return f"_to_bf16({stmt.args[0]})"
    template = _OPS[stmt.op]
    if stmt.dtype == "b8":
        template = _BOOL_OPS.get(stmt.op, template)
    elif not stmt.dtype.startswith(("f", "bf")):
        template = _INT_OPS.get(stmt.op, template)
    return template.format(*stmt.args, dtype=TL_TYPES[stmt.dtype])


def helpers_used(plans: list[KernelPlan]) -> list[str]:
    used = set()
    for plan in plans:
        for stmt in plan.statements:
            if isinstance(stmt, Compute) and stmt.op != "constant":
                used.update(h for h in HELPERS if h + "(" in _expr(stmt))
    for h in list(used):
        used.update(_HELPER_DEPS.get(h, ()))
    return [HELPERS[h].strip() for h in HELPERS if h in used]


def render_kernel(plan: KernelPlan) -> str:
    params = [f"p_{name}" for name, _ in plan.params]
    numel = 1
    for s in plan.ranges:
        numel *= s
    lines = [
        "@triton.jit",
        f"def {plan.name}({', '.join(params)}, xnumel, XBLOCK: tl.constexpr):",
        f"    # {', '.join(plan.nodes)}",
        "    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)",
    ]
    if numel >= 2**31:
        lines.append("    xindex = xindex.to(tl.int64)")
    lines.append("    xmask = xindex < xnumel")
    rest = "xindex"
    for k in range(len(plan.ranges) - 1, -1, -1):
        size = plan.ranges[k]
        if k == 0:
            lines.append(f"    i{k} = {rest}")
        else:
            lines.append(f"    i{k} = {rest} % {size}")
            rest = f"({rest} // {size})"
    for stmt in plan.statements:
        if isinstance(stmt, Load):
            lines.append(f"    {stmt.var} = tl.load(p_{stmt.source} + {_block_index(stmt.index)}, xmask)")
        elif isinstance(stmt, Compute):
            lines.append(f"    {stmt.var} = {_expr(stmt)}")
        elif isinstance(stmt, Store):
            index = _block_index(stmt.index)
            lines.append(f"    tl.store(p_{stmt.target} + {index}, {stmt.var}, xmask)")
    return "\n".join(lines)


def _block_index(index) -> str:
    """The index as a block of offsets (a constant index is broadcast over the block)."""
    text = render_index(index, TRITON_INDEX)
    if not getattr(index, "free_symbols", None):
        return f"({text} + xindex * 0)"
    return f"({text})"


def block_size(numel: int) -> int:
    block = 16
    while block < numel and block < XBLOCK_MAX:
        block *= 2
    return block
