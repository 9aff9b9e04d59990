"""C++ kernels: one function per fused kernel, written for g++ to vectorize.

Three loop shapes (see docs/design-notes.md, "C++ kernels"):
- pointwise: the innermost loop is `#pragma omp simd`; OpenMP runs across
  the outer loops collapsed, or across chunks of the innermost loop when
  the outer ones are too few;
- rows: a reduction along the contiguous dimension; per row, passes over the
  r-variables whose innermost loop is `#pragma omp simd reduction(...)`, so
  accumulators live in vector registers (sums are reassociated across lanes);
- lanes: a reduction along a strided dimension (a column sum); a block of
  LANES adjacent rows is processed together, each row's values held in a
  small array, so the loop over the block is the contiguous vector loop.
Reduced-precision floats use `_Float16` and a small bfloat16 struct and are
computed in float32 (the lowering inserts the casts).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy

from ir_text import is_float, render_index

from .cpp_ops import C_TYPES, COMBINE, CPP_INDEX, SIMD_REDUCTION, SUPPORTED_OPS, expr, identity
from .cpp_prelude import MATH_FUNCTIONS, PRELUDE
from .kernel_plan import Compute, KernelPlan, Load, Loop, Reduce, Scan, Store, uses

__all__ = ["PRELUDE", "SUPPORTED_OPS", "render_kernel", "render_source"]

# Parallelise only when there is enough work to pay for waking the threads.
PARALLEL_MIN_NUMEL = 32768
# A pointwise kernel whose outer loops have fewer iterations than this runs
# its innermost loop in chunks of CHUNK elements across the threads.
MIN_PARALLEL_ROWS = 64
CHUNK = 8192
# Rows per block in the lanes shape: four AVX-512 vectors of float32.
LANES = 64


def render_source(plans: list[KernelPlan]) -> str:
    return PRELUDE + "\n" + "\n\n".join(render_kernel(p) for p in plans) + "\n"


def render_kernel(plan: KernelPlan, linkage: str = 'extern "C"') -> str:
    if plan.nests:
        return _render_nests(plan)
    lines = _signature(plan, linkage)
    scan = next((s for s in plan.statements if isinstance(s, Scan)), None)
    if scan is not None:
        _scan_body(plan, scan, lines)
    elif not plan.loops:
        _pointwise_body(plan, lines)
    elif (lane_dim := _lane_dim(plan)) is not None:
        _lanes_body(plan, lane_dim, lines)
    else:
        _rows_body(plan, lines)
    lines.append("}")
    return "\n".join(lines)


def _signature(plan: KernelPlan, linkage: str) -> list[str]:
    params = []
    for k, (name, dtype) in enumerate(plan.params):
        const = "const " if k < plan.num_inputs else ""
        restrict = "" if name in plan.aliased else "__restrict__ "
        params.append(f"{const}{C_TYPES[dtype]}* {restrict}p_{name}")
    return [
        f"// {plan.name}: {', '.join(plan.nodes)}",
        f"{linkage} void {plan.name}({', '.join(params)}) {{",
    ]


def _render_nests(plan: KernelPlan) -> str:
    """A kernel of several loop nests: one function per nest, and the
    kernel's entry point calling them in order (one launch from Python)."""
    parts = [render_kernel(nest, "static") for nest in plan.nests]
    lines = _signature(plan, 'extern "C"')
    for nest in plan.nests:
        lines.append(f"  {nest.name}({', '.join('p_' + name for name, _ in nest.params)});")
    lines.append("}")
    return "\n\n".join(parts + ["\n".join(lines)])


