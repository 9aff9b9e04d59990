"""Triton kernels, one per fused kernel, in the shape its plan needs:

- pointwise: a 1-D block over the flattened iteration space; loop variables
  are recovered from `xindex` with // and % (a contiguous access uses
  `xindex` itself).
- tiled: a pointwise kernel whose accesses are contiguous along different
  variables (a transpose) runs on YBLOCK x XBLOCK tiles of two of them
  (triton_tiling.py).
- persistent reduction (rows up to triton_configs.PERSISTENT_MAX): a 2-D tile
  of XBLOCK whole rows; every pass of the plan runs on the same registers, so
  each input is read once, and the epilogue runs on an [XBLOCK, 1] column.
- looped reduction: a loop walks each row in chunks of RBLOCK, each lane
  keeping its own partial result, combined after the loop (as Inductor's
  looped reductions); a sum of exp(a - max(a)) after a max of a folds into
  the max's pass (online softmax, triton_online.py).
- outer reduction: a looped reduction over a strided dimension (a column
  sum), tiled wide along the contiguous rows.
- split reduction (a kernel with a `split = N` attribute, which the fusion
  stage writes on a one-pass reduction into few long rows, triton_split.py):
  a first kernel reduces one of the N chunks of a row per program into a
  workspace of partials, a second combines each row's partials and runs
  the epilogue.
- scan: a 2-D tile of rows (every element but the scanned dimension) by RBLOCK
  positions along it; each chunk is scanned with tl.cumsum/tl.cumprod and the
  running total is carried to the next chunk.

Blocks that tile their extent exactly get constant masks, which Triton folds
away; offsets are int32 unless some live offset reaches 2**31. Block sizes,
warps and stages come from triton_configs.py: the heuristic's choice, or
the config a kernel's `triton_config` attribute pins (the winner of timing
the alternatives on the GPU at compile time, triton_tune.py).

This module picks the shape and renders each kernel's frame; the statements
on a tile and a reduction's pass over a row are triton_body.py's, which
split reductions (triton_split.py) use as well.

The same source runs on NVIDIA GPUs and, with TRITON_INTERPRET=1, on the CPU.
Only `triton.language` core functions are used (libdevice does not run under
the interpreter), so functions it lacks are spelled with identities.
"""

from __future__ import annotations

from math import prod

from dataclasses import replace

import sympy

from ir_text import index_var

from . import triton_configs, triton_online, triton_split, triton_tiling
from .kernel_plan import KernelPlan, Load, Loop, Scan
from .plan_pieces import in_pieces
from .plan_ranges import split_ranges
from .triton_body import (
    SUPPORTED_OPS,
    TL_TYPES,
    Kernel,
    Tile,
    checks_indices,
    full,
    launch_args,
    launch_meta,
    names,
    unflatten,
)
from .triton_order import reduction_orders
from .triton_passes import Values, identity, reduction_pass
from .triton_configs import LaunchConfig
from .triton_helpers import HELPER_DEPS, HELPERS, helpers_named

__all__ = [
    "SUPPORTED_OPS",
    "candidate_configs",
    "checks_indices",
    "launch_call",
    "launch_config",
    "launch_spec",
    "render_kernel",
    "render_kernels",
    "split_count",
]

_CUMULATIVE = {"sum": "tl.cumsum", "prod": "tl.cumprod"}
_CARRY = {"sum": "{carry} + {scan}", "prod": "{carry} * {scan}"}


def _prepared(plan: KernelPlan) -> KernelPlan:
    """The plan as the kernel renders it: in pieces (plan_pieces.py) where
    it runs in pieces, each variable divided by every index split."""
    return split_ranges(in_pieces(plan, "triton"))


