"""One pass of a Triton reduction kernel over a row, shared by the reduction
shapes (triton.py) and split reductions (triton_split.py): the per-lane
accumulators, the loop of RBLOCK chunks (or the whole row of a persistent
kernel, its values computed once), and the combination of a row's lanes."""

from __future__ import annotations

from dataclasses import replace

import sympy
import torch

from ir_text import to_torch

from . import triton_online
from .kernel_plan import Compute, Load, Loop, Reduce, Store
from .triton_body import NAN, TL_TYPES, Kernel, Tile, full, unflatten

# Per-lane accumulation of a reduction and the combination of a row's lanes
# after the loop; {acc} is the lane accumulator, {v} this chunk's value.
ACCUMULATE = {
    "sum": "{acc} + {v}",
    "prod": "{acc} * {v}",
    "max": "tl.maximum({acc}, {v}, propagate_nan=" + NAN + ")",
    "min": "tl.minimum({acc}, {v}, propagate_nan=" + NAN + ")",
    "any": "{acc} | ({v} != 0)",
    "all": "{acc} & ({v} != 0)",
}
# argmax/argmin: a strictly better value (or a first NaN) replaces the lane's
# pair; lanes see their indices in increasing order, so a tie keeps the first.
BETTER = {
    "argmax": "({v} > {acc}) | (({v} != {v}) & ({acc} == {acc}))",
    "argmin": "({v} < {acc}) | (({v} != {v}) & ({acc} == {acc}))",
}
COMBINE_LANES = {
    "sum": "tl.sum({acc}, 1)",
    "prod": "tl.reduce({acc}, 1, _mul)",
    "max": "_max_rows({acc})",
    "min": "_min_rows({acc})",
    "any": "(tl.max({acc}.to(tl.int8), 1) != 0)",
    "all": "(tl.min({acc}.to(tl.int8), 1) != 0)",
    "argmax": "_argmax_rows({acc}, {acc}_index)",
    "argmin": "_argmin_rows({acc}, {acc}_index)",
}


def identity(kind: str, dtype: str):
    """The value a lane (or a scan's carry) starts from, which masked lanes keep."""
    if kind in ("sum", "any"):
        return 0
    if kind in ("prod", "all"):
        return 1
    largest = kind in ("min", "argmin")
    if dtype in ("f16", "bf16", "f32", "f64"):
        return float("inf") if largest else float("-inf")
    info = torch.iinfo(to_torch(dtype))
    return info.max if largest else info.min


class Values:
    """The values of a persistent kernel: each pass of a plan recomputes the
    per-element values it needs (as looped reductions must); with the row in
    registers each is computed once, and equal loads and computations (a
    program that reads one input twice) share one variable."""

    def __init__(self, aliased: frozenset[str]):
        self.aliased = aliased
        self.defined: set[str] = set()
        self.alias: dict[str, str] = {}
        self.seen: dict[tuple, str] = {}

    def rename(self, stmt):
        """`stmt` over the variables already computed, or None when its value
        already has one."""
        if isinstance(stmt, Store):
            return replace(stmt, var=self.alias.get(stmt.var, stmt.var))
        if isinstance(stmt, Reduce):
            return replace(stmt, arg=self.alias.get(stmt.arg, stmt.arg))
        if stmt.var in self.defined:
            return None
        self.defined.add(stmt.var)
        key = None
        if isinstance(stmt, Load):
            indirect = any(s.name.startswith("ind") for s in sympy.sympify(stmt.index).free_symbols)
            if stmt.source not in self.aliased and not indirect:
                key = ("load", stmt.source, str(stmt.index), stmt.dtype)
        elif isinstance(stmt, Compute):
            stmt = replace(stmt, args=tuple(self.alias.get(a, a) for a in stmt.args))
            # Indirect indices are named in index expressions: never renamed.
            if stmt.op != "indirect":
                key = (stmt.op, stmt.args, repr(stmt.attrs), stmt.dtype)
        if key is not None and key in self.seen:
            self.alias[stmt.var] = self.seen[key]
            return None
        if key is not None:
            self.seen[key] = stmt.var
        return stmt


def reduction_pass(kernel: Kernel, pass_: Loop, loop: Tile, reduced, values, folded) -> list[str]:
    """One pass over a row: a loop of RBLOCK chunks, or (persistent, `values`
    given) the whole row at once; `folded`: online sums (triton_online.py)."""
    pad = "    " if values else "        "
    if values:
        pass_ = Loop(tuple(s for s in map(values.rename, pass_.statements) if s is not None))
    reduces = [(s, *accumulator(s)) for s in pass_.statements if isinstance(s, Reduce)]
    lines = []
    for reduce, kind, acc_dtype, _ in reduces:
        acc = f"acc_{reduce.var}"
        lines.append(f"    {acc} = {full(loop.shape, identity(kind, acc_dtype), acc_dtype)}")
        if kind in BETTER:
            # Index 0 with the identity is right when no lane finds better: then
            # every element is the identity (or there are none), and the first is 0.
            lines.append(f"    {acc}_index = tl.zeros({loop.shape}, tl.int64)")
    lines += triton_online.init_lines(folded, full)
    online = {id(f.peak): f for f in folded}
    if not values:
        extent, start = ("rchunk", "rstart + roffset + ") if kernel.chunked else ("rnumel", "roffset + ")
        lines.append(f"    for roffset in range(0, {extent}, RBLOCK):")
        lines += kernel.rindex("        ", start)
        lines += unflatten("rindex", reduced, "        ")
    by_stmt = {id(r): (kind, value) for r, kind, _, value in reduces}
    for stmt in pass_.statements:
        if not isinstance(stmt, Reduce):
            lines.append(pad + kernel.statement(stmt, loop))
            continue
        kind, value = by_stmt[id(stmt)]
        acc = f"acc_{stmt.var}"
        if id(stmt) in online:
            lines += triton_online.update_lines([online[id(stmt)]], pad, NAN)
        elif kind in BETTER:
            lines += [
                f"{pad}take = mask & ({BETTER[kind].format(acc=acc, v=value)})",
                f"{pad}{acc}_index = tl.where(take, rindex, {acc}_index)",
                f"{pad}{acc} = tl.where(take, {value}, {acc})",
            ]
        else:
            lines.append(f"{pad}{acc} = tl.where(mask, {ACCUMULATE[kind].format(acc=acc, v=value)}, {acc})")
    for reduce, kind, acc_dtype, _ in reduces:
        lanes = COMBINE_LANES[kind].format(acc=f"acc_{reduce.var}")
        dtype = acc_dtype if kernel.chunked else reduce.dtype
        lines.append(f"    {reduce.var} = {lanes}[:, None].to({TL_TYPES[dtype]})")
    return lines + triton_online.combine_lines(folded, TL_TYPES.get)


def accumulator(reduce: Reduce) -> tuple[str, str, str]:
    """(kind, accumulator dtype, accumulated value) of a reduction."""
    kind, acc_dtype, value = reduce.kind, reduce.arg_dtype, reduce.arg
    if acc_dtype == "b8":
        # On booleans max and min are any and all; arg-reductions compare int8.
        kind = {"max": "any", "min": "all"}.get(kind, kind)
        if kind in BETTER:
            acc_dtype, value = "i8", f"{value}.to(tl.int8)"
    return kind, acc_dtype, value
