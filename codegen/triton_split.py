"""Split reductions, as Inductor's: a one-pass reduction into few long rows (a
full sum of a large tensor, a column sum with a handful of columns) would run
on one program per block of rows and leave most of the GPU idle. Each row is
cut into `count` chunks instead: the kernel's `split = count` attribute,
which the fusion stage writes (codegen/splits.py, with the heuristic's
count, triton_configs.split_count) and a person may edit in a dump; the
code is rendered from it alone (no attribute: not split):

- `{name}_split`, one program per (block of rows, chunk): it runs the pass's
  per-element statements (and the per-row ones they need) over its chunk and
  writes each reduction's partial, in the accumulator's dtype, to a workspace
  of shape [xnumel, count];
- `{name}`, one program per block of rows: it combines the row's partials
  with the reduction's own combine (a sum of partial sums, a NaN-propagating
  max of partial maxima, ...) and runs the rest of the plan, the epilogue (a
  mean's division, the stores).

No atomics: each partial has a slot of its own and the second kernel combines
them in a fixed order, so results are deterministic. Only plans of one pass
whose reductions are sum, prod, max, min, any or all are split: argmax and
argmin would need (value, index) partials, and a later pass of a multi-pass
plan (softmax, var) needs the earlier pass's whole-row result before it
starts; so the fusion pass keeps a few-long-row reduction's kernel one pass
(scheduler/split.py, `rule` below gives it the thresholds). Scans and
kernels whose `triton_config` is pinned are never split.
"""

from __future__ import annotations

from dataclasses import replace

from ir_text import to_torch
from scheduler import SplitRule

from . import triton_body as body
from . import triton_passes as passes
from .kernel_plan import KernelPlan, Loop, Reduce, Store, uses
from . import triton_configs
from .triton_configs import LaunchConfig

# Reductions whose partials combine by the reduction itself.
SPLITTABLE = frozenset({"sum", "prod", "max", "min", "any", "all"})


def rule() -> SplitRule:
    """The scheduler's view of which reductions this backend splits (the
    thresholds read when asked, so that tests may shrink them)."""
    return SplitRule(
        triton_configs.SPLIT_MAX_ROWS,
        triton_configs.SPLIT_MIN_RNUMEL,
        SPLITTABLE,
        triton_configs.SPLIT_MAX_COUNT,
        triton_configs.OUTER_XBLOCK,
        triton_configs.SPLIT_MAX_PROGRAMS,
    )


def splittable(plan: KernelPlan) -> bool:
    """Whether the plan's shape allows a split (triton_configs.splits says
    whether its sizes are worth one)."""
    if plan.launch is not None or plan.nests or len(plan.loops) != 1:
        return False
    reduces = _reduces(plan.loops[0])
    return bool(reduces) and all(passes.accumulator(r)[0] in SPLITTABLE for r in reduces)


def _reduces(pass_: Loop) -> list[Reduce]:
    return [s for s in pass_.statements if isinstance(s, Reduce)]


def _workspace(plan: KernelPlan, reduce: Reduce) -> str:
    """The name `call` gives a reduction's partials: identifiers of IR values
    never start with "_" (kernel_plan.identifier), so it cannot shadow one."""
    return f"_{plan.name}_{reduce.var}"


def render(plan: KernelPlan, config: LaunchConfig) -> str:
    return "\n".join(_partials_kernel(plan, config)) + "\n\n\n" + "\n".join(_combine_kernel(plan, config))


def _tiles(plan: KernelPlan):
    """(outputs, reduced, loop tile, column tile), as a looped reduction's."""
    outputs = [(f"i{k}", s) for k, s in enumerate(plan.ranges)]
    reduced = [(f"r{k}", s) for k, s in enumerate(plan.reduction)]
    loop = body.Tile("[XBLOCK, RBLOCK]", "mask", (body.names(outputs), body.names(reduced)))
    column = body.Tile("[XBLOCK, 1]", "xmask", (body.names(outputs),))
    return outputs, reduced, loop, column


