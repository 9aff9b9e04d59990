"""Whether two groups of nodes may share a kernel, and if not, why.

Rules follow Inductor's scheduler (can_fuse / can_fuse_vertical): sizes
that fit one iteration space (`iteration.py`: equal reductions, pointwise
nodes per row or per reduced element), every read of a producer by a
consumer at exactly the producer's write index, no cycle through a node
outside the pair, and a maximum kernel size. Each refusal returns a reason that lands in
the fusion dump, with the rule's name in brackets.
"""

from __future__ import annotations

from .deps import node_group, node_reads
from .iteration import Refused, anchor, kernel_space
from .split import SplitRule, split_reason


class Graph:
    """Node-level dependency graph of a scheduled module. Nodes are in
    program order, so every edge runs from a lower index to a higher one
    (`forward`; the cycle check bounds its search by it)."""

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
        self.forward = all(p < k for k, preds in enumerate(self.preds) for p in preds)

    def reachable_from(self, starts, groups=None, edges=None, bound=None, within=None) -> set[int]:
        """The nodes after `starts` (before them, with `edges=self.preds`);
        with `groups` (groups.of(node) -> the nodes of its kernel so far), a
        kernel reached is reached whole, as it runs as one. Nodes past
        index `bound`, or outside the set `within`, are neither reached nor
        walked from."""
        edges = self.succs if edges is None else edges
        seen, stack = set(), list(starts)
        while stack:
            k = stack.pop()
            for s in edges[k]:
                if s in seen:
                    continue
                for t in groups.of(s) if groups else (s,):
                    if (
                        t in seen
                        or (bound is not None and t > bound)
                        or (within is not None and t not in within)
                    ):
                        continue
                    seen.add(t)
                    stack.append(t)
        return seen


def refusal_reason(
    graph: Graph,
    group_a: list[int],
    group_b: list[int],
    options,
    names,
    groups=None,
    split: SplitRule | None = None,
) -> str | None:
    """Why the groups may not be fused (None when they may); `groups`, the
    kernels so far (for the cycle rule: fusion._Merges); `split`, the
    backend's rule for reductions over few long rows (`split.py`): a choice
    of the fusion pass, not a rule of legal plans, so a plan edited by hand
    may still fuse a second pass into such a kernel (it is then not split)."""
    if not options.fusion:
        return "[fusion-disabled] option fusion=false"
    size = len(group_a) + len(group_b)
    if size > options.max_fusion_size:
        return f"[max-fusion-size] the kernel would hold {size} nodes, more than max_fusion_size={options.max_fusion_size}"
    members = sorted(group_a + group_b)
    return kernel_reason(graph, members, names, groups) or split_reason(
        [graph.nodes[k] for k in members], names, split
    )


def kernel_reason(graph: Graph, members: list[int], names, groups=None) -> str | None:
    """Why the nodes `members` (program order) may not share one kernel: the
    same rules for the fusion pass and for a plan edited in a dump."""
    if len(members) < 2:
        return None
    kind = kind_reason(graph, members, names)
    if kind:
        return kind
    try:
        kernel_space([graph.nodes[k] for k in members], names)
    except Refused as refusal:
        return str(refusal)
    return cycle_reason(graph, members, names, groups)


def nests_reason(graph: Graph, nests: list[list[int]], target, names, groups=None) -> str | None:
    """Why loop nests (each a list of members that shares one iteration
    space) may not run one after the other in one kernel. As Inductor's C++
    backend, which puts loop nests of compatible sizes in one function (one
    OpenMP region): only on a target whose kernels run loop nests
    (`Target.loop_nests`), sizes related (`_compatible`),
    every nest reading
    only what earlier nests computed, and no cycle through another kernel."""
    if len(nests) < 2:
        return None
    if not target.loop_nests:
        return f"[nests] a kernel of the {target.name} backend runs one loop nest"
    members = sorted(k for nest in nests for k in nest)
    kind = kind_reason(graph, members, names, scans_alone=False)
    if kind:
        return kind
    first = _loops([graph.nodes[k] for k in nests[0]])
    nest_of = {k: j for j, nest in enumerate(nests) for k in nest}
    for j, nest in enumerate(nests):
        loops = _loops([graph.nodes[k] for k in nest])
        if not _compatible(first, loops):
            label = names[id(graph.nodes[nest[0]].result)]
            return f"[nest-group] the nest of {label} has sizes {loops[0]}, unrelated to the first nest's {first[0]}"
        for k in nest:
            for p in graph.preds[k]:
                if nest_of.get(p, -1) > j:
                    who, whom = names[id(graph.nodes[k].result)], names[id(graph.nodes[p].result)]
                    return f"[nest-order] {who} reads {whom}, which a later nest of the kernel computes"
    return cycle_reason(graph, members, names, groups)


def _loops(nodes) -> tuple[tuple[int, int], int]:
    """A nest's (numel, rnumel) and the extent of its outermost loop."""
    first = anchor(nodes)
    extents = [s for s in tuple(first.ranges) + tuple(first.reduction_ranges) if s != 1]
    return node_group(first), (extents[0] if extents else 1)


def _compatible(a, b) -> bool:
    """Nests whose loops line up: as many elements in all, the rows of one
    being the elements of the other (a sum of per-row results), or the same
    outermost loop (as Inductor's outer-loop fusion)."""
    (ga, outer_a), (gb, outer_b) = a, b
    total_a, total_b = ga[0] * ga[1], gb[0] * gb[1]
    return total_a == total_b or total_b == ga[0] or total_a == gb[0] or (outer_a == outer_b > 1)


def kind_reason(graph: Graph, members, names, scans_alone: bool = True) -> str | None:
    """An extern call always runs alone (as Inductor's ExternKernel). A scan
    shares its kernel only with pointwise nodes over its elements: its loops
    (the scanned dimension innermost, in order) fit no reduction or other scan."""
    scans = [k for k in sorted(members) if graph.nodes[k].kind == "scan"] if scans_alone else []
    for k in sorted(members):
        node = graph.nodes[k]
        if node.kind == "extern":
            return f"[extern] {names[id(node.result)]} is an extern call ({node.target}), which runs alone"
        if scans and node.kind == "reduction":
            return f"[kind] {names[id(node.result)]} is a reduction; a scan's kernel holds no reduction"
    if len(scans) > 1:
        return f"[kind] {names[id(graph.nodes[scans[1]].result)]} is a second scan; a kernel holds one"
    return None


def cycle_reason(graph: Graph, members, names, groups=None) -> str | None:
    """Fusing creates a cycle when a node outside the kernel lies on a path
    that leaves it and comes back (Inductor's will_fusion_create_cycle). With
    `groups`, paths run through the other kernels formed so far as wholes: a
    path into one of them continues from any of its nodes.

    The nodes on such paths are those both after and before the kernel. The
    walk forward stops past `groups.reach_bound`: edges run forward, so from
    a node past the members' last index a path comes back only by jumping
    back inside a kernel, and the bound is past every kernel that could
    carry it back. The walk back only goes through nodes found after the
    kernel: every node on a path from one of them back to a member is
    itself after the kernel.
    """
    members = set(members)
    bound = None
    if graph.forward:
        bound = groups.reach_bound(max(members), members) if groups else max(members)
    after = graph.reachable_from(members, groups, bound=bound) - members
    if not after:
        return None
    before = graph.reachable_from(members, groups, graph.preds, within=after | members) - members
    through = sorted(after & before)
    if through:
        return f"[cycle] fusing would create a cycle through {names[id(graph.nodes[through[0]].result)]}"
    return None
