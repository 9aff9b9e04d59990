"""A C++ row pass cut into segments where its loads' clamps switch.

A concatenation along the reduced dimension (Swin's patch merging: four
2x2 neighbours side by side, then a LayerNorm over them) loads every part
at a clamped index (`min(95, max(0, r0 - 96))`) and selects one: per
element, four gathers and three selects, in every pass. Within
[96, 192) each clamp and each `r0 < 192` is constant, which g++ folds once
the loop's bounds say so (value-range propagation): one contiguous load
per element. So the innermost r loop of a pass runs as one loop per
segment between the points where a clamp of a load's index switches
(at most MAX_SEGMENTS; else, or without clamps, one loop as before).
Measured: docs/design-notes.md, "C++ kernels".
"""

from __future__ import annotations

import sympy

from .kernel_plan import Load, Loop

MAX_SEGMENTS = 8


def segments(loop: Loop, var: str, size: int) -> list[tuple[int, int]]:
    """[begin, end) ranges covering [0, size) of the r-variable `var`,
    cut where a clamp in a load's index switches; [(0, size)] when none."""
    cuts = set()
    for stmt in loop.statements:
        if isinstance(stmt, Load):
            index = sympy.sympify(stmt.index)
            symbol = next((s for s in index.free_symbols if s.name == var), None)
            if symbol is not None:
                cuts |= _switches(index, symbol)
    cuts = sorted(c for c in cuts if 0 < c < size)
    if not cuts or len(cuts) + 1 > MAX_SEGMENTS:
        return [(0, size)]
    bounds = [0, *cuts, size]
    return list(zip(bounds, bounds[1:]))


def _switches(index, symbol) -> set[int]:
    """The values of `symbol` from which a min or max against a constant,
    of an argument increasing in it by steps of 1, takes its other side."""
    out = set()
    for clamp in index.atoms(sympy.Min, sympy.Max):
        constants = [a for a in clamp.args if a.is_Integer]
        others = [a for a in clamp.args if not a.is_Integer]
        if len(constants) != 1 or len(others) != 1 or others[0].free_symbols != {symbol}:
            continue
        arg, bound = sympy.expand(others[0]), int(constants[0])
        if not arg.is_polynomial(symbol) or sympy.degree(arg, symbol) != 1 or arg.coeff(symbol) != 1:
            continue
        start = bound - int(arg.subs(symbol, 0))  # where the argument equals the bound
        # min(bound, arg) is arg up to `start` and the bound after it; max the other way round.
        out.add(start + 1 if isinstance(clamp, sympy.Min) else start)
    return out