def _partials_kernel(plan: KernelPlan, config: LaunchConfig) -> list[str]:
    split = config.split
    kernel = body.Kernel(replace(plan, name=f"{plan.name}_split"), config)
    kernel.chunked = True
    # Chunks are whole multiples of RBLOCK: when they tile the row, so do the blocks.
    kernel.full_r = config.rnumel % split.chunk == 0
    if max(config.rnumel + split.chunk, split.count * split.chunk) + body.BLOCK_OVERRUN >= 2**31:
        # The last chunk's masked lanes run up to a chunk past the row (an
        # edited count may leave whole chunks past it).
        kernel.index_type = "tl.int64"
    outputs, reduced, loop, column = _tiles(plan)
    at = next(k for k, step in enumerate(plan.steps) if isinstance(step, Loop))
    pass_ = plan.steps[at]
    partials = [f"partials_{r.var}" for r in _reduces(pass_)]
    lines = kernel.header(partials + ["xnumel", "rnumel", "rchunk"], ["XBLOCK", "RBLOCK"])
    lines += kernel.xindex("[:, None]")
    lines += body.unflatten("xindex", outputs, "    ")
    chunk_id = "tl.program_id(1)" if kernel.index_type == "tl.int32" else "tl.program_id(1).to(tl.int64)"
    lines.append(f"    rstart = {chunk_id} * rchunk")
    lines += ["    " + kernel.statement(s, column) for s in _needed(plan.steps[:at], pass_.statements)]
    lines += passes.reduction_pass(kernel, pass_, loop, reduced, None, [])
    for reduce, partial in zip(_reduces(pass_), partials):
        slot = "xindex * tl.num_programs(1) + tl.program_id(1)"
        lines.append(f"    tl.store({partial} + {slot}, {reduce.var}, xmask)")
    return lines


def _needed(steps, statements) -> list:
    """The per-row steps among `steps` that `statements` use, directly or not.
    Stores wait for the second kernel, which runs every per-row step once."""
    wanted = {u for s in statements for u in uses(s)}
    needed = []
    for step in reversed(steps):
        if not isinstance(step, Store) and step.var in wanted:
            needed.append(step)
            wanted.update(uses(step))
    return needed[::-1]


def _combine_kernel(plan: KernelPlan, config: LaunchConfig) -> list[str]:
    """The partials of XBLOCK rows in one [XBLOCK, RBLOCK] tile (`rnumel` is
    here the number of partials per row), then the plan's per-row steps."""
    split = config.split
    kernel = body.Kernel(plan, config)
    kernel.full_x = config.xnumel % split.combine.xblock == 0
    kernel.full_r = split.count % split.combine.rblock == 0
    outputs, _, _, column = _tiles(plan)
    pass_ = plan.loops[0]
    partials = [f"partials_{r.var}" for r in _reduces(pass_)]
    lines = kernel.header(partials + ["xnumel", "rnumel"], ["XBLOCK", "RBLOCK"]) + kernel.xindex("[:, None]")
    lines += body.unflatten("xindex", outputs, "    ")
    lines += kernel.rindex("    ", "")
    for step in plan.steps:
        if isinstance(step, Loop):
            lines += _combine_partials(_reduces(step))
        else:
            lines.append("    " + kernel.statement(step, column))
    return lines


def _combine_partials(reduces: list[Reduce]) -> list[str]:
    lines = []
    for reduce in reduces:
        kind, acc_dtype, _ = passes.accumulator(reduce)
        acc = f"acc_{reduce.var}"
        identity = body.full("[XBLOCK, RBLOCK]", passes.identity(kind, acc_dtype), acc_dtype)
        load = f"tl.load(partials_{reduce.var} + xindex * rnumel + rindex, mask, other=0)"
        lines.append(f"    {acc} = tl.where(mask, {load}, {identity})")
        combined = passes.COMBINE_LANES[kind].format(acc=acc)
        lines.append(f"    {reduce.var} = {combined}[:, None].to({body.TL_TYPES[reduce.dtype]})")
    return lines


def launch_lines(plan: KernelPlan, config: LaunchConfig, args: list[str], device: str) -> list[str]:
    """Allocate the workspace of partials, launch both kernels, free it."""
    split, first, combine = config.split, config.configs[0], config.split.combine
    reduces = _reduces(plan.loops[0])
    workspaces = [_workspace(plan, r) for r in reduces]
    lines = [
        f"{name} = torch.empty(({config.xnumel}, {split.count}), "
        f'dtype={to_torch(passes.accumulator(r)[1])}, device="{device}")'
        for name, r in zip(workspaces, reduces)
    ]
    args = args + workspaces
    sizes = [str(config.xnumel), str(config.rnumel), str(split.chunk)]
    grid = f"({-(-config.xnumel // first.xblock)}, {split.count})"
    lines.append(
        f"_launch({plan.name}_split, {grid}, {body.launch_args(args + sizes)}, {body.launch_meta(plan, first)})"
    )
    sizes = [str(config.xnumel), str(split.count)]
    grid = f"({-(-config.xnumel // combine.xblock)},)"
    lines.append(
        f"_launch({plan.name}, {grid}, {body.launch_args(args + sizes)}, {body.launch_meta(plan, combine)})"
    )
    return lines + [f"del {', '.join(workspaces)}"]
