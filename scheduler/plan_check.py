"""The check of a fusion plan read from a dump: a person may merge, split or
reorder kernels; every rule the fusion pass obeys is checked again here,
by the same function (`legality.kernel_reason`)."""

from __future__ import annotations

from ir_text import error_at, format_attrs, value_names

from .fusion import kernel_attrs
from .legality import Graph, kernel_reason, nests_reason
from .split import attribute_reason
from .target import Target

# Kernel attributes a person (or the Triton tuner, or the split choice) may
# set; the others are derived facts, which must match the kernel's nodes.
SETTABLE = ("split", "triton_config")


def check_plan(module, options, target: Target) -> None:
    """Check a fusion plan for the backend `target` describes (target.py)."""
    split = target.split_rule()
    graph = Graph(module)
    names = value_names(module)
    owner: dict[int, object] = {}
    for kernel in module.kernels:
        if not kernel.nodes:
            raise error_at(kernel.pos, f"[empty-kernel] kernel @{kernel.name.name} holds no nodes")
        for v in kernel.nodes:
            k = graph.index.get(id(v))
            if k is None:
                raise error_at(kernel.pos, f"[not-a-node] {names[id(v)]} is an input, not a loop node")
            if k in owner:
                raise error_at(
                    kernel.pos,
                    f"[one-kernel-per-node] {names[id(v)]} is in @{owner[k].name.name} and @{kernel.name.name}",
                )
            owner[k] = kernel
    for k, node in enumerate(graph.nodes):
        if k not in owner:
            raise error_at(node.pos, f"[one-kernel-per-node] {names[id(node.result)]} is in no kernel")
    done: set[int] = set()
    for kernel in module.kernels:
        _check_kernel(graph, kernel, owner, done, names, options, target)
        _check_split(graph, kernel, names, target, split)
        done.update(graph.index[id(v)] for v in kernel.nodes)
    nest_of = {
        id(v): (kernel.name.name, j)
        for kernel in module.kernels
        for j, nest in enumerate(kernel.loop_nests())
        for v in nest
    }
    for r in module.refusals or ():
        a, b = nest_of.get(id(r.first)), nest_of.get(id(r.second))
        if a is not None and a == b:
            raise error_at(
                r.pos,
                f"[stale-refusal] {names[id(r.first)]} and {names[id(r.second)]} are fused in @{a[0]}; "
                "drop the refused line",
            )


def _check_kernel(graph, kernel, owner, done, names, options, target: Target) -> None:
    nests = [[graph.index[id(v)] for v in nest] for nest in kernel.loop_nests()]
    members = [k for nest in nests for k in nest]
    label = f"@{kernel.name.name}"
    if any(nest != sorted(nest) for nest in nests):
        raise error_at(
            kernel.pos, f"[program-order] {label} must list the nodes of each loop nest in program order"
        )
    if len(members) > options.max_fusion_size:
        raise error_at(
            kernel.pos,
            f"[max-fusion-size] {label} holds {len(members)} nodes, more than {options.max_fusion_size}",
        )
    for k in members:
        for p in graph.preds[k]:
            if p not in members and p not in done:
                raise error_at(
                    kernel.pos,
                    f"[kernel-order] {label} reads {names[id(graph.nodes[p].result)]}, "
                    f"which @{owner[p].name.name} computes later",
                )
    for nest in nests:
        reason = kernel_reason(graph, nest, names)
        if reason:
            raise error_at(kernel.pos, f"{label}: {reason}")
    reason = nests_reason(graph, nests, target, names)
    if reason:
        raise error_at(kernel.pos, f"{label}: {reason}")
    want = kernel_attrs([graph.nodes[k] for k in nests[0]])
    derived = {key: value for key, value in kernel.attrs if key not in SETTABLE}
    if derived != dict(want):
        raise error_at(kernel.pos, f"[stale-fact] {label}: attributes should be {format_attrs(want)}")
    pinned = dict(kernel.attrs).get("triton_config")
    if pinned is not None:
        reason = _launch_reason(pinned, [graph.nodes[k] for k in members], target)
        if reason:
            raise error_at(kernel.pos, f"[triton-config] {label}: {reason}")


def _check_split(graph, kernel, names, target: Target, split) -> None:
    attrs = dict(kernel.attrs)
    if "split" not in attrs:
        return
    nodes = [graph.nodes[graph.index[id(v)]] for v in kernel.nodes]
    if len(kernel.loop_nests()) > 1:
        reason = "a kernel of several loop nests is never split"
    else:
        pinned = attrs.get("triton_config")
        reason = attribute_reason(attrs["split"], nodes, names, split, target.name, pinned)
    if reason:
        raise error_at(kernel.pos, f"[split] @{kernel.name.name}: {reason}")


def _launch_reason(value, nodes, target: Target) -> str | None:
    """Why a `triton_config = [XBLOCK, RBLOCK, num_warps, num_stages]` cannot
    launch the kernel, or None. A kernel that neither reduces nor scans reads
    the second block as YBLOCK: a 2-D tile, or 0 for a 1-D block. Triton
    wants power-of-two blocks of at most 2**20 elements."""
    if not target.launch_configs:
        return f"a launch config on the {target.name} backend, whose kernels take none"
    if not (isinstance(value, tuple) and len(value) == 4 and all(type(v) is int for v in value)):
        return "expected four integers [XBLOCK, RBLOCK, num_warps, num_stages]"
    xblock, rblock, warps, stages = value
    loops_r = any(node.kind in ("reduction", "scan") for node in nodes)
    if not _power_of_two(xblock):
        return f"XBLOCK {xblock} is not a power of two"
    if loops_r and not _power_of_two(rblock):
        return f"RBLOCK {rblock} is not a power of two (the kernel reduces or scans)"
    if not loops_r and rblock != 0 and not _power_of_two(rblock):
        return f"YBLOCK {rblock} is neither 0 (a 1-D block) nor a power of two (a 2-D tile of a pointwise kernel)"
    if warps not in (1, 2, 4, 8, 16, 32):
        return f"num_warps {warps} is not one of 1, 2, 4, 8, 16, 32"
    if not 1 <= stages <= 8:
        return f"num_stages {stages} is not between 1 and 8"
    if xblock * max(rblock, 1) > 2**20:
        return f"a block of {xblock * max(rblock, 1)} elements is more than Triton's 2**20"
    return None


def _power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0
