"""The fusion pass: greedy vertical fusion of pointwise nodes, scored as Inductor
scores fusions (bytes of shared memory traffic first, then proximity), in
rounds until nothing changes. Every considered pair that was not fused is
recorded with its reason."""

from __future__ import annotations

import dataclasses

from ir_text import Kernel, Module, Refusal, Symbol, to_torch, value_names

from .deps import node_group, node_reads
from .legality import Graph, refusal_reason

MAX_ROUNDS = 10


def _candidates(graph: Graph) -> list[tuple[tuple, int, int]]:
    """(score, producer, consumer) for each pair that shares a buffer, best first."""
    pairs = {}
    for c, node in enumerate(graph.nodes):
        for dep in node_reads(node):
            p = graph.index.get(id(dep.buffer))
            if p is None:
                continue
            itemsize = to_torch(dep.buffer.type.dtype).itemsize
            shared = pairs.get((p, c), 0) + dep.buffer.type.numel * itemsize
            pairs[(p, c)] = shared
    scored = [((shared, -(c - p)), p, c) for (p, c), shared in pairs.items()]
    return sorted(scored, key=lambda t: (-t[0][0], -t[0][1], t[1], t[2]))


def plan_groups(module: Module, options) -> tuple[list[list[int]], dict[tuple[int, int], str]]:
    graph = Graph(module)
    names = value_names(module)
    group_of = list(range(len(graph.nodes)))
    members: dict[int, list[int]] = {k: [k] for k in range(len(graph.nodes))}
    refused: dict[tuple[int, int], str] = {}
    for _ in range(MAX_ROUNDS):
        changed = False
        for _, p, c in _candidates(graph):
            a, b = group_of[p], group_of[c]
            if a == b:
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
        Kernel(Symbol(f"k{n}"), tuple(nodes[k].result for k in members), kernel_attrs(nodes[members[0]]))
        for n, members in enumerate(groups)
    ]
    refusals = [
        Refusal(nodes[p].result, nodes[c].result, reason) for (p, c), reason in sorted(refused.items())
    ]
    return dataclasses.replace(module, stage="fusion", facts=None, kernels=kernels, refusals=refusals)


def kernel_attrs(first_node) -> tuple:
    numel, rnumel = node_group(first_node)
    return (("group", (numel, rnumel)),)
