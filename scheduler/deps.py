"""Dependencies: what each loop node reads and writes, its group, and its users."""

from __future__ import annotations

from ir_text import Dep, LoopNode, Module, NodeFacts, Symbol, loop_vars, strided_index

RETURN = Symbol("return")


def node_reads(node: LoopNode) -> tuple[Dep, ...]:
    """Memory deps of a node's loads, in order of first appearance, without repeats."""
    seen, deps = set(), []
    for op in node.body:
        if op.op == "load":
            dep = Dep(op.operands[0], op.attr("index"))
            key = (id(dep.buffer), dep.index)
            if key not in seen:
                seen.add(key)
                deps.append(dep)
    return tuple(deps)


def write_index(node: LoopNode):
    """Where a pointwise node stores element (i0, i1, ...): its layout's index."""
    return strided_index(loop_vars(len(node.ranges)), node.result.type.strides)


def node_group(node: LoopNode) -> tuple[int, int]:
    """(numel, rnumel) of a node, as Inductor's group."""
    numel = 1
    for s in node.ranges:
        numel *= s
    rnumel = 1
    for s in node.reduction_ranges:
        rnumel *= s
    return numel, rnumel


def users(module: Module) -> dict[int, list]:
    """For each buffer id, the nodes reading it (in order) and RETURN if it is an output."""
    out: dict[int, list] = {id(n.result): [] for n in module.nodes}
    out.update({id(i.value): [] for i in module.inputs})
    for node in module.nodes:
        for dep in node_reads(node):
            if node not in out[id(dep.buffer)]:
                out[id(dep.buffer)].append(node)
    for v in module.outputs:
        if RETURN not in out[id(v)]:
            out[id(v)].append(RETURN)
    return out


def compute_facts(module: Module) -> list[NodeFacts]:
    user_map = users(module)
    facts = []
    for node in module.nodes:
        node_users = tuple(u if u is RETURN else u.result for u in user_map[id(node.result)])
        facts.append(NodeFacts(node.result, node_group(node), node_reads(node), node_users))
    return facts
