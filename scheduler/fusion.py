"""The fusion pass: greedy fusion of nodes that share a buffer (vertical:
producer and consumer, pointwise into and after reductions; horizontal: two
readers of one buffer), scored as Inductor scores fusions (bytes of shared
memory traffic first, then proximity), in rounds until nothing changes.
Every considered pair that was not fused is recorded with its reason. On
the cpp backend a second phase joins kernels that cannot share loops as
consecutive loop nests of one kernel. `fusion_bisect_limit=N` applies only
the first N fusions of both phases, to find the one that breaks a program."""

from __future__ import annotations

import dataclasses

from ir_text import Kernel, Module, Refusal, Symbol, to_torch, value_names

from .deps import node_reads
from .iteration import kernel_group
from .legality import Graph, nests_reason, refusal_reason
from .target import Target

MAX_ROUNDS = 10
# Horizontal pairs (no producer between them) further apart than this in
# program order are not fused: holding both live would raise peak memory
# (as Inductor's max_fusion_distance guard).
MAX_HORIZONTAL_DISTANCE = 64


def _candidates(graph: Graph) -> list[tuple[tuple, int, int]]:
    """(score, first, second) for each pair of nodes that shares a buffer,
    best first: as Inductor's score_fusion, bytes of memory traffic the
    fusion saves, then proximity in program order. A producer and its
    consumer save the buffer between them twice, its write and its read
    (so `x - mean` joins the division that reads it rather than a
    reduction that also reads x); two readers of one buffer (a horizontal
    pair) save one read of it, however many indices each reads it at."""
    shared: dict[tuple[int, int], int] = {}
    readers: dict[int, list[int]] = {}
    for c, node in enumerate(graph.nodes):
        buffers = {id(dep.buffer): dep.buffer for dep in node_reads(node)}
        for buffer in buffers.values():
            nbytes = buffer.type.numel * to_torch(buffer.type.dtype).itemsize
            p = graph.index.get(id(buffer))
            if p is not None:
                shared[(p, c)] = shared.get((p, c), 0) + 2 * nbytes
            others = readers.setdefault(id(buffer), [])
            for a in others:
                if c - a <= MAX_HORIZONTAL_DISTANCE:
                    shared[(a, c)] = shared.get((a, c), 0) + nbytes
            others.append(c)
    scored = [((nbytes, -(c - p)), p, c) for (p, c), nbytes in shared.items()]
    return sorted(scored, key=lambda t: (-t[0][0], -t[0][1], t[1], t[2]))


class _Merges:
    """Groups of nodes merged so far, and the fusion budget of fusion_bisect_limit."""

    def __init__(self, count: int, options):
        self.owner = list(range(count))
        self.members: dict[int, list] = {k: [[k]] for k in range(count)}  # group -> its nests
        # group -> its nodes, flat: the cycle check asks for a node's kernel
        # at every node it walks (millions of times on a large graph).
        self._flat: dict[int, tuple[int, ...]] = {k: (k,) for k in range(count)}
        self._spans: list[tuple[int, int]] | None = None  # (first, last) of kernels of several nodes
        self.options = options
        self.fusions = 0

    def spent(self) -> bool:
        limit = self.options.fusion_bisect_limit
        return limit >= 0 and self.fusions >= limit

    def of(self, k: int) -> tuple[int, ...]:
        """The nodes of node `k`'s kernel so far."""
        return self._flat[self.owner[k]]

    def reach_bound(self, last: int, members) -> int:
        """For the cycle check (legality.cycle_reason): the index past which
        no node has a path back to a node at most `last`. Edges run forward,
        so such a path must jump back inside a kernel, and every kernel that
        has nodes on both sides of the bound extends it to its last node
        (the kernels of `members` excepted: all theirs are at most `last`)."""
        if self._spans is None:  # kept until the next merge: checks outnumber merges
            self._spans = sorted((n[0], n[-1]) for n in self._flat.values() if len(n) > 1)
        bound = last
        for first, end in self._spans:
            if first > bound:
                break
            if end > bound and first not in members:
                bound = end
        return bound

    def merge(self, a: int, b: int, nests: list[list[int]]) -> None:
        for nest in nests:
            for k in nest:
                self.owner[k] = a
        self.members[a] = nests
        self._flat[a] = tuple(sorted(m for nest in nests for m in nest))
        del self.members[b], self._flat[b]
        self._spans = None
        self.fusions += 1


