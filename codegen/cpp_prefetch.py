"""Prefetching the next row in the C++ rows shape.

A row kernel with several passes over a row (layer norm: its mean, its
deviations, the output) reads the row from memory in its first pass and
from the L1 cache after that. The later passes are arithmetic only, and
the first pass of the next row then waits on memory: the hardware
prefetcher does not run across the 4 KiB page a row of 1024 floats fills.
So a later pass of row i asks for row i + 1 (`__builtin_prefetch`, one
per block of BLOCK elements of the pass), and the memory traffic of the
next row overlaps the arithmetic of this one. The prefetches are spread
through the pass rather than issued all at once before it, and only a pass
that stores nothing hosts them (cpp_rows._can_host): both were faster
(measured: docs/design-notes.md, "C++ kernels")."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import sympy

from ir_text import TORCH_DTYPES, index_var, render_index

from .cpp_loops import split
from .cpp_ops import CPP_INDEX
from .kernel_plan import Load, Loop

# Only rows that fit in the L1 cache (48 KiB on the Xeon) beside the row
# being read are prefetched into it: the first pass's loads of one row, in
# bytes. Longer rows ran slower prefetched (measured: docs/design-notes.md,
# "C++ kernels").
PREFETCH_MAX_ROW_BYTES = 8192
# One prefetch reaches a cache line.
LINE_BYTES = 64


@dataclass(frozen=True)
class Prefetch:
    """In pass `host` (an index into the row's passes), per block of the
    innermost r-variable r starting at `r_block`: prefetch the next row's
    `addresses` (C++ pointer expressions). The next row is `row_var` + 1,
    or `row_var` itself on the last one (`next_row`)."""

    host: int
    row_var: str
    next_row: str
    addresses: tuple[str, ...]


def plan_prefetch(
    plan, passes: list[Loop], rows: list[tuple[str, int]], block: int, eligible
) -> Prefetch | None:
    """Where and what to prefetch for the next row, or None: there is no
    later pass that can host it (`eligible(pass)`: a pass the rows shape
    runs in blocks), or the row is too large for the L1 cache, or nothing
    of the first pass depends on the row."""
    _, loops = split((f"r{k}", s) for k, s in enumerate(plan.reduction))
    if not rows or not loops or loops[-1][1] < block or len(passes) < 2:
        return None
    host = next((k for k, p in enumerate(passes) if k > 0 and eligible(p)), None)
    if host is None:
        return None
    row_var, row_size = rows[-1]
    rvar = loops[-1][0]
    loads = _row_loads(passes[0], row_var, rvar)
    row_bytes = sum(TORCH_DTYPES[load.dtype].itemsize for load in loads) * prod(plan.reduction)
    if not loads or row_bytes > PREFETCH_MAX_ROW_BYTES:
        return None
    swap = {index_var(row_var): index_var(f"{row_var}_next"), index_var(rvar): index_var(f"{rvar}_block")}
    addresses = []
    for load in loads:
        step = max(1, LINE_BYTES // TORCH_DTYPES[load.dtype].itemsize)
        index = sympy.sympify(load.index).xreplace(swap)
        for offset in range(0, block, step):
            text = render_index(index + offset, CPP_INDEX)
            address = f"&p_{load.source}[{text}]"
            if address not in addresses:
                addresses.append(address)
    next_row = f"{row_var} + 1 < {row_size} ? {row_var} + 1 : {row_var}"
    return Prefetch(host, row_var, next_row, tuple(addresses))


def _row_loads(first: Loop, row_var: str, rvar: str) -> list[Load]:
    """The first pass's loads that move with both the row and the
    innermost r-variable (not a weight shared by the rows), one per
    source and index."""
    found: dict = {}
    for stmt in first.statements:
        if not isinstance(stmt, Load):
            continue
        names = {s.name for s in sympy.sympify(stmt.index).free_symbols}
        if row_var in names and rvar in names:
            found.setdefault((stmt.source, str(stmt.index)), stmt)
    return list(found.values())


def next_row_line(prefetch: Prefetch, pad: str) -> str:
    """The next row's index, before the host pass."""
    return f"{pad}const int64_t {prefetch.row_var}_next = {prefetch.next_row};"


def prefetch_lines(prefetch: Prefetch, pad: str) -> list[str]:
    """One block's prefetches (read, keep in all cache levels)."""
    return [f"{pad}__builtin_prefetch({address}, 0, 3);" for address in prefetch.addresses]
