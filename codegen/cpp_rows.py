"""The rows shape of a C++ kernel: a reduction along the contiguous
dimension. OpenMP runs across the rows; per row, passes over the
r-variables whose innermost loop is `#pragma omp simd reduction(...)`, so
accumulators live in vector registers (sums are reassociated across lanes).
Values a later pass would recompute through an expensive op are kept
(cpp_keep.py). Few long rows run one
after the other, each pass in chunks across the threads (cpp_split.py)."""

from __future__ import annotations

from math import prod

from ir_text import is_float

from .cpp_loops import (
    Keep,
    PARALLEL_MIN_NUMEL,
    Body,
    close_loops,
    constants,
    open_loops,
    parallel_pragma,
    rindex,
    split,
)
from .cpp_ops import C_TYPES, SIMD_REDUCTION, identity
from .cpp_keep import EXPENSIVE, MAX_KEPT_BYTES, MAX_SPLIT_KEPT_BYTES, keep_rows, live
from .cpp_segments import segments
from .cpp_prefetch import Prefetch, next_row_line, plan_prefetch, prefetch_lines
from .cpp_split import Chunks, close_chunks, open_chunks, ordered, split_chunks
from .kernel_plan import Compute, KernelPlan, Loop, Reduce, Store


def rows_body(plan: KernelPlan, lines: list[str]) -> None:
    """Loops over the rows (OpenMP across them, collapsed); per row, the
    plan's steps: statements, and passes over the r-variables."""
    consts, rows = split((f"i{k}", s) for k, s in enumerate(plan.ranges))
    constants(lines, consts, "  ")
    total = prod(plan.ranges) * prod(plan.reduction)
    split_rows = split_chunks(plan, BLOCK)
    parallel = bool(rows) and total >= PARALLEL_MIN_NUMEL and split_rows is None
    pragma = f"{parallel_pragma(len(rows))} schedule(dynamic, {_chunk(prod(s for _, s in rows))})"
    steps, kept = keep_rows(plan, MAX_SPLIT_KEPT_BYTES if split_rows else MAX_KEPT_BYTES)
    if split_rows:
        _heap_rows(lines, kept, prod(plan.reduction))
    depth = open_loops(lines, rows, 1, pragma if parallel else None)
    if not split_rows:
        for var, dtype in kept.items():
            lines.append(f"{'  ' * depth}{C_TYPES[dtype]} row_{var}[{prod(plan.reduction)}];")
    body = Body(lines)
    steps = [_split_ordered(step) if isinstance(step, Loop) else step for step in steps]
    passes = [part for step in steps if isinstance(step, list) for part in step]
    prefetch = None if split_rows else plan_prefetch(plan, passes, rows, BLOCK, _can_host)
    for step in steps:
        if not isinstance(step, list):
            body.statement(step, "  " * depth)
            continue
        for part in step:
            hosted = prefetch if prefetch and part is passes[prefetch.host] else None
            _row_pass(plan, part, body, depth, split_rows, hosted)
    close_loops(lines, depth, len(rows))
    if split_rows:
        lines += [f"  __builtin_free(row_{var});" for var in kept]


def _heap_rows(lines: list[str], kept: dict[str, str], size: int) -> None:
    """The kept rows of a split kernel (few long rows, one after the other,
    each row's passes across the threads): one buffer per value on the
    heap, shared by the threads and by the rows in turn. An allocation
    that fails stops the process (__builtin_trap) rather than writing
    through a null pointer."""
    for var, dtype in kept.items():
        ctype = C_TYPES[dtype]
        lines.append(f"  {ctype}* row_{var} = ({ctype}*)__builtin_malloc({size} * sizeof({ctype}));")
        lines.append(f"  if (row_{var} == 0) __builtin_trap();")


