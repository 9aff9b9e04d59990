"""One view of a module's program for the reducer, whatever its stage: the
items that compute values (graph ops at capture, loop and extern nodes
after), what each reads, and the edits that keep a module well formed
(replacing uses, dropping what no output needs, adding inputs).

Derived sections (schedule facts, the fusion plan, the memory plan) are not
edited here: `rebuild.py` derives them again for the edited program.
"""

from __future__ import annotations

from ir_text import BufferType, Input, LoopNode, Module, TensorType, Value, contiguous_strides


def items(module: Module) -> list:
    """What computes the program's values, in program order."""
    return module.graph if module.stage == "capture" else module.nodes


def set_items(module: Module, new: list) -> None:
    if module.stage == "capture":
        module.graph = new
    else:
        module.nodes = new


def _values_in(x):
    if isinstance(x, Value):
        yield x
    elif isinstance(x, tuple):
        for y in x:
            yield from _values_in(y)


def reads(item) -> list[Value]:
    """The program values (inputs, other items' results) `item` reads."""
    if isinstance(item, LoopNode):
        local = {id(op.result) for op in item.body if op.result is not None}
        return [v for op in item.body for v in op.operands if id(v) not in local]
    return list(_values_in(item.args)) + [v for _, x in item.kwargs for v in _values_in(x)]


def returned(module: Module) -> list[Value]:
    return list(module.outputs) + [v for _, v in module.updates]


def op_count(module: Module) -> int:
    """The size the reducer minimizes, as the manifest counts it: graph ops at
    capture; body ops and extern calls after."""
    if module.stage == "capture":
        return len(module.graph)
    return sum(len(n.body) if isinstance(n, LoopNode) else 1 for n in module.nodes)


def _substitute(x, mapping: dict[int, Value]):
    if isinstance(x, Value):
        return mapping.get(id(x), x)
    if isinstance(x, tuple):
        return tuple(_substitute(y, mapping) for y in x)
    return x


def replace_uses(module: Module, mapping: dict[int, Value]) -> None:
    """Every read of a value in `mapping` (by id) reads its replacement instead."""
    for item in items(module):
        if isinstance(item, LoopNode):
            for op in item.body:
                op.operands = _substitute(op.operands, mapping)
        else:
            item.args = _substitute(item.args, mapping)
            item.kwargs = tuple((k, _substitute(v, mapping)) for k, v in item.kwargs)
    module.outputs = _substitute(tuple(module.outputs), mapping)
    module.updates = tuple((target, _substitute(v, mapping)) for target, v in module.updates)


def new_input(module: Module, like: Value) -> Value:
    """A fresh program input with `like`'s type (a contiguous layout for a
    capture-stage tensor), seeded after every existing input."""
    t = like.type
    if isinstance(t, TensorType):
        t = BufferType(t.dtype, t.shape, contiguous_strides(t.shape))
    device = module.inputs[0].device if module.inputs else dict(module.options).get("device", "cpu")
    seed = 1 + max((inp.seed for inp in module.inputs), default=-1)
    value = Value(f"{like.hint}_in" if like.hint else "in", t)
    module.inputs.append(Input(value, device, seed))
    return value


def drop_dead(module: Module) -> None:
    """Drop the items no returned value needs, then the inputs nobody reads
    (an updated input stays: the update names it)."""
    producer = {id(r): item for item in items(module) for r in item.results}
    live: set[int] = set()
    stack = [id(v) for v in returned(module)]
    while stack:
        item = producer.get(stack.pop())
        if item is None or id(item) in live:
            continue
        live.add(id(item))
        stack.extend(id(v) for v in reads(item))
    kept = [item for item in items(module) if id(item) in live]
    set_items(module, kept)
    used = {id(v) for item in kept for v in reads(item)} | {id(v) for v in returned(module)}
    used |= {id(target) for target, _ in module.updates}
    module.inputs = [inp for inp in module.inputs if id(inp.value) in used]


def drop_dead_body_ops(node: LoopNode) -> None:
    """Body ops whose values no store, reduce or scan needs go."""
    defs = {id(op.result): op for op in node.body if op.result is not None}
    live: set[int] = set()
    stack = [op for op in node.body if op.result is None or op.op in ("reduce", "scan")]
    while stack:
        op = stack.pop()
        if id(op) in live:
            continue
        live.add(id(op))
        stack.extend(defs[id(v)] for v in op.operands if id(v) in defs)
    node.body = [op for op in node.body if id(op) in live]


def ancestors(module: Module, value: Value) -> list[int]:
    """Indices (into `items`) of the items `value` depends on, its own producer
    excluded, in program order."""
    all_items = items(module)
    producer = {id(r): k for k, item in enumerate(all_items) for r in item.results}
    seen: set[int] = set()
    stack = [v for v in reads(all_items[producer[id(value)]])] if id(value) in producer else []
    while stack:
        k = producer.get(id(stack.pop()))
        if k is None or k in seen:
            continue
        seen.add(k)
        stack.extend(reads(all_items[k]))
    return sorted(seen)