def render_kernel(plan: KernelPlan) -> str:
    """The plan's Triton source: one kernel, two for a split reduction, one
    per piece for a concatenation in pieces."""
    plan = _prepared(plan)
    if plan.pieces:
        return "\n\n\n".join(render_kernel(piece) for piece in plan.pieces)
    config = _launch_config(plan)
    if config.kind == "split":
        return triton_split.render(plan, config)
    kernel = Kernel(plan, config)
    kind = config.kind
    if kind == "scan":
        lines = _scan_kernel(kernel, _scan_statement(plan))
    elif kind == "pointwise":
        lines = _pointwise_kernel(kernel)
    elif kind == "tiled":
        lines = triton_tiling.render(kernel, triton_tiling.default(plan))
    else:
        lines = _reduction_kernel(kernel, persistent=kind == "persistent")
    return "\n".join(lines)


def _scan_statement(plan: KernelPlan):
    """The kernel's scan (a scan kernel holds one), or None."""
    return next((s for s in plan.statements if isinstance(s, Scan)), None)


def _pointwise_kernel(kernel: Kernel) -> list[str]:
    variables = [(f"i{k}", s) for k, s in enumerate(kernel.plan.ranges)]
    tile = Tile("[XBLOCK]", "xmask", (names(variables),), _row_major(variables))
    lines = kernel.header(["xnumel"], ["XBLOCK"]) + kernel.xindex("")
    lines += unflatten("xindex", variables, "    ")
    lines += ["    " + kernel.statement(s, tile) for s in kernel.plan.statements]
    return lines


def _row_major(variables) -> object:
    """The flat index of row-major loop variables: `xindex` itself."""
    flat, stride = sympy.Integer(0), 1
    for name, size in reversed(variables):
        flat += stride * index_var(name)
        stride *= size
    return flat


def _reduction_kernel(kernel: Kernel, persistent: bool) -> list[str]:
    """A block of XBLOCK rows; per-row statements on [XBLOCK, 1] columns. A
    persistent kernel holds whole rows (RBLOCK >= rnumel): every pass of the
    plan runs on the same tile, and a value recomputed in several passes is
    computed once. Otherwise each pass is a loop over the r-variables, RBLOCK
    at a time."""
    plan = kernel.plan
    outputs, orders = reduction_orders(plan, persistent)
    reduced = [(f"r{k}", s) for k, s in enumerate(plan.reduction)]
    loop = Tile("[XBLOCK, RBLOCK]", "mask", (names(outputs), names(reduced)))
    column = Tile("[XBLOCK, 1]", "xmask", (names(outputs),))
    lines = kernel.header(["xnumel", "rnumel"], ["XBLOCK", "RBLOCK"]) + kernel.xindex("[:, None]")
    lines += unflatten("xindex", outputs, "    ")
    values = Values(plan.aliased) if persistent else None
    folded, emptied = ({}, set()) if persistent else triton_online.online_sums(plan)
    kernel.passes = 1 if persistent else len(plan.loops) - len(emptied)
    kernel.persistent = persistent
    if persistent:
        lines += kernel.rindex("    ", "")
        lines += unflatten("rindex", next(iter(orders.values()), reduced), "    ")
    for k, step in enumerate(plan.steps):
        if isinstance(step, Loop):
            if k not in emptied:
                lines += reduction_pass(kernel, step, loop, orders[k], values, folded.get(k, []))
            continue
        step = values.rename(step) if values else step
        if step is not None:
            lines.append("    " + kernel.statement(step, column))
    return lines


def _scan_kernel(kernel: Kernel, scan: Scan) -> list[str]:
    plan = kernel.plan
    rows = [(f"i{k}", s) for k, s in enumerate(plan.ranges) if k != scan.dim]
    tile = Tile("[XBLOCK, RBLOCK]", "mask", (names(rows), frozenset({f"i{scan.dim}"})))
    carry, dtype = f"carry_{scan.var}", TL_TYPES[scan.dtype]
    lines = kernel.header(["xnumel", "rnumel"], ["XBLOCK", "RBLOCK"]) + kernel.xindex("[:, None]")
    lines += unflatten("xindex", rows, "    ")
    lines.append(f"    {carry} = {full('[XBLOCK, 1]', identity(scan.kind, scan.dtype), scan.dtype)}")
    lines.append("    for roffset in range(0, rnumel, RBLOCK):")
    lines += kernel.rindex("        ", "roffset + ")
    lines.append(f"        i{scan.dim} = rindex")
    for stmt in plan.statements:
        if stmt is not scan:
            lines.append("        " + kernel.statement(stmt, tile))
            continue
        # Lanes past the end come after every live one, so they cannot change
        # a live result; the carry is the last lane, live in all but the last chunk.
        chunk = f"{_CUMULATIVE[scan.kind]}({scan.arg}, 1).to({dtype})"
        lines.append(f"        {scan.var} = {_CARRY[scan.kind].format(carry=carry, scan=chunk)}")
        lines.append(f"        {carry} = _last_column({scan.var}).to({dtype})")
    return lines


