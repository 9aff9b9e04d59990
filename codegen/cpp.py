"""C++ kernels: one function per fused kernel, written for g++ to vectorize.

Three loop shapes (see docs/design-notes.md, "C++ kernels"), the last two in
files of their own (cpp_rows.py, cpp_lanes.py):
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

from dataclasses import replace
from math import prod

from .cpp_build import UNIT_BREAK
from .cpp_lanes import lane_dim, lanes_body
from .cpp_loops import (
    PARALLEL_MIN_NUMEL,
    Body,
    close_loops,
    constants,
    open_loops,
    parallel_pragma,
    split,
)
from .cpp_ops import C_TYPES, COMBINE, SUPPORTED_OPS, identity
from .cpp_prelude import PRELUDE
from .cpp_rows import rows_body
from .kernel_comments import kernel_comment
from .kernel_plan import KernelPlan, Load, Scan, Store, index_symbols, uses
from .loop_order import storage_order
from .plan_pieces import in_pieces

__all__ = ["PRELUDE", "SUPPORTED_OPS", "render_kernel", "render_source"]

# A pointwise kernel whose outer loops have fewer iterations than this runs
# its innermost loop in chunks of CHUNK elements across the threads.
MIN_PARALLEL_ROWS = 64
CHUNK = 8192


def render_source(plans: list[KernelPlan]) -> str:
    """The prelude and the kernels, each after a UNIT_BREAK, where the build
    may start a new translation unit (cache._units)."""
    return PRELUDE + "\n" + "\n\n".join(UNIT_BREAK + render_kernel(p) for p in plans) + "\n"


def render_kernel(plan: KernelPlan, linkage: str = 'extern "C"') -> str:
    if not plan.nests:
        # A concatenation in pieces runs them as loop nests (plan_pieces.py).
        pieces = in_pieces(plan, "cpp").pieces
        plan = replace(plan, nests=pieces) if pieces else plan
    if plan.nests:
        return _render_nests(plan)
    lines = _signature(plan, linkage)
    scan = next((s for s in plan.statements if isinstance(s, Scan)), None)
    if scan is not None:
        _scan_body(plan, scan, lines)
    elif not plan.loops:
        _pointwise_body(plan, lines)
    elif (dim := lane_dim(plan)) is not None:
        lanes_body(plan, dim, lines)
    else:
        rows_body(plan, lines)
    lines.append("}")
    return "\n".join(lines)


def _signature(plan: KernelPlan, linkage: str, sources: bool = True) -> list[str]:
    """The kernel's comment (kernel_comments.py) and its function's first line."""
    params = []
    for k, (name, dtype) in enumerate(plan.params):
        const = "const " if k < plan.num_inputs else ""
        restrict = "" if name in plan.aliased else "__restrict__ "
        params.append(f"{const}{C_TYPES[dtype]}* {restrict}p_{name}")
    if plan.checks_values:
        params.append("int64_t* __restrict__ p_error")
    return [*kernel_comment(plan, "//", sources), f"{linkage} void {plan.name}({', '.join(params)}) {{"]


def _render_nests(plan: KernelPlan) -> str:
    """A kernel of several loop nests: one function per nest, and the
    kernel's entry point calling them in order (one launch from Python).
    Each nest's comment lists its source lines; the entry's, its nodes."""
    parts = [render_kernel(nest, "static") for nest in plan.nests]
    lines = _signature(plan, 'extern "C"', sources=False)
    for nest in plan.nests:
        args = ["p_" + name for name, _ in nest.params] + (["p_error"] if nest.checks_values else [])
        lines.append(f"  {nest.name}({', '.join(args)});")
    lines.append("}")
    return "\n\n".join(parts + ["\n".join(lines)])


def _pointwise_body(plan: KernelPlan, lines: list[str]) -> None:
    """The outer loops run across threads (collapsed); the innermost is the
    vector loop, split into chunks across threads when the outer loops are
    too few to share out."""
    consts, loops = split(storage_order(plan, [(f"i{k}", s) for k, s in enumerate(plan.ranges)]))
    constants(lines, consts, "  ")
    body = Body(lines)
    if not loops:
        for stmt in plan.steps:
            body.statement(stmt, "  ")
        return
    outer, (inner, size) = loops[:-1], loops[-1]
    parallel = prod(plan.ranges) >= PARALLEL_MIN_NUMEL
    chunked = parallel and prod(s for _, s in outer) < MIN_PARALLEL_ROWS and size > CHUNK
    nest = outer + ([(f"{inner}_chunk", -(-size // CHUNK))] if chunked else [])
    depth = open_loops(lines, nest, 1, parallel_pragma(len(nest)) if parallel and nest else None)
    pad = "  " * depth
    start, end = "0", str(size)
    if chunked:
        start, end = f"{inner}_chunk * {CHUNK}", f"{inner}_end"
        lines.append(f"{pad}const int64_t {end} = tirc_min_i64({start} + {CHUNK}, {size});")
    before, inside = _invariant_split(plan, inner)
    for stmt in before:
        body.statement(stmt, pad)
    lines.append(f"{pad}#pragma omp simd")
    lines.append(f"{pad}for (int64_t {inner} = {start}; {inner} < {end}; ++{inner}) {{")
    for stmt in inside:
        body.statement(stmt, pad + "  ")
    lines.append(pad + "}")
    close_loops(lines, depth, len(nest))


def _invariant_split(plan: KernelPlan, inner: str) -> tuple[list, list]:
    """The statements that do not vary along the vector loop's variable
    (run once before it) and the others, each in order. g++ left a
    concatenation's select, `c ? a : b` with `c` computed from the outer
    variables inside the loop, unvectorized (it made masked loads of it); a
    per-channel parameter's loads and arithmetic run once per row too. A
    load of a buffer the kernel also writes stays in the loop."""
    varying: set[str] = set()
    before, inside = [], []
    for stmt in plan.steps:
        varies = (
            isinstance(stmt, Store)
            or inner in index_symbols(stmt)
            or (isinstance(stmt, Load) and stmt.source in plan.aliased)
            or any(u in varying for u in uses(stmt))
        )
        if varies:
            inside.append(stmt)
            if not isinstance(stmt, Store):
                varying.add(stmt.var)
        else:
            before.append(stmt)
    return before, inside


def _scan_body(plan: KernelPlan, scan: Scan, lines: list[str]) -> None:
    """Loops over every dimension but the scanned one, which runs innermost
    and in order, carrying the running value."""
    outer = [(f"i{k}", s) for k, s in enumerate(plan.ranges) if k != scan.dim]
    parallel = len(outer) > 0 and prod(plan.ranges) >= PARALLEL_MIN_NUMEL
    depth = open_loops(lines, outer, 1, parallel_pragma(len(outer)) if parallel else None)
    acc = f"acc_{scan.var}"
    # A float32 running value is carried in double, as eager's CPU kernel
    # carries it (at::acc_type): each element is then the correctly summed
    # prefix rounded once; in float a 6001-element cumsum drifts by 7e-5.
    acc_dtype = "f64" if scan.dtype == "f32" else scan.dtype
    lines.append(f"{'  ' * depth}{C_TYPES[acc_dtype]} {acc} = {identity(scan.kind, acc_dtype)};")
    depth = open_loops(lines, [(f"i{scan.dim}", plan.ranges[scan.dim])], depth)
    pad = "  " * depth
    body = Body(lines)
    for stmt in plan.statements:
        if stmt is scan:
            lines.append(pad + COMBINE[scan.kind].format(acc=acc, v=scan.arg))
            lines.append(f"{pad}const {C_TYPES[scan.dtype]} {scan.var} = ({C_TYPES[scan.dtype]}){acc};")
            body.dtypes[scan.var] = scan.dtype
        else:
            body.statement(stmt, pad)
    depth = close_loops(lines, depth, 1)
    close_loops(lines, depth, len(outer))
