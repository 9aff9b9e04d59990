"""Concatenations in pieces: a pointwise kernel that picks its value, by
ranges of one loop variable, among values it computes (a concatenation
whose parts' ops were inlined into it) computes every part at every
element and keeps one. PSPNet's pyramid pooling head concatenated four
bilinearly upsampled maps with its input: each element evaluated all
four interpolations and five clamped loads, and the kernel took 4.7x the
time Inductor's kernels writing each part into its slice took (an H200).

`in_pieces` cuts such a kernel along that variable at the bounds its
selects compare it with: one piece per range, each a pointwise plan over
its own sub-box of the iteration space, storing into the kernel's outputs
at the sub-box's offset. Within a piece every compare of the variable has
one value, so its selects keep one operand, the clamps of the parts'
indices (`min(511, max(0, i1 - 2048))`) fold to the bounds of the range,
and what only the other parts used is dropped. The backends run the
pieces in order: the C++ backend as the loop nests of one function, the
Triton backend as one kernel launch per piece.

The cut is a rendering of the same statements, decided from the plan
alone: the fusion and memplan text are unchanged, and the code shows the
pieces (`k16_p0`, ...).
"""

from __future__ import annotations

from dataclasses import replace
from math import prod

import sympy

from ir_text import index_bounds, index_var, simplify_index

from .kernel_plan import Compute, KernelPlan, Load, Store, Scan, uses

# The fewest elements a piece may have, by backend: on the GPU each piece is
# a launch of its own (a few microseconds), which a piece this size repays;
# on the CPU it is a loop nest of the kernel's function.
MIN_PIECE = {"triton": 1 << 16, "cpp": 1 << 10}
# Pieces pay when the kernel computes, per element, at least this many
# times what its largest piece does. On the GPU each piece costs a launch:
# at 1.5, ESPNet's module tails (a cat of five running sums, the input added,
# BN and PReLU; 55 statements against the largest piece's 29) ran in pieces
# and the level took 1.33x Inductor's time, 1.03x whole (an H200, f32). On
# the CPU any cut pays, as g++ sinks each part's load under its select and
# leaves the loop scalar (that module tail: 0.65 ms for 131072 elements on 2
# cores, 0.11 ms in pieces).
MIN_SAVING = {"triton": 2.0, "cpp": 1.0}


def in_pieces(plan: KernelPlan, backend: str) -> KernelPlan:
    """The plan with its `pieces` where it runs in pieces on `backend`, else itself."""
    if plan.loops or plan.nests or plan.pieces or plan.launch is not None or plan.split is not None:
        return plan
    if any(isinstance(s, Scan) for s in plan.steps):
        return plan
    cut = _cut(plan)
    if cut is None:
        return plan
    var, bounds = cut
    k = int(var.name[1:])
    edges = [0, *bounds, plan.ranges[k]]
    pieces = tuple(
        _piece(plan, f"{plan.name}_p{j}", k, lo, hi) for j, (lo, hi) in enumerate(zip(edges, edges[1:]))
    )
    largest = max(len(p.steps) for p in pieces)
    if (
        min(prod(p.ranges) for p in pieces) < MIN_PIECE[backend]
        or len(plan.steps) < MIN_SAVING[backend] * largest
    ):
        return plan
    return replace(plan, pieces=pieces)


def _cut(plan: KernelPlan):
    """(variable, sorted inner bounds) of the selects' compares `var < c`,
    where every use of such a compare is a select's condition; None if no
    variable has one (or several have)."""
    by_var = {s.var: s for s in plan.steps if isinstance(s, Compute)}
    conditions = {s.args[0] for s in plan.steps if isinstance(s, Compute) and s.op == "where"}
    bounds: dict = {}
    for stmt in plan.steps:
        if not (isinstance(stmt, Compute) and stmt.op == "lt"):
            continue
        lhs, rhs = (by_var.get(a) for a in stmt.args)
        if lhs is None or rhs is None or lhs.op != "index" or rhs.op != "constant":
            continue
        index = sympy.sympify(dict(lhs.attrs)["index"])
        value = dict(rhs.attrs)["value"]
        if not (index.is_Symbol and index.name.startswith("i") and isinstance(value, int)):
            continue
        if stmt.var not in conditions or any(
            stmt.var in uses(s) and not _condition_of(s, stmt.var) for s in plan.steps
        ):
            continue
        extent = plan.ranges[int(index.name[1:])]
        if 0 < value < extent:
            bounds.setdefault(index, set()).add(value)
    if len(bounds) != 1:
        return None
    ((var, values),) = bounds.items()
    return var, sorted(values)