# Rows are handed to the threads in chunks of at most CHUNK_ROWS, at least
# CHUNKS of them, taken as each thread finishes the last (OpenMP's dynamic
# schedule), not in one contiguous half per thread: on a shared 2-core
# machine one core often runs slower than the other, and a half waits for
# the slower one; chunks of a few rows were slower than halves (measured:
# docs/design-notes.md, "C++ kernels").
CHUNK_ROWS = 64
CHUNKS = 32


def _chunk(rows: int) -> int:
    return max(1, min(CHUNK_ROWS, rows // CHUNKS))


def _split_ordered(loop: Loop) -> list[Loop]:
    """A pass with argmax/argmin (which need the sequential order) and other
    reductions as two passes, so that the others still run as simd."""
    statements = list(loop.statements)
    if not any(map(ordered, statements)) or all(
        map(ordered, (s for s in statements if isinstance(s, Reduce)))
    ):
        return [loop]
    simd = live(statements, lambda s: not ordered(s))
    in_order = live(statements, ordered)
    return [Loop(tuple(simd)), Loop(tuple(in_order))]


def _row_pass(
    plan: KernelPlan,
    loop: Loop,
    body: Body,
    depth: int,
    chunks: Chunks | None = None,
    prefetch: Prefetch | None = None,
) -> None:
    """One pass over the r-variables: accumulators before it, results after.
    The innermost r loop is a simd reduction (SIMD_REDUCTION) unless an
    argmax/argmin needs the sequential order; float max/min keep a NaN
    flag beside. A simd pass of at least BLOCK elements keeps its
    accumulators in arrays, one element per lane (_blocked). With `chunks`,
    the pass runs chunk by chunk across the threads, each into partials.
    With `prefetch` (a blocked pass), each block prefetches its part of the
    next row (cpp_prefetch.py)."""
    lines = body.lines
    pad = "  " * depth
    reduces = [s for s in loop.statements if isinstance(s, Reduce)]
    in_order = any(map(ordered, reduces))
    consts, loops = split((f"r{k}", s) for k, s in enumerate(plan.reduction))
    blocked = bool(reduces) and not in_order and bool(loops) and loops[-1][1] >= BLOCK and _blockable(loop)
    accumulators = []
    for reduce in reduces:
        acc_type = C_TYPES[reduce.arg_dtype]
        acc = f"acc_{reduce.var}"
        if reduce.kind in ("argmax", "argmin"):
            lines.append(f"{pad}{acc_type} {acc} = 0;")
            lines.append(f"{pad}int64_t {acc}_index = 0;")
            lines.append(f"{pad}bool {acc}_first = true;")
            continue
        accumulators += _accumulators(reduce, acc_type)
    outer = depth
    ranges = [(name, 0, size) for name, size in loops]
    if chunks is not None:
        depth = open_chunks(lines, depth, chunks, accumulators, _chunk(chunks.count))
        ranges[0] = (chunks.var, f"{chunks.var}_begin", f"{chunks.var}_end")
        pad = "  " * depth
    if prefetch is not None:
        lines.append(next_row_line(prefetch, pad))
    if blocked:
        _lane_arrays(lines, pad, accumulators)
    else:
        for name, ctype, start, _ in accumulators:
            lines.append(f"{pad}{ctype} {name} = {start};")
    constants(lines, consts, pad)
    for name, begin, end in ranges[:-1]:
        lines.append(f"{'  ' * depth}for (int64_t {name} = {begin}; {name} < {end}; ++{name}) {{")
        depth += 1
    name, begin, end = ranges[-1] if loops else (None, 0, 0)
    parts = segments(loop, name, end) if loops and chunks is None else [(begin, end)]
    if blocked:
        for begin, end in parts:
            _blocked(plan, loop, body, depth, (name, begin, end), prefetch)
    elif loops:
        clauses = [f"reduction({operator}:{name})" for name, _, _, operator in accumulators]
        for begin, end in parts:
            if not in_order:
                lines.append(f"{'  ' * depth}#pragma {' '.join(['omp simd', *clauses])}")
            lines.append(f"{'  ' * depth}for (int64_t {name} = {begin}; {name} < {end}; ++{name}) {{")
            _accumulate(plan, loop, body, "  " * (depth + 1))
            lines.append(f"{'  ' * depth}}}")
    else:
        _accumulate(plan, loop, body, pad)
    depth = close_loops(lines, depth, len(ranges[:-1]))
    if blocked:
        _combine_lanes(lines, pad, accumulators)
    if chunks is not None:
        close_chunks(lines, outer, chunks, accumulators)
        pad = "  " * outer
    for reduce in reduces:
        acc = f"acc_{reduce.var}"
        if reduce.kind in ("argmax", "argmin"):
            result = f"{acc}_index"
        elif _nan_flag(reduce):
            result = f"({acc}_nan ? NAN : {acc})"
        elif reduce.kind in ("any", "all"):
            result = f"({acc} != 0)"
        else:
            result = acc
        lines.append(f"{pad}const {C_TYPES[reduce.dtype]} {reduce.var} = {result};")
        body.dtypes[reduce.var] = reduce.dtype


# Lanes of a blocked pass's accumulator arrays: one AVX-512 vector of
# float32. An `omp simd reduction` also keeps one accumulator per lane, but
# g++ then adds the lanes up one after the other (16 dependent scalar adds
# per row, in order, as it may not reassociate them); the arrays are added
# up as a tree, half the lanes onto the other half, which was faster
# (measured: docs/design-notes.md, "C++ kernels"); see _blockable for the
# passes that are not blocked.
BLOCK = 16


def _can_host(loop: Loop) -> bool:
    """Whether a pass prefetches the next row: a blocked reduction pass that
    stores nothing, whose arithmetic leaves the memory idle. Hosted by the
    output pass instead (stores), the prefetches gained nothing or lost
    (measured: docs/design-notes.md, "C++ kernels")."""
    reduces = [s for s in loop.statements if isinstance(s, Reduce)]
    stores = any(isinstance(s, (Store, Keep)) for s in loop.statements)
    return bool(reduces) and not stores and not any(map(ordered, reduces)) and _blockable(loop)


def _blockable(loop: Loop) -> bool:
    """Whether a pass gains from lane arrays: it only sums or multiplies
    floats, and calls no math function. Integer lanes g++ adds up as a tree
    itself; blocked, softmax's exp pass and its bf16 max pass (a select and
    a NaN flag per lane) ran slower (measured: docs/design-notes.md, "C++
    kernels")."""
    for stmt in loop.statements:
        if isinstance(stmt, Compute) and stmt.op in EXPENSIVE:
            return False
        if isinstance(stmt, Reduce) and (stmt.kind not in ("sum", "prod") or not is_float(stmt.arg_dtype)):
            return False
    return True


def _lane_arrays(lines: list[str], pad: str, accumulators) -> None:
    """The accumulator arrays of a blocked pass, each lane at its start value."""
    for name, ctype, _, _ in accumulators:
        lines.append(f"{pad}{ctype} lanes_{name}[{BLOCK}];")
    lines.append(f"{pad}#pragma omp simd")
    lines.append(f"{pad}for (int64_t lane = 0; lane < {BLOCK}; ++lane) {{")
    for name, _, start, _ in accumulators:
        lines.append(f"{pad}  lanes_{name}[lane] = {start};")
    lines.append(f"{pad}}}")


def _blocked(
    plan: KernelPlan, loop: Loop, body: Body, depth: int, innermost, prefetch: Prefetch | None
) -> None:
    """The innermost r loop (`(var, begin, end)`) in blocks of BLOCK
    elements, element k of a block into lane k of the arrays (the block
    loop is the vector loop); the last, partial block into the first lanes.
    A chunk's range is known at run time only (it starts on a block). Each
    full block issues the `prefetch`es of its part of the next row."""
    lines = body.lines
    var, begin, end = innermost
    pad = "  " * depth
    if isinstance(end, int):
        full, rest = end - (end - begin) % BLOCK, (end - begin) % BLOCK
    else:
        full, rest = f"{var}_full", f"{end} - {var}_full"
        lines.append(f"{pad}const int64_t {full} = {begin} + ({end} - {begin}) / {BLOCK} * {BLOCK};")
    lines.append(f"{pad}for (int64_t {var}_block = {begin}; {var}_block < {full}; {var}_block += {BLOCK}) {{")
    if prefetch is not None:
        lines.extend(prefetch_lines(prefetch, pad + "  "))
    _block_lanes(plan, loop, body, pad + "  ", var, f"{var}_block", BLOCK)
    lines.append(f"{pad}}}")
    if rest:
        _block_lanes(plan, loop, body, pad, var, str(full), rest)


def _block_lanes(
    plan: KernelPlan, loop: Loop, body: Body, pad: str, var: str, start: str, count: int
) -> None:
    lines = body.lines
    lines.append(f"{pad}#pragma omp simd")
    lines.append(f"{pad}for (int64_t lane = 0; lane < {count}; ++lane) {{")
    lines.append(f"{pad}  const int64_t {var} = {start} + lane;")
    _accumulate(plan, loop, body, pad + "  ", lane="lane")
    lines.append(f"{pad}}}")


def _combine_lanes(lines: list[str], pad: str, accumulators) -> None:
    """Add up each array's lanes as a tree (its own combining step), into a
    scalar of the accumulator's name."""
    lines.append(f"{pad}for (int64_t width = {BLOCK // 2}; width > 0; width /= 2) {{")
    lines.append(f"{pad}  #pragma omp simd")
    lines.append(f"{pad}  for (int64_t lane = 0; lane < width; ++lane) {{")
    for name, _, _, operator in accumulators:
        step = _LANE_STEPS[operator]
        lines.append(f"{pad}    " + step.format(acc=f"lanes_{name}[lane]", v=f"lanes_{name}[lane + width]"))
    lines.append(f"{pad}  }}")
    lines.append(f"{pad}}}")
    for name, ctype, _, _ in accumulators:
        lines.append(f"{pad}{ctype} {name} = lanes_{name}[0];")


# Combining two lanes, by the accumulator's simd operator (a blocked pass
# only sums or multiplies: _blockable).
_LANE_STEPS = {"+": SIMD_REDUCTION["sum"][3], "*": SIMD_REDUCTION["prod"][3]}


def _accumulators(reduce: Reduce, acc_type: str) -> list[tuple[str, str, str, str]]:
    """(name, C type, start, simd operator) of a reduction's accumulator
    and, for a float max/min, of its NaN flag."""
    ctype, operator, start, _ = SIMD_REDUCTION[reduce.kind]
    acc = f"acc_{reduce.var}"
    flag = [(f"{acc}_nan", "int", "0", "|")] if _nan_flag(reduce) else []
    return [(acc, ctype or acc_type, start or identity(reduce.kind, reduce.arg_dtype), operator), *flag]


def _accumulate(plan: KernelPlan, loop: Loop, body: Body, ipad: str, lane: str | None = None) -> None:
    """The pass's statements for one r index; with `lane`, into that lane
    of the accumulator arrays."""
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
            lines.append(f"{ipad}  {acc}_index = {rindex(plan.reduction)};")
            lines.append(f"{ipad}  {acc}_first = false;")
            lines.append(f"{ipad}}}")
            continue
        ref = (lambda name: f"lanes_{name}[{lane}]") if lane else (lambda name: name)
        lines.append(ipad + SIMD_REDUCTION[stmt.kind][3].format(acc=ref(acc), v=stmt.arg))
        if _nan_flag(stmt):
            lines.append(f"{ipad}{ref(acc + '_nan')} |= ({stmt.arg} != {stmt.arg});")


def _nan_flag(reduce: Reduce) -> bool:
    return reduce.kind in ("max", "min") and reduce.arg_dtype in ("f16", "bf16", "f32", "f64")
