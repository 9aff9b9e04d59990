"""Loop variables split where every index divides them: a Triton plan's
variable that its loads and stores use only as `i0 // d` and `i0 % d` (or
whole, `i0 = d * (i0 // d) + i0 % d`) becomes two variables, `i0 // d`
and `i0 % d`, each linear in every index.

A view merges dimensions: MLP-Mixer's token MLP reads the layer norm of a
(B, T, C) tensor transposed and flattened to (B * C, T), so the plan runs
over i0 in B * C with the channel `i0 % C` contiguous in the input and i1 in
T contiguous in the output. Neither access is linear in i0, so the tiling
heuristic (triton_tiling.py) saw no contiguous variable for the load and
ran a 1-D block whose every lane read its own cache line (69 us against
Inductor's 19 for its tiled kernel, bf16 on an H100). Split, the plan
has the channel as a variable of its own, and the transpose is tiled.

Only the plans' variables change; the IR, its text and the iteration space
(the product of the ranges) do not. A plan with a scan keeps its variables
(the scanned dimension is a variable's position).
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from ir_text import FloorDiv, Mod, index_var, simplify_index

from .kernel_plan import Compute, KernelPlan, Load, Loop, Scan, Store


def split_ranges(plan: KernelPlan) -> KernelPlan:
    """The plan with each divided variable split, until none is left (so a
    split plan splits to itself)."""
    if plan.nests:
        return replace(plan, nests=tuple(split_ranges(nest) for nest in plan.nests))
    if plan.pieces:
        return replace(plan, pieces=tuple(split_ranges(piece) for piece in plan.pieces))
    if any(isinstance(s, Scan) for s in plan.statements):
        return plan
    plan = _simplified(plan)
    while True:
        found = _divided(plan)
        if found is None:
            return plan
        plan = _split(plan, *found)


def _simplified(plan: KernelPlan) -> KernelPlan:
    """The plan with its indices simplified over its own ranges: a view
    composed over a flattened variable can keep a multiple of the divisor
    inside the division (`floordiv(12544*i1 + i2, 3136)` for a group norm's
    reshape of a channels-last map), which hides the division of `i2` alone
    (`4*i1 + floordiv(i2, 3136)`) from the split."""
    ranges = {f"i{k}": s for k, s in enumerate(plan.ranges)}
    ranges.update({f"r{k}": s for k, s in enumerate(plan.reduction)})
    return _rewritten(plan, lambda index: simplify_index(sympy.sympify(index), ranges))


def _rewritten(plan: KernelPlan, rewrite) -> KernelPlan:
    """The plan with `rewrite` applied to every load's, store's and index op's index."""

    def statement(stmt):
        if isinstance(stmt, Loop):
            return Loop(tuple(statement(s) for s in stmt.statements))
        if isinstance(stmt, (Load, Store)):
            return replace(stmt, index=rewrite(stmt.index))
        if isinstance(stmt, Compute) and stmt.op == "index":
            attrs = tuple((key, rewrite(value) if key == "index" else value) for key, value in stmt.attrs)
            return replace(stmt, attrs=attrs)
        return stmt

    return replace(plan, steps=tuple(statement(s) for s in plan.steps))


def _indices(plan: KernelPlan) -> list:
    out = []
    for stmt in plan.statements:
        if isinstance(stmt, (Load, Store)):
            out.append(sympy.sympify(stmt.index))
        elif isinstance(stmt, Compute) and stmt.op == "index":
            out.append(sympy.sympify(dict(stmt.attrs)["index"]))
    return out


def _divided(plan: KernelPlan) -> tuple[int, int] | None:
    """(position, divisor) of the first variable every index uses whole,
    or divided or reduced modulo divisors that nest (each divides the next),
    the smallest of which cuts its range into two parts longer than one."""
    indices = _indices(plan)
    for k, size in enumerate(plan.ranges):
        var = index_var(f"i{k}")
        divisors = _divisors(indices, var)
        if not divisors:
            continue
        d = min(divisors)
        if 1 < d < size and size % d == 0 and all(e % d == 0 or d % e == 0 for e in divisors):
            return k, d
    return None


def _divisors(indices: list, var) -> set[int] | None:
    """The integer divisors `var` appears under (as FloorDiv(var, d) or
    Mod(var, d)); None where it appears in a division of anything else, or
    by something else."""
    divisors: set[int] = set()
    for index in indices:
        for atom in index.atoms(FloorDiv, Mod):
            base, d = atom.args
            if var not in base.free_symbols:
                continue
            if not d.is_Integer or int(d) <= 1:
                return None
            if base == var:
                divisors.add(int(d))
            elif isinstance(base, FloorDiv) and base.args[0] == var and base.args[1].is_Integer:
                # mod(floordiv(i, a), b) (a reshape's middle dimension): the
                # inner division is an atom of its own; this one cuts at a*b.
                divisors.add(int(base.args[1]) * int(d))
            else:
                return None
    return divisors or None


def _split(plan: KernelPlan, k: int, d: int) -> KernelPlan:
    """Variable k as hi = i_k // d (range size / d) and lo = i_k % d (range d),
    at positions k and k + 1; later variables move up one."""
    n = len(plan.ranges)
    temps = {index_var(f"i{j}"): sympy.Symbol(f"_t{j}", integer=True, nonnegative=True) for j in range(n)}
    final = {}
    for j in range(n):
        if j != k:
            final[temps[index_var(f"i{j}")]] = index_var(f"i{j + (j > k)}")
    hi, lo = index_var(f"i{k}"), index_var(f"i{k + 1}")
    old = temps[index_var(f"i{k}")]

    def rewrite(index):
        index = sympy.sympify(index).xreplace(temps)

        def divided(e):
            return isinstance(e, (FloorDiv, Mod)) and e.args[0] == old

        def whole(e):
            m = int(e.args[1])
            if isinstance(e, FloorDiv):
                return FloorDiv(hi, m // d) if m % d == 0 else FloorDiv(lo, m) + (d // m) * hi
            return d * Mod(hi, m // d) + lo if m % d == 0 else Mod(lo, m)

        index = index.replace(divided, whole)
        return index.xreplace({old: d * hi + lo}).xreplace(final)

    ranges = plan.ranges[:k] + (plan.ranges[k] // d, d) + plan.ranges[k + 1 :]
    return _rewritten(replace(plan, ranges=ranges), rewrite)