def _condition_of(stmt, var: str) -> bool:
    """Whether `var` is used by `stmt` only as a select's condition."""
    return (
        isinstance(stmt, Compute) and stmt.op == "where" and stmt.args[0] == var and var not in stmt.args[1:]
    )


def _piece(plan: KernelPlan, name: str, k: int, lo: int, hi: int) -> KernelPlan:
    """The plan over `lo <= i_k < hi` (i_k renumbered from 0)."""
    var = index_var(f"i{k}")
    ranges = tuple(hi - lo if j == k else n for j, n in enumerate(plan.ranges))
    scope = {f"i{j}": n for j, n in enumerate(ranges)}

    def moved(expr):
        return _unclamped(simplify_index(sympy.sympify(expr).xreplace({var: var + lo}), scope), scope)

    by_var = {s.var: s for s in plan.steps if isinstance(s, Compute)}
    chosen: dict[str, str] = {}  # a select's var -> the operand it keeps
    steps = []
    for stmt in plan.steps:
        if isinstance(stmt, Compute) and stmt.op == "where" and stmt.args[0] in by_var:
            truth = _truth(by_var[stmt.args[0]], by_var, var, lo, hi)
            if truth is not None:
                kept = stmt.args[1] if truth else stmt.args[2]
                chosen[stmt.var] = chosen.get(kept, kept)
                continue
        steps.append(_renamed(stmt, chosen, moved))
    return replace(plan, name=name, ranges=ranges, steps=_live(steps), pieces=())


def _truth(cond: Compute, by_var: dict, var, lo: int, hi: int) -> bool | None:
    """The value of the compare `var < c` over the whole piece, if it has one."""
    if cond.op != "lt":
        return None
    lhs, rhs = (by_var.get(a) for a in cond.args)
    if lhs is None or rhs is None or lhs.op != "index" or rhs.op != "constant":
        return None
    if sympy.sympify(dict(lhs.attrs)["index"]) != var:
        return None
    value = dict(rhs.attrs)["value"]
    if hi <= value:
        return True
    return False if lo >= value else None


def _renamed(stmt, chosen: dict[str, str], moved):
    """The statement with the selects it uses resolved and its indices moved into the piece."""
    if isinstance(stmt, Load):
        return replace(stmt, index=moved(stmt.index))
    if isinstance(stmt, Store):
        return replace(stmt, index=moved(stmt.index), var=chosen.get(stmt.var, stmt.var))
    args = tuple(chosen.get(a, a) for a in stmt.args)
    attrs = stmt.attrs
    if stmt.op == "index":
        attrs = tuple((key, moved(v) if key == "index" else v) for key, v in attrs)
    return replace(stmt, args=args, attrs=attrs)


def _live(steps: list) -> tuple:
    """The steps the stores need."""
    needed: set[str] = set()
    for stmt in reversed(steps):
        if isinstance(stmt, Store) or stmt.var in needed:
            needed.update(uses(stmt))
            if not isinstance(stmt, Store):
                needed.add(stmt.var)
    return tuple(s for s in steps if isinstance(s, Store) or s.var in needed)


def _unclamped(expr, scope: dict[str, int]):
    """`expr` with each min/max argument dropped that the variables' ranges
    show is never the one picked (a part's clamp over the part's own range)."""
    if not expr.args:
        return expr
    args = [_unclamped(a, scope) for a in expr.args]
    if not isinstance(expr, (sympy.Min, sympy.Max)):
        return expr.func(*args)
    smaller = isinstance(expr, sympy.Min)
    kept = list(zip(args, (index_bounds(a, scope) for a in args)))
    for item in list(kept):
        lo, hi = item[1]
        others = [bounds for other, bounds in kept if other is not item[0]]
        # another argument is always at least as small (for a min), or as large (a max)
        if any(other_hi <= lo if smaller else other_lo >= hi for other_lo, other_hi in others):
            kept.remove(item)
    if len(kept) == 1:
        return kept[0][0]
    return expr.func(*(a for a, _ in kept))
