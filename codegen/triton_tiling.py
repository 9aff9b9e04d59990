"""2-D tiles for pointwise kernels, in two kinds, both YBLOCK x XBLOCK:

- transpose: the big accesses disagree on which loop variable is
  contiguous (a transpose, `x + y.t()`, NCHW to NHWC). A 1-D block reads or
  writes one of them with a stride: every lane touches its own cache line.
  A tile walks two variables at once, `x` (contiguous in most of the bytes
  moved) along XBLOCK and `y` (contiguous in the others) innermost along
  YBLOCK, so each access is contiguous along one of the tile's axes; Triton
  moves values between layouts through shared memory (as Inductor's tiled
  pointwise kernels do).
- rows: the big accesses agree, and the loop variables split into an inner
  group contiguous in all of them (x: h*w of NCHW, c of NHWC) and the outer
  rest (y: n, c of NCHW), with the small broadcast operands (a per-channel
  weight) depending on one side only. Each tile row is one value of y: a
  per-channel parameter is one [YBLOCK, 1] load per row (or a [1, XBLOCK]
  one, channels-last), never div/mod per element; the activation moves
  along x at stride 1. A channels-last plan needs it even without
  parameters: a 1-D block in the plan's (NCHW) order would be strided.

Which variable is contiguous is weighed by the bytes each access moves (its
element size times the elements its index reaches), so a parameter of a
few hundred elements never outweighs the activation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

import sympy

from ir_text import FloorDiv, Mod, to_torch

from . import triton_configs
from .kernel_plan import KernelPlan, Load, Store
from .triton_body import Kernel, Tile, names, unflatten
from .triton_configs import LaunchConfig

# Both tiled variables of a transpose must span at least this many elements:
# below it a 1-D block already touches whole cache lines along the short one.
MIN_EXTENT = 16
# A plan a 1-D block reads contiguously gets rows only when they are at least
# this long: shorter rows save little div/mod and waste lanes at their ends.
MIN_ROW = 64


@dataclass(frozen=True)
class Tiling:
    """The variables flattened along XBLOCK and along YBLOCK (the fastest last
    in each), and the kind: "transpose" or "rows"."""

    x: tuple[tuple[str, int], ...]
    y: tuple[tuple[str, int], ...]
    kind: str = "transpose"

    @property
    def xnumel(self) -> int:
        return prod(size for _, size in self.x)

    @property
    def ynumel(self) -> int:
        return prod(size for _, size in self.y)


# Launch configs by kind: square tiles for a transpose, wide rows otherwise.
_CONFIGS = {"transpose": triton_configs.tiled, "rows": triton_configs.rows}


def launch(tiling: Tiling) -> LaunchConfig:
    """The heuristic's configs of a tiled kernel."""
    return _CONFIGS[tiling.kind](tiling.xnumel, tiling.ynumel)


@dataclass(frozen=True)
class Access:
    """One load or store of a plan: the loop variables its index uses, its
    stride along each (None: not linear in it), the bytes it moves, the
    innermost variable it is contiguous along, and whether it broadcasts
    (misses a loop variable longer than 1: the same element for many lanes)."""

    variables: frozenset[str]
    strides: tuple[tuple[str, int | None], ...]
    bytes: int
    unit: str | None
    broadcast: bool

    def stride(self, name: str) -> int | None:
        return dict(self.strides).get(name, 0)


def choose(plan: KernelPlan) -> Tiling | None:
    """The tiling the heuristic wants for a pointwise plan, or None where a
    1-D block serves (every access contiguous in the plan's order, too
    short a variable to gain from a tile)."""
    accesses = _accesses(plan)
    return _transpose(plan, accesses) or _rows(plan, accesses)


def default(plan: KernelPlan) -> Tiling:
    """The tiling of a kernel pinned to a 2-D tile (`triton_config` with a
    YBLOCK) where the heuristic would not tile: x the heaviest variable if
    there is one, else the last; y every other variable, in plan order."""
    chosen = choose(plan)
    if chosen is not None:
        return chosen
    sizes = _variables(plan)
    if not sizes:
        return Tiling((), ())
    weights = _contiguous_bytes(_accesses(plan))
    x = _heaviest(weights) if weights else next(reversed(sizes))
    return _tiling(plan, x)