def plan_groups(
    module: Module, options, target: Target
) -> tuple[list[list[list[int]]], dict[tuple[int, int], str]]:
    """The kernels (each a list of loop nests, each a list of node indices)
    and the reasons of the pairs left apart. Two phases: nodes fuse into
    shared loop nests (a reduction the target splits keeping one pass);
    then, on a target whose kernels run several loop nests, whole kernels
    whose nests cannot share loops join as consecutive loop nests
    (`legality.nests_reason`)."""
    split = target.split_rule()
    graph = Graph(module)
    names = value_names(module)
    merges = _Merges(len(graph.nodes), options)
    refused: dict[tuple[int, int], str] = {}
    candidates = _candidates(graph)
    limit = f"[bisect-limit] fusion_bisect_limit={options.fusion_bisect_limit} fusions applied"
    # Refusals that depend on the two kernels alone (sizes, kinds, iteration
    # spaces, splits), by the kernels' nodes: each round checks every pair
    # again, and a pair whose kernels did not change is refused again. A
    # cycle depends on the other kernels as well, and is checked again.
    settled: dict[tuple, str] = {}
    for _ in range(MAX_ROUNDS):
        changed = False
        for _, p, c in candidates:
            a, b = merges.owner[p], merges.owner[c]
            if a == b:
                continue
            if merges.spent():
                refused[(p, c)] = limit
                continue
            key = (merges.of(p), merges.of(c))
            reason = settled.get(key) or refusal_reason(
                graph, merges.members[a][0], merges.members[b][0], options, names, merges, split
            )
            if reason is not None:
                if not reason.startswith("[cycle]"):
                    settled[key] = reason
                refused[(p, c)] = reason
                continue
            merges.merge(a, b, [sorted(merges.members[a][0] + merges.members[b][0])])
            changed = True
        if not changed:
            break
    for _ in range(MAX_ROUNDS if options.fusion else 0):
        changed = False
        for _, p, c in candidates:
            a, b = merges.owner[p], merges.owner[c]
            if a == b or merges.spent():
                continue
            nests = _nest_order(graph, merges.members[a] + merges.members[b])
            size = sum(len(nest) for nest in nests or ())
            if nests is None or size > options.max_fusion_size:
                continue
            if nests_reason(graph, nests, target, names, merges) is None:
                merges.merge(a, b, nests)
                changed = True
        if not changed:
            break
    kernels = _kernel_order(graph, list(merges.members.values()))
    nest_of = {k: (g, j) for g, nests in enumerate(kernels) for j, nest in enumerate(nests) for k in nest}
    # A pair fused into one kernel but different nests keeps its reason: it
    # says why the two do not share loops.
    final = {(p, c): r for (p, c), r in refused.items() if nest_of[p] != nest_of[c]}
    return kernels, final


def _nest_order(graph: Graph, nests: list[list[int]]) -> list[list[int]] | None:
    """The nests in an order where each reads only earlier ones (earliest
    first node first among the ready ones); None when they read each other."""
    nest_of = {k: j for j, nest in enumerate(nests) for k in nest}
    preds = [
        {nest_of[p] for k in nest for p in graph.preds[k] if p in nest_of} - {j}
        for j, nest in enumerate(nests)
    ]
    order: list[int] = []
    while len(order) < len(nests):
        ready = [j for j in range(len(nests)) if j not in order and preds[j] <= set(order)]
        if not ready:
            return None
        order.append(min(ready, key=lambda j: nests[j][0]))
    return [nests[j] for j in order]


def _kernel_order(graph: Graph, kernels: list[list[list[int]]]) -> list[list[list[int]]]:
    """Topological order of the kernels, earliest first node first."""
    flat = [sorted(k for nest in nests for k in nest) for nests in kernels]
    owner = {k: g for g, members in enumerate(flat) for k in members}
    preds = [{owner[p] for k in members for p in graph.preds[k]} - {g} for g, members in enumerate(flat)]
    done: set[int] = set()
    order = []
    while len(order) < len(kernels):
        ready = [g for g in range(len(kernels)) if g not in done and preds[g] <= done]
        g = min(ready, key=lambda g: flat[g][0])
        done.add(g)
        order.append(kernels[g])
    return order


def fuse(module: Module, ctx) -> Module:
    """The fusion plan for the backend `ctx.target` describes (target.py):
    reductions over few long rows that it splits are kept one pass, and
    the backend then splits them (codegen's fusion.split-reductions step
    writes each kernel's split factor)."""
    kernels, refused = plan_groups(module, ctx.options, ctx.target)
    nodes = module.nodes
    out = []
    for n, nests in enumerate(kernels):
        values = tuple(nodes[k].result for nest in nests for k in nest)
        sizes = tuple(len(nest) for nest in nests) if len(nests) > 1 else None
        out.append(Kernel(Symbol(f"k{n}"), values, kernel_attrs([nodes[k] for k in nests[0]]), None, sizes))
    refusals = [
        Refusal(nodes[p].result, nodes[c].result, reason) for (p, c), reason in sorted(refused.items())
    ]
    return dataclasses.replace(module, stage="fusion", facts=None, kernels=out, refusals=refusals)


def kernel_attrs(nodes: list) -> tuple:
    """A kernel's attributes: the (numel, rnumel) group of its first loop nest."""
    numel, rnumel = kernel_group(nodes)
    return (("group", (numel, rnumel)),)
