"""Memory planning: which buffers a kernel must write to memory, and when each
is allocated, reused, written in place and freed.

As Inductor's wrapper: a buffer all of whose users sit in its own kernel
never leaves the kernel (it is not allocated); others are allocated just
before the kernel that writes them and freed after their last reader. An
extern call allocates its own results (the `extern` line defines them).
A kernel output first takes the storage of an input it reads for the last
time (in place), else a freed buffer's from the pool, else a new allocation.
The check of an edited plan is in `memplan_check.py`.
"""

from __future__ import annotations

import dataclasses

from ir_text import Module, WrapperLine

from .deps import RETURN, node_reads, returned, users
from .lifetimes import InPlaceRules, extern_buffers, is_input, poolable, reuse_key


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
        r
        for v in kernel.nodes
        for r in by_id[id(v)].results
        if any(u is RETURN or id(u.result) not in inside for u in user_map[id(r)])
    )
    return KernelIO(tuple(ins), outs)


def extern_kernels(module: Module) -> frozenset[str]:
    """The names of the kernels that hold an extern call (and nothing else)."""
    externs = {id(n.result) for n in module.nodes if n.kind == "extern"}
    return frozenset(k.name.name for k in module.kernels if any(id(v) in externs for v in k.nodes))


def plan_memory(module: Module, ctx=None) -> Module:
    user_map = users(module)
    ios = [kernel_io(module, k, user_map) for k in module.kernels]
    last_reader: dict[int, int] = {}
    for n, io in enumerate(ios):
        for v in io.inputs:
            last_reader[id(v)] = n
    outputs = {id(v) for v in returned(module)}
    externs = extern_kernels(module)
    aliased = extern_buffers(module, aliasing_only=True)
    rules = InPlaceRules(module)
    pool: dict[tuple, list] = {}  # reuse key -> freed buffers, last freed at the end
    free_line: dict[int, WrapperLine] = {}
    lines: list[WrapperLine] = []
    for n, (kernel, io) in enumerate(zip(module.kernels, ios)):
        dying = [
            v
            for v in io.inputs
            if last_reader[id(v)] == n and id(v) not in outputs and not is_input(module, v)
        ]
        if kernel.name.name in externs:
            lines.append(WrapperLine("extern", kernel.name, io.inputs, io.outputs))
        else:
            for v in io.outputs:
                old = _in_place_input(rules, kernel, v, dying)
                if old is not None:
                    dying.remove(old)
                else:
                    stack = pool.get(reuse_key(module, v), [])
                    old = stack.pop() if stack else None
                    if old is not None:
                        del free_line[id(old)]
                lines.append(
                    WrapperLine("reuse", None, (old,), (v,))
                    if old is not None
                    else WrapperLine("alloc", None, (v,))
                )
            lines.append(WrapperLine("launch", kernel.name, io.inputs, io.outputs))
        for v in dying:
            free_line[id(v)] = WrapperLine("free", None, (v,))
            lines.append(free_line[id(v)])
            if poolable(module, v, aliased):
                pool.setdefault(reuse_key(module, v), []).append(v)
    # A buffer whose storage went to a later one is not freed (Inductor's FreeIfNotReusedLine).
    kept = {id(line) for line in free_line.values()}
    return dataclasses.replace(
        module, stage="memplan", wrapper=[x for x in lines if x.op != "free" or id(x) in kept]
    )


def _in_place_input(rules: InPlaceRules, kernel, new, dying: list):
    """An input the kernel reads for the last time and may overwrite with `new`,
    or None. As Inductor's in-place update, the node writing `new` must read it."""
    read = {id(d.buffer) for d in node_reads(rules.by_id[id(new)])}
    for old in dying:
        if id(old) in read and rules.error(kernel, old, new, str) is None:
            return old
    return None
