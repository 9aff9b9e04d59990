"""The lanes shape of a C++ kernel: a reduction along a strided dimension
(a column sum). A block of LANES adjacent rows is processed together, each
row's values held in a small array, so the loop over the block is the
contiguous vector loop."""

from __future__ import annotations

from math import prod

import functools

import sympy

from .cpp_loops import (
    PARALLEL_MIN_NUMEL,
    Body,
    close_loops,
    constants,
    open_loops,
    parallel_pragma,
    rindex,
    split,
)
from .cpp_ops import C_TYPES, COMBINE, identity
from .loop_order import storage_order
from .kernel_plan import Compute, KernelPlan, Load, Loop, Reduce, Store

# Rows per block: four AVX-512 vectors of float32.
LANES = 64


def _step(expression, var: str) -> sympy.Expr:
    """How much an index grows when `var` grows by one."""
    expression = sympy.sympify(expression)
    symbol = next((s for s in expression.free_symbols if s.name == var), None)
    if symbol is None:
        return sympy.Integer(0)
    return sympy.expand(expression.xreplace({symbol: symbol + 1}) - expression)


def lane_dim(plan: KernelPlan) -> int | None:
    """The range dimension to vectorize across rows (the lanes shape), or
    None: chosen when more of the passes' loads are contiguous along the
    innermost range variable than along the innermost r-variable."""
    ranges = [k for k, s in enumerate(plan.ranges) if s != 1]
    reduced = [k for k, s in enumerate(plan.reduction) if s != 1]
    if ranges:
        # The variable the stores are contiguous along: a channels-last
        # result's channel (a max pool over an NHWC map), not its width.
        ordered = storage_order(plan, [(f"i{k}", plan.ranges[k]) for k in ranges])
        ranges = [int(name[1:]) for name, _ in ordered]
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


def lanes_body(plan: KernelPlan, dim: int, lines: list[str]) -> None:
    """A block of LANES rows along range dimension `dim` at a time: every
    per-row value is an array over the block, every pass runs its r loops
    outside and the loop over the block's rows (the vector loop) inside."""
    consts, rows = split((f"i{k}", s) for k, s in enumerate(plan.ranges))
    lane_var, size = f"i{dim}", plan.ranges[dim]
    rows = [(name, s) for name, s in rows if name != lane_var]
    constants(lines, consts, "  ")
    nest = rows + [(f"{lane_var}_block", -(-size // LANES))]
    total = prod(plan.ranges) * prod(plan.reduction)
    depth = open_loops(lines, nest, 1, parallel_pragma(len(nest)) if total >= PARALLEL_MIN_NUMEL else None)
    pad = "  " * depth
    lines.append(f"{pad}const int64_t lanes = tirc_min_i64({LANES}, {size} - {lane_var}_block * {LANES});")
    arrays = _row_vars(plan)
    for var, dtype in arrays.items():
        lines.append(f"{pad}{C_TYPES[dtype]} {var}[{LANES}];")
    body = Body(lines, frozenset(arrays))
    for group in _groups(plan.steps):
        if isinstance(group, Loop):
            _lane_pass(plan, group, body, depth, lane_var)
        else:
            _lane_loop(lines, depth, lane_var, functools.partial(_statements, body, group))
    close_loops(lines, depth, len(nest))


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


def _statements(body: Body, statements, pad: str) -> None:
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


def _lane_pass(plan: KernelPlan, loop: Loop, body: Body, depth: int, lane_var: str) -> None:
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
                lines.append(f"{pad}  acc_{stmt.var}_index[lane] = {rindex(plan.reduction)};")
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
    consts, loops = split((f"r{k}", s) for k, s in enumerate(plan.reduction))
    constants(lines, consts, "  " * depth)
    inner = open_loops(lines, loops, depth)
    _lane_loop(lines, inner, lane_var, accumulate)
    close_loops(lines, inner, len(loops))
    _lane_loop(lines, depth, lane_var, finish)
