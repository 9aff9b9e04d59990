"""Values a rows kernel keeps between the passes over a row: a per-element
value that a later pass would recompute through an expensive op (softmax's
exp) is computed once, saved (Keep) and read back (Reload). Its place is the
row of an output that the last pass reading it overwrites, or else a row
buffer on the stack."""

from __future__ import annotations

from math import prod

import sympy

from ir_text import FloorDiv, Mod, non_overlapping, render_index

from .cpp_loops import CPP_INDEX, Keep, Reload, rindex
from .cpp_prelude import MATH_FUNCTIONS
from .kernel_plan import Compute, KernelPlan, Load, Loop, Reduce, Store, uses

# Ops worth a store and a load to compute once instead of once per pass.
EXPENSIVE = frozenset(name for name, _ in MATH_FUNCTIONS) | {"sigmoid", "pow"}
# The most bytes per row (per thread, on the stack) kept between passes:
# a bf16 softmax of rows of 65536 (their float32 exps) gains from keeping
# them (measured: docs/design-notes.md, "C++ kernels"), and it is well
# inside the 2-8 MiB stacks of libgomp's and Python's threads.
MAX_KEPT_BYTES = 256 * 1024
# A split kernel (few long rows: cpp_split.py) runs its rows one after the
# other, so one buffer per kept value serves them all: on the heap, up to
# this many bytes a row: a bf16 softmax of 8 rows of 262144 computing its
# exps twice was much slower than eager, which keeps them in a float buffer
# it allocates per thread, as this does per kernel call (measured:
# docs/design-notes.md, "C++ kernels").
MAX_SPLIT_KEPT_BYTES = 64 * 1024 * 1024
_SIZES = {"b8": 1, "u8": 1, "i8": 1, "i16": 2, "f16": 2, "bf16": 2, "i32": 4, "f32": 4, "i64": 8, "f64": 8}


def keep_rows(plan: KernelPlan, max_bytes: int = MAX_KEPT_BYTES) -> tuple[tuple, dict[str, str]]:
    """The steps, with per-element values that a later pass would recompute
    through an expensive op computed once and kept instead; and the vars
    kept in row buffers (`row_{var}`), with their dtypes. The buffers hold
    at most `max_bytes` a row; a value of a longer row is kept only in an
    output's row (_into_outputs), else computed again, which is much slower
    (measured: docs/design-notes.md, "C++ kernels")."""
    steps, kept = _keep(plan, True, max_bytes)
    if sum(_SIZES[dtype] for dtype in kept.values()) * prod(plan.reduction) > max_bytes:
        steps, kept = _keep(plan, False, max_bytes)
    return steps, kept


def _keep(plan: KernelPlan, longer: bool, max_bytes: int) -> tuple[tuple, dict[str, str]]:
    """keep_rows, keeping the costly values that fit what is left of
    `max_bytes` (`longer`: all of them, in the hope of an output row for
    those past it)."""
    budget = max_bytes
    steps = list(plan.steps)
    loops = [k for k, step in enumerate(steps) if isinstance(step, Loop)]
    index = rindex(plan.reduction)
    kept: dict[str, str] = {}
    for later in loops[1:]:
        statements = list(steps[later].statements)
        seen = {id(s) for k in loops if k < later for s in steps[k].statements}
        defined = {s.var: s for s in statements if id(s) in seen and not isinstance(s, (Store, Reduce))}
        users = [s for s in statements if id(s) not in seen]
        frontier = [v for v in defined if any(v in _uses(s) for s in users)]
        for var in frontier:
            stmt = defined[var]
            size = _SIZES[stmt.dtype] * prod(plan.reduction)
            if not _costly(var, defined) or (size > budget and not longer):
                continue
            budget -= min(size, budget)
            kept[var] = stmt.dtype
            place = f"row_{var}[{index}]"
            first = next(k for k in loops if any(s is stmt for s in steps[k].statements))
            where = list(steps[first].statements)
            where.insert(next(j for j, s in enumerate(where) if s is stmt) + 1, Keep(var, place))
            steps[first] = Loop(tuple(where))
            statements[statements.index(stmt)] = Reload(var, stmt.dtype, place)
        steps[later] = Loop(tuple(live(statements)))
    return _into_outputs(plan, steps, kept)