def render_kernels(plans: list[KernelPlan]) -> tuple[list[str], list[str]]:
    """The lines of the helpers the plans' kernels call, and each plan's
    source. Each kernel is rendered once: the helpers it calls are read off
    its source (a module needs the source anyway), with the helpers those
    call in turn."""
    kernels = [render_kernel(p) for p in plans]
    used = {h for k in kernels for name in helpers_named(k) for h in (name, *HELPER_DEPS[name])}
    lines = [HELPERS[h].strip() for h in HELPERS if h in used]
    if any("_INTERPRETED" in line for line in lines):
        lines.insert(0, "_INTERPRETED = tl.constexpr(triton_runtime.interpreted())")
    if any("libdevice." in line for line in lines):
        lines.insert(0, "from triton.language.extra import libdevice  # noqa: E402")
    return lines, kernels


def launch_config(plan: KernelPlan) -> LaunchConfig:
    """The kernel's kind and configs: the heuristic's list, or the one config
    its `triton_config` attribute pins (which may turn a persistent
    reduction into a looped one, or back, by its RBLOCK)."""
    return _launch_config(_prepared(plan))


def _launch_config(plan: KernelPlan) -> LaunchConfig:
    """launch_config of a plan already split (plan_ranges.py)."""
    config = _candidate_configs(plan)
    if plan.launch is None:
        return config
    xblock, rblock, warps, stages = plan.launch
    kind = config.kind
    if kind in ("persistent", "looped"):
        whole = rblock >= triton_configs.power_of_two(config.rnumel, 2 * config.rnumel)
        kind = "persistent" if whole else "looped"
    if kind in ("pointwise", "tiled"):
        # A pointwise kernel's second block is YBLOCK: a 2-D tile, or 0: none.
        if not rblock:
            return triton_configs.LaunchConfig(
                "pointwise", prod(plan.ranges), None, (triton_configs.Config(xblock, None, warps, stages),)
            )
        tiling = triton_tiling.default(plan)
        pinned = triton_configs.Config(xblock, rblock, warps, stages, second="YBLOCK")
        return triton_configs.LaunchConfig("tiled", tiling.xnumel, tiling.ynumel, (pinned,))
    return replace(config, kind=kind, configs=(triton_configs.Config(xblock, rblock or None, warps, stages),))


def candidate_configs(plan: KernelPlan) -> LaunchConfig:
    """The heuristic's kind and configs: the first is its choice, the rest
    the alternatives the tuner times (triton_tune.py)."""
    return _candidate_configs(_prepared(plan))


def _candidate_configs(plan: KernelPlan) -> LaunchConfig:
    """candidate_configs of a plan already split (plan_ranges.py)."""
    if plan.pieces:
        # One launch per piece, each with its heuristic's config: nothing to time.
        return triton_configs.LaunchConfig(
            "pieces", prod(plan.ranges), None, (triton_configs.Config(0, None, 0, 0),)
        )
    scan = _scan_statement(plan)
    if plan.loops:
        xnumel, rnumel = prod(plan.ranges), prod(plan.reduction)
        if plan.split is not None:
            if not triton_split.splittable(plan):
                raise ValueError(f"kernel {plan.name}: split = {plan.split} on a plan that cannot be split")
            return triton_configs.split(_streamed(plan, xnumel, rnumel), plan.split)
        if not _outer(plan) and triton_configs.persistent_fits(rnumel):
            return triton_configs.persistent(xnumel, rnumel)
        return _streamed(plan, xnumel, rnumel)
    if scan is not None:
        rnumel = plan.ranges[scan.dim]
        return triton_configs.scan(prod(s for k, s in enumerate(plan.ranges) if k != scan.dim), rnumel)
    tiling = triton_tiling.choose(plan)
    if tiling is not None:
        return triton_tiling.launch(tiling)
    return triton_configs.pointwise(prod(plan.ranges))