def _numel(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


class _Body:
    """Renders statements, tracking each variable's dtype; variables in
    `arrays` hold one value per lane (the lanes shape) and are indexed."""

    def __init__(self, lines: list[str], arrays: frozenset[str] = frozenset()):
        self.lines = lines
        self.arrays = arrays
        self.dtypes: dict[str, str] = {}

    def ref(self, var: str) -> str:
        return f"{var}[lane]" if var in self.arrays else var

    def define(self, var: str, dtype: str, text: str, pad: str) -> None:
        if var in self.arrays:
            self.lines.append(f"{pad}{var}[lane] = {text};")
        else:
            self.lines.append(f"{pad}{C_TYPES[dtype]} {var} = {text};")
        self.dtypes[var] = dtype

    def statement(self, stmt, pad: str) -> None:
        if isinstance(stmt, Load):
            self.define(stmt.var, stmt.dtype, f"p_{stmt.source}[{render_index(stmt.index, CPP_INDEX)}]", pad)
        elif isinstance(stmt, Compute):
            self.define(stmt.var, stmt.dtype, expr(stmt, self.dtypes, self.ref), pad)
        elif isinstance(stmt, Store):
            index = render_index(stmt.index, CPP_INDEX)
            self.lines.append(f"{pad}p_{stmt.target}[{index}] = {self.ref(stmt.var)};")
        elif isinstance(stmt, _Keep):
            self.lines.append(f"{pad}row_{stmt.var}[{stmt.index}] = {stmt.var};")
        elif isinstance(stmt, _Reload):
            self.define(stmt.var, stmt.dtype, f"row_{stmt.var}[{stmt.index}]", pad)


def _split(names_sizes):
    """Loops of one iteration become constants; the others stay loops."""
    names_sizes = list(names_sizes)
    consts = [name for name, size in names_sizes if size == 1]
    loops = [(name, size) for name, size in names_sizes if size != 1]
    return consts, loops


def _constants(lines, names, pad: str) -> None:
    for name in names:
        lines.append(f"{pad}const int64_t {name} = 0;")


def _open(lines, loops, depth: int, pragma: str | None = None) -> int:
    """Nested `for` loops; `pragma` goes before the first."""
    for k, (name, size) in enumerate(loops):
        pad = "  " * depth
        if k == 0 and pragma:
            lines.append(f"{pad}#pragma {pragma}")
        lines.append(f"{pad}for (int64_t {name} = 0; {name} < {size}; ++{name}) {{")
        depth += 1
    return depth


def _close(lines, depth: int, count: int) -> int:
    for _ in range(count):
        depth -= 1
        lines.append("  " * depth + "}")
    return depth


def _parallel(loops: int) -> str:
    return "omp parallel for" + (f" collapse({loops})" if loops > 1 else "")


def _pointwise_body(plan: KernelPlan, lines: list[str]) -> None:
    """The outer loops run across threads (collapsed); the innermost is the
    vector loop, split into chunks across threads when the outer loops are
    too few to share out."""
    consts, loops = _split((f"i{k}", s) for k, s in enumerate(plan.ranges))
    _constants(lines, consts, "  ")
    body = _Body(lines)
    if not loops:
        for stmt in plan.steps:
            body.statement(stmt, "  ")
        return
    outer, (inner, size) = loops[:-1], loops[-1]
    parallel = _numel(plan.ranges) >= PARALLEL_MIN_NUMEL
    chunked = parallel and _numel(s for _, s in outer) < MIN_PARALLEL_ROWS and size > CHUNK
    nest = outer + ([(f"{inner}_chunk", -(-size // CHUNK))] if chunked else [])
    depth = _open(lines, nest, 1, _parallel(len(nest)) if parallel and nest else None)
    pad = "  " * depth
    start, end = "0", str(size)
    if chunked:
        start, end = f"{inner}_chunk * {CHUNK}", f"{inner}_end"
        lines.append(f"{pad}const int64_t {end} = tirc_min_i64({start} + {CHUNK}, {size});")
    lines.append(f"{pad}#pragma omp simd")
    lines.append(f"{pad}for (int64_t {inner} = {start}; {inner} < {end}; ++{inner}) {{")
    for stmt in plan.steps:
        body.statement(stmt, pad + "  ")
    lines.append(pad + "}")
    _close(lines, depth, len(nest))


def _rows_body(plan: KernelPlan, lines: list[str]) -> None:
    """Loops over the rows (OpenMP across them, collapsed); per row, the
    plan's steps: statements, and passes over the r-variables."""
    consts, rows = _split((f"i{k}", s) for k, s in enumerate(plan.ranges))
    _constants(lines, consts, "  ")
    total = _numel(plan.ranges) * _numel(plan.reduction)
    parallel = bool(rows) and total >= PARALLEL_MIN_NUMEL
    depth = _open(lines, rows, 1, _parallel(len(rows)) if parallel else None)
    steps, kept = _keep_rows(plan)
    for var, dtype in kept.items():
        lines.append(f"{'  ' * depth}{C_TYPES[dtype]} row_{var}[{_numel(plan.reduction)}];")
    body = _Body(lines)
    for step in steps:
        if isinstance(step, Loop):
            for part in _split_ordered(step):
                _row_pass(plan, part, body, depth)
        else:
            body.statement(step, "  " * depth)
    _close(lines, depth, len(rows))


def _ordered(stmt) -> bool:
    return isinstance(stmt, Reduce) and stmt.kind in ("argmax", "argmin")


def _split_ordered(loop: Loop) -> list[Loop]:
    """A pass with argmax/argmin (which need the sequential order) and other
    reductions as two passes, so that the others still run as simd."""
    statements = list(loop.statements)
    if not any(map(_ordered, statements)) or all(
        map(_ordered, (s for s in statements if isinstance(s, Reduce)))
    ):
        return [loop]
    simd = _live(statements, lambda s: not _ordered(s))
    ordered = _live(statements, _ordered)
    return [Loop(tuple(simd)), Loop(tuple(ordered))]


# Ops worth a store and a load to compute once instead of once per pass.
_EXPENSIVE = frozenset(name for name, _ in MATH_FUNCTIONS) | {"sigmoid", "pow"}
# The most bytes per row (per thread, on the stack) kept between passes.
MAX_KEPT_BYTES = 64 * 1024
_SIZES = {"b8": 1, "u8": 1, "i8": 1, "i16": 2, "f16": 2, "bf16": 2, "i32": 4, "f32": 4, "i64": 8, "f64": 8}


@dataclass(frozen=True)
class _Keep:
    """Save `var`, computed in this pass, in the row buffer `row_{var}`."""

    var: str
    index: str


@dataclass(frozen=True)
class _Reload:
    """`var`, computed in an earlier pass, read back from its row buffer."""

    var: str
    dtype: str
    index: str


def _keep_rows(plan: KernelPlan) -> tuple[tuple, dict[str, str]]:
    """The steps, with per-element values that a later pass would recompute
    through an expensive op (softmax's exp) computed once and kept in a row
    buffer instead, while the row's buffers fit in MAX_KEPT_BYTES; and the
    kept vars with their dtypes."""
    steps = list(plan.steps)
    loops = [k for k, step in enumerate(steps) if isinstance(step, Loop)]
    index = _rindex(plan.reduction)
    kept: dict[str, str] = {}
    budget = MAX_KEPT_BYTES
    for later in loops[1:]:
        statements = list(steps[later].statements)
        seen = {id(s) for k in loops if k < later for s in steps[k].statements}
        defined = {s.var: s for s in statements if id(s) in seen and not isinstance(s, (Store, Reduce))}
        users = [s for s in statements if id(s) not in seen]
        frontier = [v for v in defined if any(v in _uses(s) for s in users)]
        for var in frontier:
            stmt = defined[var]
            size = _SIZES[stmt.dtype] * _numel(plan.reduction)
            if not _costly(var, defined) or size > budget:
                continue
            budget -= size
            kept[var] = stmt.dtype
            first = next(k for k in loops if any(s is stmt for s in steps[k].statements))
            where = list(steps[first].statements)
            where.insert(next(j for j, s in enumerate(where) if s is stmt) + 1, _Keep(var, index))
            steps[first] = Loop(tuple(where))
            statements[statements.index(stmt)] = _Reload(var, stmt.dtype, index)
        steps[later] = Loop(tuple(_live(statements)))
    return tuple(steps), kept


def _uses(stmt) -> list[str]:
    if isinstance(stmt, _Keep):
        return [stmt.var]
    return [] if isinstance(stmt, _Reload) else uses(stmt)


def _costly(var: str, defined: dict) -> bool:
    """Whether computing `var` from the pass's inputs involves an expensive op."""
    stack, seen = [var], set()
    while stack:
        name = stack.pop()
        stmt = defined.get(name)
        if stmt is None or name in seen:
            continue
        seen.add(name)
        if isinstance(stmt, Compute) and stmt.op in _EXPENSIVE:
            return True
        stack.extend(_uses(stmt))
    return False


def _live(statements: list, wanted=lambda stmt: True) -> list:
    """The statements with an effect (a store, a reduction, a kept value)
    that `wanted` accepts, and those they need, in order."""
    needed: set[str] = set()
    out = []
    for stmt in reversed(statements):
        effect = isinstance(stmt, (Store, Reduce, _Keep)) and wanted(stmt)
        if effect or getattr(stmt, "var", None) in needed:
            out.append(stmt)
            needed.update(_uses(stmt))
    return out[::-1]


def _row_pass(plan: KernelPlan, loop: Loop, body: _Body, depth: int) -> None:
    """One pass over the r-variables: accumulators before it, results after.
    The innermost r loop is a simd reduction (SIMD_REDUCTION) unless an
    argmax/argmin needs the sequential order; float max/min keep a NaN
    flag beside. A long simd loop walks the two halves of its range at once
    (_paired)."""
    lines = body.lines
    pad = "  " * depth
    reduces = [s for s in loop.statements if isinstance(s, Reduce)]
    ordered = any(r.kind in ("argmax", "argmin") for r in reduces)
    consts, loops = _split((f"r{k}", s) for k, s in enumerate(plan.reduction))
    paired = bool(reduces) and bool(loops) and loops[-1][1] >= PAIRED_MIN and _latency_bound(loop)
    copies = ("", "_b") if paired else ("",)
    clauses = []
    for reduce in reduces:
        acc_type = C_TYPES[reduce.arg_dtype]
        acc = f"acc_{reduce.var}"
        if reduce.kind in ("argmax", "argmin"):
            lines.append(f"{pad}{acc_type} {acc} = 0;")
            lines.append(f"{pad}int64_t {acc}_index = 0;")
            lines.append(f"{pad}bool {acc}_first = true;")
            continue
        for name, ctype, start, operator in _accumulators(reduce, acc_type):
            for copy in copies:
                lines.append(f"{pad}{ctype} {name}{copy} = {start};")
                clauses.append(f"reduction({operator}:{name}{copy})")
    _constants(lines, consts, pad)
    depth = _open(lines, loops[:-1], depth)
    if paired:
        _paired(plan, loop, body, depth, loops[-1], clauses)
    elif loops:
        simd = None if ordered else " ".join(["omp simd", *clauses])
        depth = _open(lines, loops[-1:], depth, simd)
        _accumulate(plan, loop, body, "  " * depth, "")
        depth = _close(lines, depth, 1)
    else:
        _accumulate(plan, loop, body, pad, "")
    depth = _close(lines, depth, len(loops[:-1]))
    for reduce in reduces:
        acc = f"acc_{reduce.var}"
        if paired:
            for name, *_ in _accumulators(reduce, ""):
                step = SIMD_REDUCTION[reduce.kind][3] if name == acc else "{acc} |= {v};"
                lines.append(pad + step.format(acc=name, v=f"{name}_b"))
        if reduce.kind in ("argmax", "argmin"):
            result = f"{acc}_index"
        elif _nan_flag(reduce):
            result = f"({acc}_nan ? NAN : {acc})"
        elif reduce.kind in ("any", "all"):
            result = f"({acc} != 0)"
        else:
            result = acc
        lines.append(f"{pad}{C_TYPES[reduce.dtype]} {reduce.var} = {result};")
        body.dtypes[reduce.var] = reduce.dtype


# A simd reduction loop at least this long walks the two halves of its range
# at once, each into accumulators of its own. g++ keeps an `omp simd
# reduction` in one vector register, so each vector add waits for the one
# before and a row sum runs at the add's latency (3 cycles); two chains run
# about 10% faster (bench/cpu.py's row sum, on AVX-512). See _latency_bound
# for the passes that qualify.
PAIRED_MIN = 128


def _latency_bound(loop: Loop) -> bool:
    """Whether a pass is paced by its accumulators' float add or multiply
    chains: only float sums and products, nothing stored and no math
    function called. A max/min select has half the latency; a pass that
    stores is paced by its stores, and one calling exp or pow by the call:
    two copies of those measured the same or up to 1.25x slower
    (log-softmax, softmax's max, add + layer norm)."""
    for stmt in loop.statements:
        if isinstance(stmt, Reduce) and (stmt.kind not in ("sum", "prod") or not is_float(stmt.arg_dtype)):
            return False
        if isinstance(stmt, (Store, _Keep)) or (isinstance(stmt, Compute) and stmt.op in _EXPENSIVE):
            return False
    return True


def _accumulators(reduce: Reduce, acc_type: str) -> list[tuple[str, str, str, str]]:
    """(name, C type, start, simd operator) of a reduction's accumulator
    and, for a float max/min, of its NaN flag."""
    ctype, operator, start, _ = SIMD_REDUCTION[reduce.kind]
    acc = f"acc_{reduce.var}"
    flag = [(f"{acc}_nan", "int", "0", "|")] if _nan_flag(reduce) else []
    return [(acc, ctype or acc_type, start or identity(reduce.kind, reduce.arg_dtype), operator), *flag]


def _paired(plan: KernelPlan, loop: Loop, body: _Body, depth: int, innermost, clauses: list[str]) -> None:
    """The innermost r loop over the first half of its range; each iteration
    also takes the matching element of the second half, in a scope of its own
    (its temporaries shadow nothing), into the `_b` accumulators. An odd last
    element goes to the first ones."""
    lines = body.lines
    var, size = innermost
    half = size // 2
    pad = "  " * depth
    lines.append(f"{pad}#pragma omp simd {' '.join(clauses)}")
    lines.append(f"{pad}for (int64_t {var}_pair = 0; {var}_pair < {half}; ++{var}_pair) {{")
    for copy, start in (("", "0"), ("_b", str(half))):
        lines.append(f"{pad}  {{")
        lines.append(f"{pad}    const int64_t {var} = {var}_pair + {start};")
        _accumulate(plan, loop, body, pad + "    ", copy)
        lines.append(f"{pad}  }}")
    lines.append(f"{pad}}}")
    if size % 2:
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  const int64_t {var} = {size - 1};")
        _accumulate(plan, loop, body, pad + "  ", "")
        lines.append(f"{pad}}}")


def _accumulate(plan: KernelPlan, loop: Loop, body: _Body, ipad: str, copy: str) -> None:
    """The pass's statements for one r index, into the accumulators named
    with the suffix `copy`."""
    lines = body.lines
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
            continue
        lines.append(ipad + SIMD_REDUCTION[stmt.kind][3].format(acc=acc + copy, v=stmt.arg))
        if _nan_flag(stmt):
            lines.append(f"{ipad}{acc}_nan{copy} |= ({stmt.arg} != {stmt.arg});")


def _nan_flag(reduce: Reduce) -> bool:
    return reduce.kind in ("max", "min") and reduce.arg_dtype in ("f16", "bf16", "f32", "f64")


def _rindex(sizes) -> str:
    """The flat (row-major) index over the r-variables."""
    text = ""
    for k, size in enumerate(sizes):
        text = f"r{k}" if k == 0 else f"({text}) * {size} + r{k}"
    return text or "0"


def _step(expression, var: str) -> sympy.Expr:
    """How much an index grows when `var` grows by one."""
    expression = sympy.sympify(expression)
    symbol = next((s for s in expression.free_symbols if s.name == var), None)
    if symbol is None:
        return sympy.Integer(0)
    return sympy.expand(expression.xreplace({symbol: symbol + 1}) - expression)


def _lane_dim(plan: KernelPlan) -> int | None:
    """The range dimension to vectorize across rows (the lanes shape), or
    None: chosen when more of the passes' loads are contiguous along the
    innermost range variable than along the innermost r-variable."""
    ranges = [k for k, s in enumerate(plan.ranges) if s != 1]
    reduced = [k for k, s in enumerate(plan.reduction) if s != 1]
    if not ranges or not reduced or plan.ranges[ranges[-1]] < 8:
        return None
    lane, r = f"i{ranges[-1]}", f"r{reduced[-1]}"
    row_statements = [s for s in plan.steps if not isinstance(s, Loop)]
    if any(isinstance(s, Compute) and s.op == "indirect" for s in row_statements):
        return None  # an indirect index per row would be a lane array inside index math
    along_lane = along_r = 0
    for loop in plan.loops:
        for stmt in loop.statements:
            if isinstance(stmt, Load):
                along_lane += _step(stmt.index, lane) == 1
                along_r += _step(stmt.index, r) == 1
    return ranges[-1] if along_lane > along_r else None


def _lanes_body(plan: KernelPlan, dim: int, lines: list[str]) -> None:
    """A block of LANES rows along range dimension `dim` at a time: every
    per-row value is an array over the block, every pass runs its r loops
    outside and the loop over the block's rows (the vector loop) inside."""
    consts, rows = _split((f"i{k}", s) for k, s in enumerate(plan.ranges))
    lane_var, size = f"i{dim}", plan.ranges[dim]
    rows = [(name, s) for name, s in rows if name != lane_var]
    _constants(lines, consts, "  ")
    nest = rows + [(f"{lane_var}_block", -(-size // LANES))]
    total = _numel(plan.ranges) * _numel(plan.reduction)
    depth = _open(lines, nest, 1, _parallel(len(nest)) if total >= PARALLEL_MIN_NUMEL else None)
    pad = "  " * depth
    lines.append(f"{pad}const int64_t lanes = tirc_min_i64({LANES}, {size} - {lane_var}_block * {LANES});")
    arrays = _row_vars(plan)
    for var, dtype in arrays.items():
        lines.append(f"{pad}{C_TYPES[dtype]} {var}[{LANES}];")
    body = _Body(lines, frozenset(arrays))
    for group in _groups(plan.steps):
        if isinstance(group, Loop):
            _lane_pass(plan, group, body, depth, lane_var)
        else:
            _lane_loop(lines, depth, lane_var, functools.partial(_statements, body, group))
    _close(lines, depth, len(nest))


def _groups(steps) -> list:
    """The steps with each run of per-row statements gathered in a list."""
    out: list = []
    for step in steps:
        if isinstance(step, Loop):
            out.append(step)
        elif out and isinstance(out[-1], list):
            out[-1].append(step)
        else:
            out.append([step])
    return out


def _statements(body: _Body, statements, pad: str) -> None:
    for stmt in statements:
        body.statement(stmt, pad)


def _row_vars(plan: KernelPlan) -> dict[str, str]:
    """The per-row variables (statements outside passes, reduction results
    and their accumulators), with their dtypes."""
    out: dict[str, str] = {}
    for step in plan.steps:
        if isinstance(step, Loop):
            for stmt in step.statements:
                if isinstance(stmt, Reduce):
                    out[f"acc_{stmt.var}"] = stmt.arg_dtype
                    if stmt.kind in ("argmax", "argmin"):
                        out[f"acc_{stmt.var}_index"] = "i64"
                        out[f"acc_{stmt.var}_first"] = "b8"
                    out[stmt.var] = stmt.dtype
        elif not isinstance(step, Store):
            out[step.var] = step.dtype
    return out


def _lane_loop(lines, depth: int, lane_var: str, emit) -> None:
    pad = "  " * depth
    lines.append(f"{pad}#pragma omp simd")
    lines.append(f"{pad}for (int64_t lane = 0; lane < lanes; ++lane) {{")
    lines.append(f"{pad}  const int64_t {lane_var} = {lane_var}_block * {LANES} + lane;")
    emit(pad + "  ")
    lines.append(f"{pad}}}")


def _lane_pass(plan: KernelPlan, loop: Loop, body: _Body, depth: int, lane_var: str) -> None:
    """One pass in the lanes shape: accumulator arrays, the r loops, and per
    r the vector loop over the block's rows."""
    lines = body.lines
    reduces = [s for s in loop.statements if isinstance(s, Reduce)]

    def start(pad):
        for reduce in reduces:
            acc = f"acc_{reduce.var}[lane]"
            if reduce.kind in ("argmax", "argmin"):
                lines.extend([f"{pad}{acc} = 0;", f"{pad}acc_{reduce.var}_index[lane] = 0;"])
                lines.append(f"{pad}acc_{reduce.var}_first[lane] = true;")
            else:
                lines.append(f"{pad}{acc} = {identity(reduce.kind, reduce.arg_dtype)};")

    def accumulate(pad):
        for stmt in loop.statements:
            if not isinstance(stmt, Reduce):
                body.statement(stmt, pad)
                continue
            acc = f"acc_{stmt.var}[lane]"
            if stmt.kind in ("argmax", "argmin"):
                better = "tirc_better_max" if stmt.kind == "argmax" else "tirc_better_min"
                first = f"acc_{stmt.var}_first[lane]"
                lines.append(f"{pad}if ({first} || {better}({stmt.arg}, {acc})) {{")
                lines.append(f"{pad}  {acc} = {stmt.arg};")
                lines.append(f"{pad}  acc_{stmt.var}_index[lane] = {_rindex(plan.reduction)};")
                lines.append(f"{pad}  {first} = false;")
                lines.append(f"{pad}}}")
            else:
                lines.append(pad + COMBINE[stmt.kind].format(acc=acc, v=body.ref(stmt.arg)))

    def finish(pad):
        for reduce in reduces:
            suffix = "_index" if reduce.kind in ("argmax", "argmin") else ""
            lines.append(f"{pad}{reduce.var}[lane] = acc_{reduce.var}{suffix}[lane];")
            body.dtypes[reduce.var] = reduce.dtype

    _lane_loop(lines, depth, lane_var, start)
    consts, loops = _split((f"r{k}", s) for k, s in enumerate(plan.reduction))
    _constants(lines, consts, "  " * depth)
    inner = _open(lines, loops, depth)
    _lane_loop(lines, inner, lane_var, accumulate)
    _close(lines, inner, len(loops))
    _lane_loop(lines, depth, lane_var, finish)


def _scan_body(plan: KernelPlan, scan: Scan, lines: list[str]) -> None:
    """Loops over every dimension but the scanned one, which runs innermost
    and in order, carrying the running value."""
    outer = [(f"i{k}", s) for k, s in enumerate(plan.ranges) if k != scan.dim]
    parallel = len(outer) > 0 and _numel(plan.ranges) >= PARALLEL_MIN_NUMEL
    depth = _open(lines, outer, 1, _parallel(len(outer)) if parallel else None)
    acc = f"acc_{scan.var}"
    lines.append(f"{'  ' * depth}{C_TYPES[scan.dtype]} {acc} = {identity(scan.kind, scan.dtype)};")
    depth = _open(lines, [(f"i{scan.dim}", plan.ranges[scan.dim])], depth)
    pad = "  " * depth
    body = _Body(lines)
    for stmt in plan.statements:
        if stmt is scan:
            lines.append(pad + COMBINE[scan.kind].format(acc=acc, v=scan.arg))
            lines.append(f"{pad}{C_TYPES[scan.dtype]} {scan.var} = {acc};")
            body.dtypes[scan.var] = scan.dtype
        else:
            body.statement(stmt, pad)
    depth = _close(lines, depth, 1)
    _close(lines, depth, len(outer))
