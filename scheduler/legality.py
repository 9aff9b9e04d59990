"""Whether two groups of nodes may share a kernel, and if not, why.

Rules follow Inductor's scheduler (can_fuse / can_fuse_vertical): same
device, same iteration group, every read of a producer by a consumer at
exactly the producer's write index, no cycle through a node outside the
pair, and a maximum kernel size. Each refusal returns a reason that lands in
the fusion dump, with the rule's name in brackets.
"""

from __future__ import annotations

from ir_text import render_index

from .deps import node_group, node_reads, write_index


class Graph:
    """Node-level dependency graph of a scheduled module."""

    def __init__(self, module):
        self.nodes = list(module.nodes)
        self.index = {id(r): k for k, n in enumerate(self.nodes) for r in n.results}
        self.preds: list[set[int]] = []
        for node in self.nodes:
            self.preds.append(
                {self.index[id(d.buffer)] for d in node_reads(node) if id(d.buffer) in self.index}
            )
        self.succs: list[set[int]] = [set() for _ in self.nodes]
        for k, preds in enumerate(self.preds):
            for p in preds:
                self.succs[p].add(k)

    def reachable_from(self, starts: set[int]) -> set[int]:
        seen, stack = set(), list(starts)
        while stack:
            k = stack.pop()
            for s in self.succs[k]:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        return seen


def vertical_mismatch(graph: Graph, group_a: list[int], group_b: list[int], names) -> str | None:
    """A reason if some node of one group reads a buffer of the other at another index."""
    members = set(group_a) | set(group_b)
    for k in sorted(members):
        consumer = graph.nodes[k]
        for dep in node_reads(consumer):
            p = graph.index.get(id(dep.buffer))
            if p is None or p not in members or (p in group_a) == (k in group_a):
                continue
            producer = graph.nodes[p]
            if producer.ranges != consumer.ranges or dep.index != write_index(producer):
                return (
                    f"[memory-deps] {names[id(consumer.result)]} reads {names[id(producer.result)]}"
                    f"[{render_index(dep.index)}] but it is written at"
                    f" [{render_index(write_index(producer))}]"
                )
    return None


def refusal_reason(graph: Graph, group_a: list[int], group_b: list[int], options, names) -> str | None:
    """Why the groups may not be fused (None when they may)."""
    if not options.fusion:
        return "[fusion-disabled] option fusion=false"
    size = len(group_a) + len(group_b)
    if size > options.max_fusion_size:
        return f"[max-fusion-size] the kernel would hold {size} nodes, more than max_fusion_size={options.max_fusion_size}"
    kind = kind_reason(graph, group_a + group_b, names)
    if kind:
        return kind
    first_a, first_b = graph.nodes[group_a[0]], graph.nodes[group_b[0]]
    ga, gb = node_group(first_a), node_group(first_b)
    if ga != gb:
        return f"[group] iteration sizes differ: {ga} vs {gb}"
    if first_a.ranges != first_b.ranges:
        return f"[ranges] loop ranges differ: {list(first_a.ranges)} vs {list(first_b.ranges)}"
    mismatch = vertical_mismatch(graph, group_a, group_b, names)
    if mismatch:
        return mismatch
    return cycle_reason(graph, group_a, group_b, names)


def kind_reason(graph: Graph, members, names) -> str | None:
    """Only pointwise nodes share kernels so far: an extern call always runs
    alone, and fusing reductions and scans with their neighbours is left to
    the scheduler's reduction fusion."""
    for k in sorted(members):
        node = graph.nodes[k]
        if node.kind == "extern":
            return f"[extern] {names[id(node.result)]} is an extern call ({node.target}), which runs alone"
        if node.kind != "pointwise":
            return (
                f"[kind] {names[id(node.result)]} is a loop.{node.kind} node; only pointwise nodes are fused"
            )
    return None


def cycle_reason(graph: Graph, group_a, group_b, names) -> str | None:
    """Fusing creates a cycle when a node outside the groups lies on a path
    that leaves them and comes back (Inductor's will_fusion_create_cycle)."""
    members = set(group_a) | set(group_b)
    outside = sorted(k for k in graph.reachable_from(members) if k not in members)
    for k in outside:
        if graph.reachable_from({k}) & members:
            return f"[cycle] fusing would create a cycle through {names[id(graph.nodes[k].result)]}"
    return None