def _streamed(plan: KernelPlan, xnumel: int, rnumel: int) -> LaunchConfig:
    """The launch of a reduction that loops over its rows: outer or looped."""
    if _outer(plan):
        return triton_configs.outer(xnumel, rnumel)
    return triton_configs.looped(xnumel, rnumel)


def split_count(plan: KernelPlan) -> int | None:
    """The heuristic's chunks per row for a one-pass reduction into few long
    rows (written at the fusion stage as the kernel's `split` attribute,
    codegen/splits.py), or None: not worth splitting, or not splittable."""
    if not plan.loops or plan.launch is not None:
        return None
    plan = split_ranges(plan)
    base = _streamed(plan, prod(plan.ranges), prod(plan.reduction))
    if not (triton_configs.splits(base) and triton_split.splittable(plan)):
        return None
    return triton_configs.split_count(base)


def _outer(plan: KernelPlan) -> bool:
    """Whether a reduction's loads are contiguous along its rows rather than
    along the reduction (a column sum): it then wants wide, short tiles."""
    if not plan.ranges or not plan.reduction:
        return False
    inner_i = index_var(f"i{len(plan.ranges) - 1}")
    inner_r = index_var(f"r{len(plan.reduction) - 1}")
    along_rows = along_reduction = 0
    for loop in plan.loops:
        for stmt in loop.statements:
            if not isinstance(stmt, Load):
                continue
            index = sympy.sympify(stmt.index)
            names = {s.name: s for s in index.free_symbols}
            if inner_r.name not in names:
                continue
            along_reduction += triton_tiling.stride(index, names[inner_r.name]) == 1
            along_rows += inner_i.name in names and triton_tiling.stride(index, names[inner_i.name]) == 1
    return along_rows > along_reduction


def launch_call(plan: KernelPlan, args: list[str], device: str) -> list[str]:
    """The lines of `call` that launch the kernel with its config: the one
    its `triton_config` pins (chosen by timing on the GPU at compile time,
    triton_tune.py), else the heuristic's. A split reduction allocates its
    workspace of partials on `device` and launches two kernels."""
    plan = _prepared(plan)
    if plan.pieces:
        # `args` end with the error slot where the kernel checks indices:
        # a piece that reads through none takes no slot.
        checked = checks_indices(plan)
        return [
            line
            for piece in plan.pieces
            for line in launch_call(
                piece, args if checks_indices(piece) or not checked else args[:-1], device
            )
        ]
    config = _launch_config(plan)
    if config.kind == "split":
        return triton_split.launch_lines(plan, config, args, device)
    chosen, extents, grid = _launch_of(config)
    args = args + [str(n) for n in extents]
    return [f"_launch({plan.name}, {grid}, {launch_args(args)}, {launch_meta(plan, chosen)})"]


def launch_spec(plan: KernelPlan):
    """(config, size arguments, grid) of the kernel's launch as launch_call
    writes it; None for a split reduction (two launches and a workspace) or
    a concatenation in pieces (a launch per piece)."""
    plan = _prepared(plan)
    if plan.pieces:
        return None
    config = _launch_config(plan)
    if config.kind == "split":
        return None
    chosen, extents, grid = _launch_of(config)
    return chosen, extents, (config.programs(chosen),)


def _launch_of(config: LaunchConfig):
    chosen = config.configs[0]
    extents = [config.xnumel] + ([] if config.rnumel is None else [config.rnumel])
    return chosen, extents, config.grid(chosen)
