"""The fusion pass's cycle check (legality.cycle_reason) walks forward only
up to a bound and back only through nodes found after the kernel. It must
answer exactly as the unbounded walks in both directions did: here on
random DAGs in program order, with random kernels formed so far (including
kernels whose nodes lie far apart), against that reference.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from scheduler.fusion import _Merges
from scheduler.legality import Graph, cycle_reason


def random_graph(rng: random.Random, count: int) -> Graph:
    graph = Graph.__new__(Graph)
    graph.nodes = [SimpleNamespace(result=SimpleNamespace(k=k)) for k in range(count)]
    graph.preds = [set(rng.sample(range(k), min(k, rng.randint(0, 3)))) for k in range(count)]
    graph.succs = [set() for _ in range(count)]
    for k, preds in enumerate(graph.preds):
        for p in preds:
            graph.succs[p].add(k)
    graph.forward = True
    return graph


def random_groups(rng: random.Random, count: int) -> _Merges:
    merges = _Merges(count, SimpleNamespace(fusion_bisect_limit=-1))
    for _ in range(count // 2):
        a, b = rng.sample(range(count), 2)
        ga, gb = merges.owner[a], merges.owner[b]
        if ga != gb:
            merges.merge(ga, gb, [sorted(merges.members[ga][0] + merges.members[gb][0])])
    return merges


def reference(graph: Graph, members, groups) -> list[int]:
    """The nodes a cycle would run through, by unbounded walks."""

    def reach(edges):
        seen, stack = set(), list(members)
        while stack:
            for s in edges[stack.pop()]:
                for t in groups.of(s) if groups else (s,):
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
        return seen - set(members)

    return sorted(reach(graph.succs) & reach(graph.preds))


@pytest.mark.parametrize("seed", range(40))
def test_the_bounded_walks_find_the_cycles_the_unbounded_ones_do(seed):
    rng = random.Random(seed)
    count = rng.randint(8, 60)
    graph = random_graph(rng, count)
    names = {id(node.result): f"%n{k}" for k, node in enumerate(graph.nodes)}
    for groups in (None, random_groups(rng, count)):
        for _ in range(30):
            a, b = rng.sample(range(count), 2)
            members = sorted(set(groups.of(a) + groups.of(b))) if groups else sorted({a, b})
            through = reference(graph, members, groups)
            reason = cycle_reason(graph, members, names, groups)
            expected = None if not through else f"[cycle] fusing would create a cycle through %n{through[0]}"
            assert reason == expected, (seed, members)


def test_a_kernel_far_apart_carries_a_path_back():
    # 0 -> 1 -> 5, and 5 shares a kernel with 2, which 3 reads: fusing 0 and 3
    # goes out through 1 and 5 and back through the kernel {2, 5}.
    graph = random_graph(random.Random(0), 6)
    graph.preds = [set(), {0}, set(), {0, 2}, set(), {1}]
    graph.succs = [{1, 3}, {5}, {3}, set(), set(), set()]
    names = {id(node.result): f"%n{k}" for k, node in enumerate(graph.nodes)}
    merges = _Merges(6, SimpleNamespace(fusion_bisect_limit=-1))
    merges.merge(2, 5, [[2, 5]])
    assert merges.reach_bound(3, {0, 3}) == 5
    assert cycle_reason(graph, [0, 3], names, merges) == "[cycle] fusing would create a cycle through %n1"
    assert cycle_reason(graph, [0, 3], names) is None  # node by node, no path comes back
