"""Reductions over few, long rows in the C++ rows shape: each pass in
chunks across the threads, each chunk's accumulators into partials that are
combined as a tree (cpp_rows._row_pass renders the chunk's loops)."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .cpp_loops import split
from .kernel_plan import KernelPlan, Reduce

# A reduction over few, long rows (a whole-tensor sum or mean, a loss) runs
# each pass in chunks of about SPLIT_ELEMENTS across the threads, the rows
# one after the other; each chunk's result is a partial, and the partials
# are combined as a tree. Over the rows' threads a full reduction had one
# thread, and one accumulator per lane over the whole tensor: the mean of
# x*x over 4096x4096 was 4.6e-4 from exact (eager: 4e-9), past float32's
# tolerance against eager. Chunks start on a lane-block boundary and do not
# depend on the thread count, so results are the same on any machine.
SPLIT_MAX_ROWS = 8
SPLIT_MIN_ELEMENTS = 32768
SPLIT_ELEMENTS = 4096
SPLIT_MAX_CHUNKS = 4096


@dataclass(frozen=True)
class Chunks:
    """Chunk c of a pass covers `var` in [c * per, min((c + 1) * per, size))."""

    var: str
    size: int
    per: int
    count: int


def ordered(stmt) -> bool:
    """Whether a statement needs the r-variables in order (argmax/argmin)."""
    return isinstance(stmt, Reduce) and stmt.kind in ("argmax", "argmin")


def split_chunks(plan: KernelPlan, align: int) -> Chunks | None:
    """How the plan's passes are cut into chunks (None: the rows are many
    or short enough for OpenMP across them, or an argmax/argmin pass needs
    the order); with one r loop, a chunk starts on a multiple of `align`."""
    if prod(plan.ranges) > SPLIT_MAX_ROWS or prod(plan.reduction) < SPLIT_MIN_ELEMENTS:
        return None
    if any(map(ordered, plan.statements)):
        return None
    _, loops = split((f"r{k}", s) for k, s in enumerate(plan.reduction))
    (var, size), inner = loops[0], prod(s for _, s in loops[1:])
    per = -(-SPLIT_ELEMENTS // inner)
    per = max(per, -(-size // SPLIT_MAX_CHUNKS))
    if len(loops) == 1:
        per = -(-per // align) * align
    count = -(-size // per)
    return Chunks(var, size, per, count) if count > 1 else None


def open_chunks(lines: list[str], depth: int, chunks: Chunks, accumulators, grain: int) -> int:
    """The partials' arrays (one per accumulator, given as (name, C type,
    start, simd operator)), and the parallel loop over the chunks opened,
    handing out `grain` chunks at a time, with the chunk's range of
    `chunks.var`."""
    pad = "  " * depth
    for name, ctype, _, _ in accumulators:
        lines.append(f"{pad}{ctype} part_{name}[{chunks.count}];")
    lines.append(f"{pad}#pragma omp parallel for schedule(dynamic, {grain})")
    lines.append(f"{pad}for (int64_t chunk = 0; chunk < {chunks.count}; ++chunk) {{")
    var, inner = chunks.var, pad + "  "
    lines.append(f"{inner}const int64_t {var}_begin = chunk * {chunks.per};")
    lines.append(f"{inner}const int64_t {var}_end = tirc_min_i64({var}_begin + {chunks.per}, {chunks.size});")
    return depth + 1


def close_chunks(lines: list[str], depth: int, chunks: Chunks, accumulators) -> None:
    """Each accumulator into its partial, the chunk loop closed, and the
    partials combined as a tree into a scalar of the accumulator's name."""
    pad = "  " * depth
    for name, _, _, _ in accumulators:
        lines.append(f"{pad}  part_{name}[chunk] = {name};")
    lines.append(f"{pad}}}")
    if not accumulators:
        return
    lines.append(f"{pad}for (int64_t width = 1; width < {chunks.count}; width *= 2) {{")
    lines.append(f"{pad}  for (int64_t chunk = 0; chunk + width < {chunks.count}; chunk += 2 * width) {{")
    for name, _, _, operator in accumulators:
        a, b = f"part_{name}[chunk]", f"part_{name}[chunk + width]"
        lines.append(f"{pad}    {a} = {PARTIAL_STEPS[operator].format(a=a, b=b)};")
    lines.append(f"{pad}  }}")
    lines.append(f"{pad}}}")
    for name, ctype, _, _ in accumulators:
        lines.append(f"{pad}{ctype} {name} = part_{name}[0];")


# Combining two partials, by the accumulator's simd operator (a NaN flag
# beside a float max/min is an `|`).
PARTIAL_STEPS = {
    "+": "{a} + {b}",
    "*": "{a} * {b}",
    "max": "{a} > {b} ? {a} : {b}",
    "min": "{a} < {b} ? {a} : {b}",
    "|": "{a} | {b}",
    "&": "{a} & {b}",
}