def _transpose(plan: KernelPlan, accesses: list[Access]) -> Tiling | None:
    """x the variable most bytes are contiguous along; y the one a big access
    moving along x is contiguous along instead (a broadcast one reads the
    same line for every lane of x, and decides nothing); each grown into
    the group of variables its accesses read contiguously."""
    weights = _contiguous_bytes(accesses)
    if len(weights) < 2:
        return None
    x = _heaviest(weights)
    # An access contiguous along no variable (a gather, a strided read) cannot name y.
    across = [a for a in accesses if not a.broadcast and x in a.variables and a.unit not in (x, None)]
    if not across:
        return None
    y = _heaviest(_contiguous_bytes(across))
    sizes = _variables(plan)
    # Each side: the variables its accesses read contiguously from x (or y)
    # outwards, as h, w of an NCHW tensor.
    big = [a for a in accesses if not a.broadcast and a.unit == x]
    xs = _contiguous_group(big, x, sizes, {y})
    ys = _contiguous_group([a for a in across if a.unit == y], y, sizes, set(dict(xs)))
    if min(prod(size for _, size in side) for side in (xs, ys)) < MIN_EXTENT:
        return None
    rest = [(name, size) for name, size in sizes.items() if name not in dict(xs) and name not in dict(ys)]
    return Tiling(tuple(xs), tuple(rest + ys))


def _rows(plan: KernelPlan, accesses: list[Access]) -> Tiling | None:
    """Rows where the big accesses are contiguous along one variable: x the
    group of variables contiguous in all of them, grown outwards from it
    until a variable a broadcast operand uses (so that operand stays on y)."""
    big = [a for a in accesses if not a.broadcast]
    units = {a.unit for a in big}
    if len(units) != 1 or None in units:
        return None
    sizes = _variables(plan)
    group = _contiguous_group(big, units.pop(), sizes, _broadcast_variables(accesses))
    rest = [(name, size) for name, size in sizes.items() if name not in dict(group)]
    tiling = Tiling(tuple(group), tuple(rest), "rows")
    if _row_major_run(big, sizes) < min(MIN_ROW, prod(sizes.values())):
        return tiling  # a 1-D block in plan order would be strided: rows however short
    if not rest or tiling.xnumel < MIN_ROW or not _loads_per_row(accesses, tiling):
        return None
    return tiling


def _contiguous_group(big: list[Access], unit: str, sizes, excluded: set[str]) -> list[tuple[str, int]]:
    """The variables, fastest last, whose flat index every big access reads at
    stride 1: from `unit` outwards while the next stride is the extent so
    far, stopping at an excluded variable (or at once if `unit` is one)."""
    group, extent = [unit], sizes[unit]
    while big and unit not in excluded:
        following = [
            name
            for name, size in sizes.items()
            if name not in group and size > 1 and name not in excluded
            if all(a.stride(name) == extent for a in big)
        ]
        if not following:
            break
        group.insert(0, following[0])
        extent *= sizes[following[0]]
    return [(name, sizes[name]) for name in group]


def _broadcast_variables(accesses: list[Access]) -> set[str]:
    return {name for a in accesses if a.broadcast for name in a.variables}


def _loads_per_row(accesses: list[Access], tiling: Tiling) -> bool:
    """Whether some broadcast operand varies along one tile axis only: rows
    then load it once per row (or column) instead of once per element."""
    sides = (names(tiling.x), names(tiling.y))
    return any(a.broadcast and any(a.variables <= side for side in sides) for a in accesses)


def _row_major_run(big: list[Access], sizes: dict[str, int]) -> int:
    """Elements a 1-D block (the plan's flat order) reads at stride 1 in every
    big access: the extent of the plan's innermost variables they agree on."""
    run = 1
    for name, size in reversed(sizes.items()):
        if size > 1 and not all(a.stride(name) == run for a in big):
            break
        run *= size
    return run


def _tiling(plan: KernelPlan, x: str) -> Tiling:
    """x along XBLOCK, every other variable along YBLOCK in plan order."""
    sizes = _variables(plan)
    return Tiling(((x, sizes[x]),), tuple((name, size) for name, size in sizes.items() if name != x))


def _variables(plan: KernelPlan) -> dict[str, int]:
    return {f"i{k}": size for k, size in enumerate(plan.ranges)}


def _heaviest(weights: dict[str, int]) -> str:
    """The variable with the most bytes contiguous along it; a tie goes to
    the innermost (the plan's last variables vary fastest in its outputs)."""
    return max(weights, key=lambda name: (weights[name], int(name[1:])))


def _contiguous_bytes(accesses: list[Access]) -> dict[str, int]:
    """Bytes moved by the accesses, by the loop variable they are contiguous along."""
    weights: dict[str, int] = {}
    for access in accesses:
        if access.unit is not None:
            weights[access.unit] = weights.get(access.unit, 0) + access.bytes
    return weights


