"""The layout decision: whether a graph's convolutions run channels-last.

As Inductor's graph lowering (`decide_layout_opt`), the decision is made
once per graph, before any buffer exists. With it, the input of every
convolution is a channels-last buffer (a copy at the graph's edge when the
user's tensor is NCHW), the convolution's result keeps the library's
channels-last strides, and every loop node computed from a channels-last
tensor of its rank is laid out the same way, so that the epilogues (bias,
norm, activation, residual adds, pools) read and write contiguously. What
the program returns is in the user's layout again: the last loop node
before a return writes it directly, an extern result is copied.

The decision and its reason are printed in the lower dump (`layout ...`)
of a graph with a convolution; the strides of every buffer show what it
did. `--option layout=keep`
turns it off, `layout=channels-last` forces it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir_text import GraphOp, Module, Value, contiguous_strides

CONVOLUTION = "aten.convolution.default"

# Channels-last time over NCHW time of a convolution on the GPU (cuDNN), by
# rank, kind and whether its data is 16-bit: the convolutions run on
# inputs and weights already in the layout, so cuDNN's own conversions are
# in the time (bench/conv_layouts.py; docs/design-notes.md, "Lowering").
# A grouped convolution with several input channels per group can be much
# slower channels-last (Inductor skips the layout for such shapes); dense
# and depthwise 2-D ones are faster. In 3-D, fp32 dense convolutions gain
# only with 3x3x3 kernels (1x3x3 and 3x1x1 ones ran 1.2x slower), bf16 ones
# gain, and depthwise ones run 5-14x slower: Inductor keeps every 3-D
# convolution NCDHW.
_GPU_RATIO = {  # (rank, kind): (ratio with 32-bit data, with 16-bit data)
    (4, "dense"): (0.75, 0.75),
    (4, "depthwise"): (0.85, 0.85),
    (4, "grouped"): (1.5, 1.5),
    (5, "dense"): (1.05, 0.65),
    (5, "depthwise"): (10.0, 5.0),
    (5, "grouped"): (1.5, 1.5),
}
_SIXTEEN_BIT = frozenset({"f16", "bf16"})


@dataclass(frozen=True)
class LayoutPlan:
    channels_last: bool
    reason: str


KEEP = LayoutPlan(False, "")


def decide_layout(module: Module, mode: str, device: str, backend_gains: bool) -> LayoutPlan:
    """Whether the module's convolutions run channels-last, and why;
    `backend_gains`: whether the backend's kernels gain from it where the
    convolutions do (its target's `channels_last`)."""
    convs = [op for op in module.graph if op.target == CONVOLUTION and _rank(op) in (4, 5)]
    if not convs:
        return KEEP  # nothing to decide: the dump prints no decision
    if mode == "keep":
        return LayoutPlan(False, "option layout=keep")
    if mode == "channels-last":
        return LayoutPlan(True, "option layout=channels-last")
    if device == "cpu":
        return _cpu_decision(convs)
    if not backend_gains:
        return LayoutPlan(False, f"{len(convs)} convolution(s), for a backend whose kernels run NCHW faster")
    flops: dict[str, int] = {}
    weighted = 0.0
    for op in convs:
        rank, kind = _rank(op), _kind(op)
        label = kind if rank == 4 else f"3-D {kind}"
        flops[label] = flops.get(label, 0) + _flops(op)
        weighted += _flops(op) * _GPU_RATIO[rank, kind][op.args[0].type.dtype in _SIXTEEN_BIT]
    total = sum(flops.values())
    shares = ", ".join(f"{k} {100 * n / max(total, 1):.0f}%" for k, n in sorted(flops.items()))
    if weighted > total:
        return LayoutPlan(False, f"convolutions slower channels-last carry the flops ({shares})")
    return LayoutPlan(True, f"{len(convs)} convolution(s), faster channels-last ({shares} of the flops)")


def convolved_inputs(module: Module) -> frozenset[int]:
    """The ids of the inputs, of a convolution's rank, from which a
    convolution's data is computed. With the decision on, the loop nodes
    computed from one are laid out channels-last, as from a channels-last
    tensor: the program converts at its edge, where it first reads the
    input, and not where the stream meets a convolution. A residual stream
    whose first ops are not a convolution (PoolFormer's: norm, pool, add)
    otherwise stays NCHW until its first residual add with a channels-last
    branch, and every kernel that mixes the two reads one of them across
    the channels (PoolFormer's statistics took 4x Inductor's time)."""
    made_by = {id(r): op for op in module.graph for r in op.results}
    ranks = {_rank(op) for op in module.graph if op.target == CONVOLUTION}
    pending = [
        op.args[0] for op in module.graph if op.target == CONVOLUTION and isinstance(op.args[0], Value)
    ]
    seen: set[int] = set()
    while pending:
        v = pending.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        op = made_by.get(id(v))
        if op is not None:
            pending.extend(_values(op.args))
    return frozenset(
        id(i.value) for i in module.inputs if id(i.value) in seen and len(i.value.type.shape) in ranks
    )


def _values(args):
    """The Values among (nested) arguments."""
    for a in args:
        if isinstance(a, Value):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from _values(a)


def _cpu_decision(convs: list) -> LayoutPlan:
    """oneDNN runs most convolutions faster in NHWC, and Inductor's CPU
    backend always takes it; but with tirc's C++ kernels over the maps,
    channels-last makes some programs faster and others slower, and no rule
    by convolution kind separates them (measured: docs/design-notes.md,
    "Lowering"). NCHW, then; `layout=channels-last` forces it."""
    return LayoutPlan(False, f"{len(convs)} convolution(s) on the CPU, where tirc's kernels run NCHW faster")


def _rank(op: GraphOp) -> int:
    return len(op.args[0].type.shape) if op.args and isinstance(op.args[0], Value) else 0


def _kind(op: GraphOp) -> str:
    """dense, depthwise (one input channel per group) or grouped."""
    groups = op.args[8] if len(op.args) > 8 and isinstance(op.args[8], int) else 1
    transposed = len(op.args) > 6 and op.args[6] is True
    weight = op.args[1].type.shape
    per_group = weight[0] // max(groups, 1) if transposed else weight[1]
    if groups == 1:
        return "dense"
    return "depthwise" if per_group == 1 else "grouped"


def _flops(op: GraphOp) -> int:
    """Multiply-adds: the output's elements times the weight's per output element."""
    out = op.results[0].type.shape
    weight = op.args[1].type.shape
    n = 1
    for s in out:
        n *= int(s)
    per = 1
    for s in weight[1:]:
        per *= int(s)
    return n * per


def channels_last_strides(shape) -> tuple[int, ...]:
    """NHWC (NDHWC) strides of an NCHW (NCDHW) shape: the channel innermost."""
    shape = tuple(int(s) for s in shape)
    order = [1] + list(range(len(shape) - 1, 1, -1)) + [0]  # innermost first
    strides = [0] * len(shape)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def is_channels_last(shape, strides) -> bool:
    """Whether a layout is channels-last and not also plain contiguous."""
    shape, strides = tuple(shape), tuple(strides)
    return (
        len(shape) in (4, 5)
        and strides == channels_last_strides(shape)
        and strides != contiguous_strides(shape)
    )


def in_channels_last_order(shape, strides) -> bool:
    """Whether a (possibly sliced, not dense) layout orders its dimensions
    as channels-last does: the channel innermost, then W, H (D), N, by
    increasing stride; dimensions of size 1 do not count. A channel slice
    of an NHWC map is, as eager's TensorIterator sees it."""
    rank = len(shape)
    if rank not in (4, 5):
        return False
    order = [1] + list(range(rank - 1, 1, -1)) + [0]  # innermost first
    kept = [strides[d] for d in order if shape[d] != 1]
    return all(0 < a < b for a, b in zip(kept, kept[1:])) and tuple(strides) != contiguous_strides(shape)
