"""Online softmax for looped reductions: a pass that sums exp(a - max(a)) after
a pass that takes max(a) is folded into the max pass, so a row too long for
registers is read once for both (as in Milakov and Gimelshein, "Online
normalizer calculation for softmax", and Inductor's online softmax).

Each lane keeps its running maximum m and the sum s of exp(a - m); when m
grows, s is rescaled by exp(m_old - m_new). After the loop the lanes combine
as sum(s * exp(m - M)) with M the row's maximum. exp(x - m) is taken as 0
where m is -inf (then x is -inf too), so empty and all -inf lanes add nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kernel_plan import Compute, KernelPlan, Load, Loop, Reduce, Store

# exp(x - m), 0 where m is -inf.
_EXP_DIFF = 'tl.where({m} == float("-inf"), 0.0, tl.exp({x} - {m}))'


@dataclass(frozen=True)
class OnlineSum:
    """The sum `total` of a later pass, folded into the pass of `peak`, the max
    of the same per-element value `value` (a var of the max's pass)."""

    peak: Reduce
    total: Reduce
    value: str


def online_sums(plan: KernelPlan) -> tuple[dict[int, list[OnlineSum]], set[int]]:
    """Per loop index, the sums folded into it; and the indices of the loops
    that are then left with nothing to do."""
    canon = _canonical(plan)
    loops = [k for k, step in enumerate(plan.steps) if isinstance(step, Loop)]
    folded: dict[int, list[OnlineSum]] = {}
    emptied: set[int] = set()
    for n, p in enumerate(loops):
        maxima = [s for s in plan.steps[p].statements if isinstance(s, Reduce) and s.kind == "max"]
        for peak in maxima:
            if not peak.arg_dtype.startswith(("f", "bf")) or peak.arg_dtype != peak.dtype:
                continue
            for q in loops[n + 1 :]:
                if q in emptied:
                    continue
                total = _folded_sum(plan.steps[q], plan.steps[p], peak, canon)
                if total is not None:
                    folded.setdefault(p, []).append(OnlineSum(peak, total, peak.arg))
                    emptied.add(q)
                    break
    return folded, emptied


def _folded_sum(later: Loop, earlier: Loop, peak: Reduce, canon) -> Reduce | None:
    """The sum of `later` if that loop does nothing but sum exp(a - peak), with
    every other value it computes also computed in `earlier`."""
    reduces = [s for s in later.statements if isinstance(s, Reduce)]
    if len(reduces) != 1 or reduces[0].kind != "sum" or any(isinstance(s, Store) for s in later.statements):
        return None
    total = reduces[0]
    defs = {s.var: s for s in later.statements if isinstance(s, (Load, Compute))}
    exp = defs.get(total.arg)
    if not (isinstance(exp, Compute) and exp.op == "exp" and exp.dtype == total.arg_dtype):
        return None
    sub = defs.get(exp.args[0])
    if not (isinstance(sub, Compute) and sub.op == "sub" and sub.args[1] == peak.var):
        return None
    if canon.get(sub.args[0]) != canon.get(peak.arg) or total.arg_dtype != peak.dtype:
        return None
    known = {canon.get(s.var) for s in earlier.statements if isinstance(s, (Load, Compute))}
    for s in defs.values():
        if s is not exp and s is not sub and canon.get(s.var) not in known:
            return None
    return total


def _canonical(plan: KernelPlan) -> dict[str, object]:
    """A structural key per value: equal keys, equal values (same loads, same ops)."""
    canon: dict[str, object] = {}
    for s in plan.statements:
        if isinstance(s, Load):
            canon[s.var] = ("load", s.source, str(s.index), s.dtype)
        elif isinstance(s, Compute) and s.op != "indirect":
            canon[s.var] = (s.op, tuple(canon.get(a, a) for a in s.args), repr(s.attrs), s.dtype)
    return canon


def init_lines(folded: list[OnlineSum], full) -> list[str]:
    return [f"    acc_{f.total.var} = {full('[XBLOCK, RBLOCK]', 0, f.total.arg_dtype)}" for f in folded]


def update_lines(folded: list[OnlineSum], pad: str, nan: str) -> list[str]:
    """In the loop, in place of the max's own accumulation. One exp per
    element: with e = exp(-|a - m|), a new maximum a rescales s to s * e + 1,
    and any other a adds e. Lanes whose maximum is still -inf keep s = 0; a
    +inf maximum makes its lane's s NaN when combined (as exp(inf - inf) is)."""
    lines = []
    for f in folded:
        m, s = f"acc_{f.peak.var}", f"acc_{f.total.var}"
        new, e = f"{m}_new", f"{s}_exp"
        lines += [
            f"{pad}{new} = tl.where(mask, tl.maximum({m}, {f.value}, propagate_nan={nan}), {m})",
            f"{pad}{e} = tl.exp(-tl.abs({f.value} - {m}))",
            f'{pad}{s} = tl.where(mask & ({new} != float("-inf")), '
            f"tl.where({f.value} > {m}, {s} * {e} + 1.0, {s} + {e}), {s})",
            f"{pad}{m} = {new}",
        ]
    return lines


def combine_lines(folded: list[OnlineSum], tl_type) -> list[str]:
    """After the loop, once the maxima are combined."""
    lines = []
    for f in folded:
        m, s = f"acc_{f.peak.var}", f"acc_{f.total.var}"
        scaled = f"{s} * {_EXP_DIFF.format(x=m, m=f.peak.var)}"
        lines.append(f"    {f.total.var} = tl.sum({scaled}, 1)[:, None].to({tl_type(f.total.dtype)})")
    return lines
