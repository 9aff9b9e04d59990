"""The fusion pass: greedy fusion of nodes that share a buffer (vertical:
producer and consumer, pointwise into and after reductions; horizontal: two
readers of one buffer), scored as Inductor scores fusions (bytes of shared
memory traffic first, then proximity), in rounds until nothing changes.
Every considered pair that was not fused is recorded with its reason.
`fusion_bisect_limit=N` applies only the first N fusions, to find the one
that breaks a program."""

from __future__ import annotations

import dataclasses

from ir_text import Kernel, Module, Refusal, Symbol, to_torch, value_names

from .deps import node_reads
from .iteration import kernel_group
from .legality import Graph, refusal_reason

MAX_ROUNDS = 10
# Horizontal pairs (no producer between them) further apart than this in
# program order are not fused: holding both live would raise peak memory
# (as Inductor's max_fusion_distance guard).
MAX_HORIZONTAL_DISTANCE = 64


def _candidates(graph: Graph) -> list[tuple[tuple, int, int]]:
    """(score, first, second) for each pair of nodes that shares a buffer,
    best first: as Inductor's score_fusion, bytes of memory traffic the
    fusion saves, then proximity in program order. A producer and its
    consumer share the buffer between them; two readers of one buffer (a
    horizontal pair) share the buffer they both read."""
    shared: dict[tuple[int, int], int] = {}
    vertical: set[tuple[int, int]] = set()
    readers: dict[int, list[int]] = {}
    for c, node in enumerate(graph.nodes):
        for dep in node_reads(node):
            nbytes = dep.buffer.type.numel * to_torch(dep.buffer.type.dtype).itemsize
            p = graph.index.get(id(dep.buffer))
            if p is not None:
                shared[(p, c)] = shared.get((p, c), 0) + nbytes
                vertical.add((p, c))
            others = readers.setdefault(id(dep.buffer), [])
            for a in others:
                if a != c and c - a <= MAX_HORIZONTAL_DISTANCE:
                    shared[(a, c)] = shared.get((a, c), 0) + nbytes
            if c not in others:
                others.append(c)
    scored = [((nbytes, -(c - p)), p, c) for (p, c), nbytes in shared.items()]
    return sorted(scored, key=lambda t: (-t[0][0], -t[0][1], t[1], t[2]))


def plan_groups(module: Module, options) -> tuple[list[list[int]], dict[tuple[int, int], str]]:
    graph = Graph(module)
    names = value_names(module)
    group_of = list(range(len(graph.nodes)))
    members: dict[int, list[int]] = {k: [k] for k in range(len(graph.nodes))}
    refused: dict[tuple[int, int], str] = {}
    fusions = 0
    candidates = _candidates(graph)
    for _ in range(MAX_ROUNDS):
        changed = False
        for _, p, c in candidates:
            a, b = group_of[p], group_of[c]
            if a == b:
                continue
            if options.fusion_bisect_limit >= 0 and fusions >= options.fusion_bisect_limit:
                refused[(p, c)] = (
                    f"[bisect-limit] fusion_bisect_limit={options.fusion_bisect_limit} fusions applied"
                )
                continue
            reason = refusal_reason(graph, members[a], members[b], options, names)
            if reason is not None:
                refused[(p, c)] = reason
                continue
            merged = sorted(members[a] + members[b])
            for k in merged:
                group_of[k] = a
            members[a] = merged
            del members[b]
            fusions += 1
            changed = True
        if not changed:
            break
    groups = _kernel_order(graph, list(members.values()))
    final = {(p, c): r for (p, c), r in refused.items() if group_of[p] != group_of[c]}
    return groups, final


def _kernel_order(graph: Graph, groups: list[list[int]]) -> list[list[int]]:
    """Topological order of the fused groups, earliest first node first."""
    owner = {k: g for g, members in enumerate(groups) for k in members}
    preds = [{owner[p] for k in members for p in graph.preds[k]} - {g} for g, members in enumerate(groups)]
    done: set[int] = set()
    order = []
    while len(order) < len(groups):
        ready = [g for g in range(len(groups)) if g not in done and preds[g] <= done]
        g = min(ready, key=lambda g: groups[g][0])
        done.add(g)
        order.append(groups[g])
    return order


def fuse(module: Module, ctx) -> Module:
    groups, refused = plan_groups(module, ctx.options)
    nodes = module.nodes
    kernels = [
        Kernel(
            Symbol(f"k{n}"),
            tuple(nodes[k].result for k in members),
            kernel_attrs([nodes[k] for k in members]),
        )
        for n, members in enumerate(groups)
    ]
    refusals = [
        Refusal(nodes[p].result, nodes[c].result, reason) for (p, c), reason in sorted(refused.items())
    ]
    return dataclasses.replace(module, stage="fusion", facts=None, kernels=kernels, refusals=refusals)


def kernel_attrs(nodes: list) -> tuple:
    numel, rnumel = kernel_group(nodes)
    return (("group", (numel, rnumel)),)
