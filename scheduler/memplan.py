"""Memory planning: which buffers a kernel must write to memory, when each is
allocated and freed, and the check of an edited plan.

As Inductor's wrapper: a buffer all of whose users sit in its own kernel
never leaves the kernel (it is not allocated); others are allocated just
before the kernel that writes them and freed after their last reader.
"""

from __future__ import annotations

import dataclasses

from ir_text import Module, WrapperLine, error_at, value_names

from .deps import RETURN, node_reads, users


@dataclasses.dataclass(frozen=True)
class KernelIO:
    inputs: tuple  # Values read from outside the kernel, in order of first read
    outputs: tuple  # buffers the kernel writes to memory, in program order


def kernel_io(module: Module, kernel, user_map=None) -> KernelIO:
    user_map = user_map if user_map is not None else users(module)
    inside = {id(v) for v in kernel.nodes}
    by_id = {id(n.result): n for n in module.nodes}
    ins, seen = [], set()
    for v in kernel.nodes:
        for dep in node_reads(by_id[id(v)]):
            key = id(dep.buffer)
            if key not in inside and key not in seen:
                seen.add(key)
                ins.append(dep.buffer)
    outs = tuple(
        v for v in kernel.nodes if any(u is RETURN or id(u.result) not in inside for u in user_map[id(v)])
    )
    return KernelIO(tuple(ins), outs)


def plan_memory(module: Module, ctx=None) -> Module:
    user_map = users(module)
    ios = [kernel_io(module, k, user_map) for k in module.kernels]
    last_reader: dict[int, int] = {}
    for n, io in enumerate(ios):
        for v in io.inputs:
            last_reader[id(v)] = n
    outputs = {id(v) for v in module.outputs}
    lines: list[WrapperLine] = []
    for n, (kernel, io) in enumerate(zip(module.kernels, ios)):
        lines += [WrapperLine("alloc", None, (v,)) for v in io.outputs]
        lines.append(WrapperLine("launch", kernel.name, io.inputs, io.outputs))
        for v in io.inputs:
            if last_reader[id(v)] == n and id(v) not in outputs and _is_buffer(module, v):
                lines.append(WrapperLine("free", None, (v,)))
    return dataclasses.replace(module, stage="memplan", wrapper=lines)


def _is_buffer(module: Module, v) -> bool:
    return all(i.value is not v for i in module.inputs)


def check_memplan(module: Module) -> None:
    """Simulate the wrapper: launches match their kernels, no use before
    allocation or after free, every kernel once and in order, outputs live."""
    names = value_names(module)
    user_map = users(module)
    live = {id(i.value) for i in module.inputs}
    allocated: set[int] = set()
    computed = set(live)
    freed: set[int] = set()
    launched = []
    kernels = {k.name.name: k for k in module.kernels}
    for line in module.wrapper:
        if line.op == "alloc":
            v = line.operands[0]
            if id(v) in allocated or not _is_buffer(module, v):
                raise error_at(line.pos, f"[alloc-twice] {names[id(v)]} is already allocated")
            allocated.add(id(v))
            live.add(id(v))
        elif line.op == "free":
            v = line.operands[0]
            if id(v) not in live or not _is_buffer(module, v):
                raise error_at(line.pos, f"[free-dead] {names[id(v)]} is not a live buffer")
            if any(o is v for o in module.outputs):
                raise error_at(line.pos, f"[output-freed] {names[id(v)]} is an output; it must not be freed")
            live.discard(id(v))
            freed.add(id(v))
        else:
            kernel = kernels[line.kernel.name]
            io = kernel_io(module, kernel, user_map)
            label = f"@{kernel.name.name}"
            expected = module.kernels[len(launched)] if len(launched) < len(module.kernels) else None
            if expected is not kernel:
                want = f"@{expected.name.name}" if expected else "no further launch"
                raise error_at(
                    line.pos,
                    f"[launch-order] launch {label} where {want} is next: every kernel is launched "
                    "once, in the order of the fusion section",
                )
            if tuple(map(id, line.operands)) != tuple(map(id, io.inputs)) or tuple(
                map(id, line.results)
            ) != tuple(map(id, io.outputs)):
                want = f"({', '.join(names[id(v)] for v in io.inputs)}) -> ({', '.join(names[id(v)] for v in io.outputs)})"
                raise error_at(line.pos, f"[launch-signature] launch {label} should be {label}{want}")
            for v in io.inputs:
                if id(v) in freed:
                    raise error_at(
                        line.pos, f"[use-after-free] {label} reads {names[id(v)]} after it is freed"
                    )
                if id(v) not in computed:
                    raise error_at(
                        line.pos, f"[use-before-def] {label} reads {names[id(v)]} before it is computed"
                    )
            for v in io.outputs:
                if id(v) not in live:
                    raise error_at(
                        line.pos, f"[unallocated-write] {label} writes {names[id(v)]}, which is not allocated"
                    )
                computed.add(id(v))
            launched.append(kernel)
    if len(launched) < len(module.kernels):
        missing = module.kernels[len(launched)]
        raise error_at(missing.pos, f"[launch-order] @{missing.name.name} is never launched")
    returned = {id(o) for o in module.outputs}
    for line in module.wrapper:
        v = line.operands[0] if line.op == "alloc" else None
        if v is not None and id(v) in live and id(v) not in returned:
            raise error_at(line.pos, f"[never-freed] {names[id(v)]} is allocated but never freed")
