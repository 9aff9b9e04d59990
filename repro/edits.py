"""The reducer's candidate edits. Each takes the current module, leaves it
alone, and returns an edited copy (a print and a parse: fresh values) with
its derived sections made anew, or None when the edit does not apply.

Items, outputs and kernels are named by position, which a copy keeps.
"""

from __future__ import annotations

import dataclasses


from ir_text import (
    BufferType,
    Kernel,
    LoopNode,
    Module,
    Symbol,
    TensorType,
    contiguous_strides,
    flat_tensors,
    from_torch,
    parse,
    print_ir,
    Shapes,
    module_device,
    resolve_target,
)
from scheduler import compute_facts, kernel_attrs, plan_memory

from .program import (
    drop_dead,
    drop_dead_body_ops,
    items,
    new_input,
    reads,
    replace_uses,
    set_items,
)

# Ops of a loop body that are structure, not computation.
_KEPT_BODY_OPS = frozenset({"load", "store", "reduce", "scan", "indirect", "index", "constant"})


def copy_module(module: Module) -> Module:
    return parse(print_ir(module), "<reduce>")


def rebuild(module: Module) -> Module:
    """Derive the stage's sections again for an edited program: the schedule's
    facts, the fusion plan restricted to the nodes left (each kernel's
    attributes recomputed), and the memory plan made anew."""
    if module.stage in ("capture", "lower"):
        return module
    if module.stage == "schedule":
        module.facts = compute_facts(module)
        return module
    module.kernels = _restricted_plan(module)
    alive = {id(n.result) for n in module.nodes}
    module.refusals = [r for r in module.refusals or () if id(r.first) in alive and id(r.second) in alive]
    if module.stage == "fusion":
        return module
    planned = plan_memory(dataclasses.replace(module, stage="fusion", wrapper=None))
    module.wrapper = planned.wrapper
    return module


def _restricted_plan(module: Module) -> list[Kernel]:
    node_of = {id(n.result): n for n in module.nodes}
    kernels = []
    for kernel in module.kernels:
        nests = [[v for v in nest if id(v) in node_of] for nest in kernel.loop_nests()]
        nests = [nest for nest in nests if nest]
        if not nests:
            continue
        values = tuple(v for nest in nests for v in nest)
        sizes = tuple(len(nest) for nest in nests) if len(nests) > 1 else None
        attrs = kernel_attrs([node_of[id(v)] for v in nests[0]])
        kernels.append(Kernel(kernel.name, values, attrs, None, sizes))
    return kernels


def _finish(module: Module) -> Module:
    drop_dead(module)
    return rebuild(module)


def keep_outputs(module: Module, keep: list[int]) -> Module | None:
    if len(keep) == len(module.outputs):
        return None
    m = copy_module(module)
    m.outputs = tuple(m.outputs[k] for k in keep)
    return _finish(m)


def drop_updates(module: Module) -> Module | None:
    if not module.updates:
        return None
    m = copy_module(module)
    m.updates = ()
    return _finish(m)


def reroot(module: Module, output: int, item: int, result: int = 0) -> Module:
    """Output `output` becomes result `result` of item `item`."""
    m = copy_module(module)
    outputs = list(m.outputs)
    outputs[output] = items(m)[item].results[result]
    m.outputs = tuple(outputs)
    return _finish(m)


def cut(module: Module, cut_items: list[int]) -> Module:
    """Delete these items; what others read of them becomes new inputs."""
    m = copy_module(module)
    doomed = [items(m)[k] for k in cut_items]
    mapping = {id(r): new_input(m, r) for item in doomed for r in item.results}
    replace_uses(m, mapping)
    doomed_ids = {id(item) for item in doomed}
    set_items(m, [item for item in items(m) if id(item) not in doomed_ids])
    return _finish(m)


