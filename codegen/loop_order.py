"""The order loop variables run in: the one the stores are contiguous along
innermost (as Inductor orders loops by stride). A plan's variables come in
the logical (NCHW) order of its result; a result laid out channels-last
(lowering/layout.py) stores along the channel with stride 1, and a kernel
that kept the logical order would move C elements at a step through every
access."""

from __future__ import annotations

import sympy

from ir_text import index_var

from .kernel_plan import KernelPlan, Store


def storage_order(plan: KernelPlan, variables: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """`variables` (name, size) reordered by decreasing stride in the
    plan's stores, so the last is the one they are contiguous along; a
    variable of one value stays outermost. The plan's order where the stores
    do not tell (no store, an index not linear in a variable)."""
    stores = [s for s in plan.statements if isinstance(s, Store)]
    if not stores:
        return list(variables)
    strides = {}
    for name, size in variables:
        coeffs = [sympy.sympify(s.index).coeff(index_var(name)) for s in stores]
        if not all(c.is_Integer for c in coeffs):
            return list(variables)
        strides[name] = min(abs(int(c)) for c in coeffs) if size > 1 else float("inf")
    return sorted(variables, key=lambda v: -strides[v[0]])
