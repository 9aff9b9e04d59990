"""Dependencies: what each loop node reads and writes, its group, and its users."""

from __future__ import annotations

from ir_text import Dep, Module, NodeFacts, Symbol, Value, loop_vars, strided_index

RETURN = Symbol("return")


def _buffer_args(args):
    for a in args:
        if isinstance(a, Value):
            yield a
        elif isinstance(a, tuple):
            yield from _buffer_args(a)


def node_reads(node) -> tuple[Dep, ...]:
    """Memory deps of a node's loads, in order of first appearance, without repeats.
    An extern call reads each buffer argument whole (a star dep)."""
    seen, deps = set(), []
    if node.kind == "extern":
        for v in _buffer_args(list(node.args) + [v for _, v in node.kwargs]):
            if id(v) not in seen:
                seen.add(id(v))
                deps.append(Dep(v, None))
        return tuple(deps)
    for op in node.body:
        if op.op == "load":
            dep = Dep(op.operands[0], op.attr("index"))
            key = (id(dep.buffer), dep.index)
            if key not in seen:
                seen.add(key)
                deps.append(dep)
    return tuple(deps)


def write_index(node):
    """Where a pointwise node stores element (i0, i1, ...): its layout's index."""
    return strided_index(loop_vars(len(node.ranges)), node.result.type.strides)


def node_writes(node) -> tuple[Dep, ...]:
    """Memory deps of a node's stores: its buffer at its write index; an
    extern call writes each result whole (a star dep)."""
    if node.kind == "extern":
        return tuple(Dep(r, None) for r in node.results)
    return (Dep(node.result, write_index(node)),)


def node_group(node) -> tuple[int, int]:
    """(numel, rnumel) of a node, as Inductor's group; an extern call has
    no loop (0, 0)."""
    if node.kind == "extern":
        return 0, 0
    numel = 1
    for s in node.ranges:
        numel *= s
    rnumel = 1
    for s in node.reduction_ranges:
        rnumel *= s
    return numel, rnumel


def users(module: Module) -> dict[int, list]:
    """For each buffer id, the nodes reading it (in order) and RETURN if it is an output."""
    out: dict[int, list] = {id(r): [] for n in module.nodes for r in n.results}
    out.update({id(i.value): [] for i in module.inputs})
    for node in module.nodes:
        for dep in node_reads(node):
            if node not in out[id(dep.buffer)]:
                out[id(dep.buffer)].append(node)
    for v in returned(module):
        if RETURN not in out[id(v)]:
            out[id(v)].append(RETURN)
    return out


def returned(module: Module) -> tuple:
    """The values the program hands back: its outputs and the new values of updated inputs."""
    return tuple(module.outputs) + tuple(value for _, value in module.updates)


def compute_facts(module: Module) -> list[NodeFacts]:
    user_map = users(module)
    facts = []
    for node in module.nodes:
        node_users = []
        for r in node.results:
            for u in user_map[id(r)]:
                user = u if u is RETURN else u.result
                if all(user is not x for x in node_users):
                    node_users.append(user)
        node_users = tuple(node_users)
        facts.append(
            NodeFacts(node.result, node_group(node), node_reads(node), node_users, writes=node_writes(node))
        )
    return facts