def forward(module: Module, item: int) -> Module | None:
    """Delete an item whose value can be replaced by one it reads (same type)."""
    m = copy_module(module)
    target = items(m)[item]
    if len(target.results) != 1:
        return None
    result = target.results[0]
    same = [v for v in reads(target) if v.type == result.type]
    if not same:
        return None
    replace_uses(m, {id(result): same[0]})
    return _finish(m)


def bypass_body_ops(module: Module, node: int, ops: list[int], choice: int = 0) -> Module | None:
    """In loop node `node`, each of body ops `ops` is replaced by its operand
    of the same dtype (the first, or the `choice`-th: `where(c, a, b)` may
    become `a` or `b`), so the op is skipped."""
    m = copy_module(module)
    target = m.nodes[node]
    mapping = {}
    for k in ops:
        op = target.body[k]
        same = [v for v in op.operands if v.type == op.result.type]
        if len(same) <= choice:
            return None
        mapping[id(op.result)] = mapping.get(id(same[choice]), same[choice])
    for op in target.body:
        op.operands = tuple(mapping.get(id(v), v) for v in op.operands)
    drop_dead_body_ops(target)
    return _finish(m)


def bypassable_ops(node) -> list[int]:
    """Positions of the computing body ops of a loop node (none for others)."""
    if not isinstance(node, LoopNode):
        return []
    return [
        k
        for k, op in enumerate(node.body)
        if op.result is not None
        and op.op not in _KEPT_BODY_OPS
        and any(v.type == op.result.type for v in op.operands)
    ]


def unfuse(module: Module, kernel: int) -> Module | None:
    """Kernel `kernel` becomes one kernel per node (fusion and memplan stages)."""
    if module.kernels is None or len(module.kernels[kernel].nodes) < 2:
        return None
    m = copy_module(module)
    old = m.kernels[kernel]
    taken = {k.name.name for k in m.kernels}
    node_of = {id(n.result): n for n in m.nodes}
    singles = []
    for j, v in enumerate(old.nodes):
        name = f"{old.name.name}_{j}"
        while name in taken:
            name += "_"
        taken.add(name)
        singles.append(Kernel(Symbol(name), (v,), kernel_attrs([node_of[id(v)]])))
    m.kernels = m.kernels[:kernel] + singles + m.kernels[kernel + 1 :]
    return _finish(m)


def input_sizes(module: Module) -> list[int]:
    """The distinct dimension sizes above 1 of the inputs, largest first."""
    return sorted({s for inp in module.inputs for s in inp.value.type.shape if s > 1}, reverse=True)


def shrink(module: Module, size: int, new: int) -> Module | None:
    """Capture stage: every input dimension of `size`, and every `size` in an
    op's integer lists (view and expand sizes), becomes `new`; result types
    are inferred again on fake tensors. None when a contiguous layout cannot
    follow (a strided input) or when an op refuses the new shapes."""
    if module.stage != "capture":
        return None
    m = copy_module(module)

    def resize(x):
        if isinstance(x, tuple) and x and all(type(v) is int for v in x):
            return tuple(new if v == size else v for v in x)
        return tuple(resize(v) for v in x) if isinstance(x, tuple) else x

    shapes = Shapes(module_device(m))
    for inp in m.inputs:
        t = inp.value.type
        if size not in t.shape:
            pass
        elif t.strides != contiguous_strides(t.shape):
            return None
        else:
            shape = tuple(new if s == size else s for s in t.shape)
            inp.value.type = BufferType(t.dtype, shape, contiguous_strides(shape))
        shapes.bind(inp.value, inp.device)
    for op in m.graph:
        op.args = resize(op.args)
        op.kwargs = tuple((k, resize(v)) for k, v in op.kwargs)
        tensors = flat_tensors(shapes.call(resolve_target(op.target), op.args, op.kwargs))
        if len(tensors) != len(op.results):
            return None
        for value, tensor in zip(op.results, tensors):
            value.type = TensorType(from_torch(tensor.dtype), tuple(tensor.shape))
            shapes[id(value)] = tensor
    return m