def _accesses(plan: KernelPlan) -> list[Access]:
    dtypes = dict(plan.params)
    variables = _variables(plan)
    out = []
    for stmt in plan.statements:
        if not isinstance(stmt, (Load, Store)):
            continue
        index = sympy.sympify(stmt.index)
        symbols = {s.name: s for s in index.free_symbols if s.name in variables}
        bare = unclamped(index)
        strides = tuple((name, stride(bare, symbols[name])) for name in sorted(symbols))
        unit = [name for name, step in strides if step == 1]
        buffer = stmt.source if isinstance(stmt, Load) else stmt.target
        elements = prod(variables[name] for name in symbols)
        missing = any(size > 1 and name not in symbols for name, size in variables.items())
        out.append(
            Access(
                variables=frozenset(symbols),
                strides=strides,
                bytes=elements * to_torch(dtypes[buffer]).itemsize,
                unit=max(unit, key=lambda n: int(n[1:])) if unit else None,
                broadcast=missing and isinstance(stmt, Load),
            )
        )
    return out


def unclamped(index):
    """The index with its clamps to constant bounds taken off (`min(63,
    max(0, i1 - 64))` is `i1 - 64`): a concatenation's or a padding's
    loads clamp their index so that every load is in bounds, and move along
    the clamped variable as the unclamped index does wherever their value
    is used. Only for weighing accesses; the kernel loads the clamped index."""

    def strip(e):
        rest = [a for a in e.args if not a.is_Number]
        return rest[0] if len(rest) == 1 else e.func(*rest)

    def clamp(e):
        return isinstance(e, (sympy.Min, sympy.Max)) and any(a.is_Number for a in e.args)

    return index.replace(clamp, strip)


def stride(index, symbol) -> int | None:
    """The coefficient of `symbol` in an index, or None where it is not
    linear in it: where it appears inside a division, modulo, min or max
    (sympy's simplify of such a difference can take far longer than the
    compile; measured: docs/design-notes.md, "Triton kernels")."""
    if any(symbol in f.free_symbols for f in index.atoms(sympy.Min, sympy.Max, FloorDiv, Mod)):
        return None
    step = sympy.expand(index.xreplace({symbol: symbol + 1}) - index)
    return int(step) if step.is_Integer else None


def render(kernel: Kernel, tiling: Tiling) -> list[str]:
    """YBLOCK x XBLOCK tiles: the x variables (unflattened from `xindex`) vary
    along the tile's second axis, the y variables (from `yindex`) along its
    first; the programs walk the x tiles of a y band in turn (a 1-D grid: no
    65535-program limit on y). A value keeps size 1 along an axis it does
    not vary along; a variable is defined only where an index still needs it
    (an access contiguous along an axis indexes with `xindex` or `yindex`)."""
    tile = Tile(
        "[YBLOCK, XBLOCK]",
        "mask",
        (names(tiling.y), names(tiling.x)),
        blocks=("YBLOCK", "XBLOCK"),
        masks=("ymask", "xmask"),
        flats=((tiling.y, "yindex"), (tiling.x, "xindex")),
    )
    pid = "tl.program_id(0)" if kernel.index_type == "tl.int32" else "tl.program_id(0).to(tl.int64)"
    xmask = "tl.full([1, XBLOCK], 1, tl.int1)" if kernel.full_x else "xindex < xnumel"
    # A tiled launch's rnumel is the y extent: full_r says YBLOCK tiles it exactly.
    ymask = "tl.full([YBLOCK, 1], 1, tl.int1)" if kernel.full_r else "yindex < ynumel"
    lines = kernel.header(["xnumel", "ynumel"], ["XBLOCK", "YBLOCK"])
    lines += [
        f"    pid = {pid}",
        "    xprograms = tl.cdiv(xnumel, XBLOCK)",
        "    yindex = (pid // xprograms) * YBLOCK + tl.arange(0, YBLOCK)[:, None]",
        "    xindex = (pid % xprograms) * XBLOCK + tl.arange(0, XBLOCK)[None, :]",
        f"    ymask = {ymask}",
        f"    xmask = {xmask}",
        "    mask = ymask & xmask",
    ]
    body = ["    " + kernel.statement(s, tile) for s in kernel.plan.statements]
    used = set(re.findall(r"\bi\d+\b", "\n".join(body)))
    for flat, variables in (("xindex", tiling.x), ("yindex", tiling.y)):
        defined = unflatten(flat, list(variables), "    ")
        lines += [line for line in defined if line.split("=")[0].strip() in used]
    return lines + body
