"""2-D tiles for pointwise kernels whose accesses disagree on which loop
variable is contiguous (a transpose, `x + y.t()`, NCHW to NHWC).

A 1-D block over the flattened space reads or writes such an access with a
stride: every lane touches its own cache line. A tile of YBLOCK x XBLOCK
lanes instead walks two variables at once, `x` (contiguous in most of the
bytes moved) along XBLOCK and `y` (contiguous in the others) innermost
along YBLOCK, so each access is contiguous along one of the tile's axes;
Triton gives each load and store the layout its pointers want and moves
values between layouts through shared memory (as Inductor's tiled
pointwise kernels do).

The y axis flattens every loop variable but `x`, in plan order with `y`
moved last, so a tile's YBLOCK lanes are consecutive values of `y`.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ir_text import FloorDiv, Mod, to_torch

from .kernel_plan import KernelPlan, Load, Store

# Both tiled variables must span at least this many elements: below it a
# 1-D block already touches whole cache lines along the short one.
MIN_EXTENT = 16


@dataclass(frozen=True)
class Tiling:
    """The variable along XBLOCK (None for a kernel without loop variables)
    and the variables flattened along YBLOCK, the fastest last."""

    x: tuple[str, int] | None
    y: tuple[tuple[str, int], ...]

    @property
    def xnumel(self) -> int:
        return self.x[1] if self.x else 1

    @property
    def ynumel(self) -> int:
        numel = 1
        for _, size in self.y:
            numel *= size
        return numel


def choose(plan: KernelPlan) -> Tiling | None:
    """The tiling the heuristic wants for a pointwise plan, or None where a
    1-D block serves: every access contiguous along one variable (or along
    none), or one of the two variables too short to gain from a tile."""
    weights = _contiguous_bytes(plan)
    if len(weights) < 2:
        return None
    x = _heaviest(weights)
    across = {v: w for v, w in _contiguous_bytes(plan, across=x).items() if v != x}
    if not across:
        return None
    y = _heaviest(across)
    sizes = _variables(plan)
    if sizes[x] < MIN_EXTENT or sizes[y] < MIN_EXTENT:
        return None
    return _tiling(plan, x, y)


def default(plan: KernelPlan) -> Tiling:
    """The tiling of a kernel pinned to a 2-D tile (`triton_config` with a
    YBLOCK) where the heuristic would not tile: x the heuristic's variable
    if it has one, else the last; y every other variable, in plan order."""
    chosen = choose(plan)
    if chosen is not None:
        return chosen
    sizes = _variables(plan)
    if not sizes:
        return Tiling(None, ())
    weights = _contiguous_bytes(plan)
    x = _heaviest(weights) if weights else next(reversed(sizes))
    return _tiling(plan, x, None)


def _tiling(plan: KernelPlan, x: str, y: str | None) -> Tiling:
    sizes = _variables(plan)
    rest = [(name, size) for name, size in sizes.items() if name not in (x, y)]
    if y is not None:
        rest.append((y, sizes[y]))
    return Tiling((x, sizes[x]), tuple(rest))


def _variables(plan: KernelPlan) -> dict[str, int]:
    return {f"i{k}": size for k, size in enumerate(plan.ranges)}


def _heaviest(weights: dict[str, int]) -> str:
    """The variable with the most bytes contiguous along it; a tie goes to
    the innermost (the plan's last variables vary fastest in its outputs)."""
    return max(weights, key=lambda name: (weights[name], int(name[1:])))


def _contiguous_bytes(plan: KernelPlan, across: str | None = None) -> dict[str, int]:
    """Element bytes of the plan's loads and stores by the loop variable they
    are contiguous along (stride 1; the innermost where several are). With
    `across`, only accesses that also move along that variable count: one
    that broadcasts over it (a bias) reads the same line for every lane."""
    dtypes = dict(plan.params)
    variables = _variables(plan)
    weights: dict[str, int] = {}
    for stmt in plan.statements:
        if not isinstance(stmt, (Load, Store)):
            continue
        index = sympy.sympify(stmt.index)
        symbols = {s.name: s for s in index.free_symbols if s.name in variables}
        if across is not None and across not in symbols:
            continue
        unit = [name for name, symbol in symbols.items() if stride(index, symbol) == 1]
        if not unit:
            continue
        name = max(unit, key=lambda n: int(n[1:]))
        buffer = stmt.source if isinstance(stmt, Load) else stmt.target
        size = to_torch(dtypes[buffer]).itemsize
        weights[name] = weights.get(name, 0) + size
    return weights


def stride(index, symbol) -> int | None:
    """The coefficient of `symbol` in an index, or None where it is not
    linear in it: where it appears inside a division, modulo, min or max
    (sympy's simplify of such a difference took 70 s for a pooling
    window's index)."""
    if any(symbol in f.free_symbols for f in index.atoms(sympy.Min, sympy.Max, FloorDiv, Mod)):
        return None
    step = sympy.expand(index.xreplace({symbol: symbol + 1}) - index)
    return int(step) if step.is_Integer else None
