"""The order a Triton reduction kernel walks its loop variables in, chosen by
the memory transactions of its loads and stores.

A reduction kernel flattens its output variables into `xindex` and its
reduced ones into `rindex`; the last of each varies fastest, so a warp's
lanes walk it. The default orders are the stores' (loop_order.py) and the
plan's logical one. Where the bytes come from a buffer laid out otherwise,
both are strided:

- GroupNorm over a channels-last map: the group's few channels are
  contiguous, the pixels are not; walked pixel-fastest, every lane of a warp
  reads its own 32-byte sector (4 bytes of it), where channel-fastest reads
  them 16 bytes at a time.
- A pool whose result is returned NCHW from a channels-last map: the loads
  (kernel-size times the stores) are contiguous along the channel, the
  stores along the width.

Each candidate order (the default, or one variable moved innermost) is
costed as the 32-byte sectors one warp's 32 consecutive flat indices touch,
summed over the accesses, an access inside the reduction loop counted once
per reduced element. A candidate replaces the default only when it touches
at most GAIN of the default's sectors, so plans whose accesses agree keep
their order (and their code). A persistent kernel walks its rows once, in
one reduced order for all its passes; a looped one walks them once per
pass, each pass in the order of its own accesses. An argmax or argmin
keeps the logical reduced order: its result is the flat `rindex` of the
winner.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import sympy

from ir_text import to_torch

from .kernel_plan import KernelPlan, Load, Loop, Reduce, Store
from .loop_order import storage_order
from .triton_tiling import stride, unclamped

WARP = 32  # lanes that issue one access together
SECTOR = 32  # bytes: the unit DRAM and L2 move
GAIN = 0.75
_FLAT_INDEX_RESULTS = frozenset({"argmax", "argmin"})

Order = list[tuple[str, int]]


@dataclass(frozen=True)
class _Access:
    strides: dict  # variable -> elements per step (None: not linear in it)
    itemsize: int
    weight: int  # executions per output element
    loop: int | None  # the index in plan.steps of the pass it is in, None outside the passes


def reduction_orders(plan: KernelPlan, persistent: bool) -> tuple[Order, dict[int, Order]]:
    """The output variables' order, and each pass's reduced variables'
    order (by its index in plan.steps), each fastest last. A persistent
    kernel's passes share one rindex, so one order, by all their accesses;
    a looped kernel walks its rows once per pass, each pass by its own: a
    statistics pass that only loads (a norm's mean and variance of an NCHW
    map) keeps its loads contiguous even where the pass that stores
    (channels-last) walks the channel fastest."""
    accesses = _accesses(plan)
    outputs = _cheapest(storage_order(plan, [(f"i{k}", s) for k, s in enumerate(plan.ranges)]), accesses)
    passes = [k for k, step in enumerate(plan.steps) if isinstance(step, Loop)]
    if persistent:
        shared = _reduced_order(plan, [a for a in accesses if a.loop is not None])
        return outputs, {k: shared for k in passes}
    return outputs, {k: _reduced_order(plan, [a for a in accesses if a.loop == k]) for k in passes}


def _reduced_order(plan: KernelPlan, accesses: list[_Access]) -> Order:
    reduced = [(f"r{k}", s) for k, s in enumerate(plan.reduction)]
    if any(isinstance(s, Reduce) and s.kind in _FLAT_INDEX_RESULTS for s in plan.statements):
        return reduced
    return _cheapest(reduced, accesses)


def _cheapest(order: Order, accesses: list[_Access]) -> Order:
    """`order`, or the order with one variable moved innermost that touches
    at most GAIN of its sectors."""
    if len(order) < 2 or not accesses:
        return order
    base = _cost(order, accesses)
    best, best_cost = order, base
    for k, (name, size) in enumerate(order[:-1]):
        if size < 2:
            continue
        candidate = order[:k] + order[k + 1 :] + [(name, size)]
        cost = _cost(candidate, accesses)
        if cost < best_cost:
            best, best_cost = candidate, cost
    return best if best_cost <= GAIN * base else order


def _cost(order: Order, accesses: list[_Access]) -> int:
    return sum(a.weight * _sectors(a, order) for a in accesses)


def _sectors(access: _Access, order: Order) -> int:
    """Distinct sectors the first WARP flat indices of `order` touch. A
    variable the index is not linear in (under a clamp, a division) counts
    as far: lanes that differ in it never share a sector."""
    lanes = min(WARP, prod(size for _, size in order))
    touched = set()
    for flat in range(lanes):
        address, far, rest = 0, [], flat
        for name, size in reversed(order):
            value, rest = rest % size, rest // size
            step = access.strides.get(name, 0)
            if step is None:
                far.append(value)
            else:
                address += step * value
        touched.add((tuple(far), address * access.itemsize // SECTOR))
    return len(touched)


def _accesses(plan: KernelPlan) -> list[_Access]:
    dtypes = dict(plan.params)
    reduced = prod(plan.reduction)
    out = []
    for k, step in enumerate(plan.steps):
        in_loop = isinstance(step, Loop)
        for stmt in step.statements if in_loop else [step]:
            if not isinstance(stmt, (Load, Store)):
                continue
            index = sympy.sympify(stmt.index)
            bare = unclamped(index)
            strides = {s.name: stride(bare, s) for s in index.free_symbols}
            buffer = stmt.source if isinstance(stmt, Load) else stmt.target
            itemsize = to_torch(dtypes[buffer]).itemsize
            out.append(_Access(strides, itemsize, reduced if in_loop else 1, k if in_loop else None))
    return out