# A kept row written into the output row that the last pass overwrites
# instead of a stack buffer: the output's lines are then fetched while the
# pass that computes the kept value (softmax's exp) runs, not in the last,
# cheap pass, which is faster (measured: docs/design-notes.md, "C++
# kernels").
def _into_outputs(plan: KernelPlan, steps: list, kept: dict[str, str]) -> tuple[tuple, dict[str, str]]:
    """Moves each kept var that an output's row can hold there (_output_place)."""
    taken: set[str] = set()
    for var in list(kept):
        place = _output_place(plan, steps, var, kept[var], taken)
        if place is None:
            continue
        del kept[var]
        for k, step in enumerate(steps):
            if isinstance(step, Loop):
                steps[k] = Loop(tuple(_moved(s, var, place) for s in step.statements))
    return tuple(steps), kept


def _moved(stmt, var: str, place: str):
    if isinstance(stmt, Keep) and stmt.var == var:
        return Keep(var, place)
    if isinstance(stmt, Reload) and stmt.var == var:
        return Reload(var, stmt.dtype, place)
    return stmt


def _output_place(plan: KernelPlan, steps: list, var: str, dtype: str, taken: set[str]) -> str | None:
    """`p_out[index]` of a store that the last pass reloading `var` makes
    after the reload, when the kernel only writes `out` there (no load of it,
    no other store, not written in place over an input), `out` holds
    `dtype`, and its index is a different element for every (row, r): the
    value kept there is read back before the store overwrites it. Else None."""
    last = max(k for k, s in enumerate(steps) if isinstance(s, Loop) and _reloads(s, var))
    statements = steps[last].statements
    after = next(j for j, s in enumerate(statements) if isinstance(s, Reload) and s.var == var)
    params = dict(plan.params)
    everything = [s for step in steps for s in (step.statements if isinstance(step, Loop) else (step,))]
    for store in statements[after + 1 :]:
        out = getattr(store, "target", None) if isinstance(store, Store) else None
        if out is None or out in taken or out in plan.aliased or params.get(out) != dtype:
            continue
        if any(isinstance(s, Load) and s.source == out for s in everything):
            continue
        if sum(isinstance(s, Store) and s.target == out for s in everything) != 1:
            continue
        if not _one_element_each(store.index, plan):
            continue
        taken.add(out)
        return f"p_{out}[{render_index(store.index, CPP_INDEX)}]"
    return None


def _reloads(loop: Loop, var: str) -> bool:
    return any(isinstance(s, Reload) and s.var == var for s in loop.statements)


def _one_element_each(index, plan: KernelPlan) -> bool:
    """Whether `index` is affine in the row and r variables with strides that
    never map two (row, r) points to one element."""
    expr = sympy.sympify(index)
    if expr.atoms(FloorDiv, Mod, sympy.Min, sympy.Max):
        return False
    sizes = [*plan.ranges, *plan.reduction]
    names = [*(f"i{k}" for k in range(len(plan.ranges))), *(f"r{k}" for k in range(len(plan.reduction)))]
    symbols = {s.name: s for s in expr.free_symbols}
    if set(symbols) - set(names):
        return False
    wanted = [symbols.get(name, sympy.Symbol(name)) for name in names]
    poly = sympy.Poly(expr, *wanted) if wanted else None
    if poly is None or poly.total_degree() > 1:
        return False
    strides = [poly.coeff_monomial(symbol) for symbol in wanted]
    if not all(isinstance(s, sympy.Integer) for s in strides):
        return False
    return non_overlapping(sizes, [int(s) for s in strides])


def _uses(stmt) -> list[str]:
    if isinstance(stmt, Keep):
        return [stmt.var]
    return [] if isinstance(stmt, Reload) else uses(stmt)


def _costly(var: str, defined: dict) -> bool:
    """Whether computing `var` from the pass's inputs involves an expensive op."""
    stack, seen = [var], set()
    while stack:
        name = stack.pop()
        stmt = defined.get(name)
        if stmt is None or name in seen:
            continue
        seen.add(name)
        if isinstance(stmt, Compute) and stmt.op in EXPENSIVE:
            return True
        stack.extend(_uses(stmt))
    return False


def live(statements: list, wanted=lambda stmt: True) -> list:
    """The statements with an effect (a store, a reduction, a kept value)
    that `wanted` accepts, and those they need, in order."""
    needed: set[str] = set()
    out = []
    for stmt in reversed(statements):
        effect = isinstance(stmt, (Store, Reduce, Keep)) and wanted(stmt)
        if effect or getattr(stmt, "var", None) in needed:
            out.append(stmt)
            needed.update(_uses(stmt))
    return out[::-1]
