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
from .lifetimes import InPlaceRules, extern_buffers, freeable, is_input, poolable, reuse_key, storage_bytes


@dataclasses.dataclass(frozen=True)
class KernelIO:
    inputs: tuple  # Values read from outside the kernel, in order of first read
    outputs: tuple  # buffers the kernel writes to memory, in program order


def kernel_io(module: Module, kernel, user_map=None, nodes=None) -> KernelIO:
    """What a kernel (or one of its loop nests, `nodes`) reads from memory and
    writes to it: a buffer stays in registers only when all its readers are
    in the loop nest that computes it."""
    user_map = user_map if user_map is not None else users(module)
    nests = [nodes] if nodes is not None else kernel.loop_nests()
    values = [v for nest in nests for v in nest]
    inside = {id(v) for v in values}
    nest_of = {id(v): j for j, nest in enumerate(nests) for v in nest}
    by_id = {id(n.result): n for n in module.nodes}
    ins, seen = [], set()
    for v in values:
        for dep in node_reads(by_id[id(v)]):
            key = id(dep.buffer)
            if key not in inside and key not in seen:
                seen.add(key)
                ins.append(dep.buffer)
    outs = tuple(
        r
        for v in values
        for r in by_id[id(v)].results
        if any(u is RETURN or nest_of.get(id(u.result)) != nest_of[id(v)] for u in user_map[id(r)])
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
    updated = {id(target) for target, _ in module.updates}
    externs = extern_kernels(module)
    rules = InPlaceRules(module)
    lines: list[WrapperLine] = []
    for n, (kernel, io) in enumerate(zip(module.kernels, ios)):
        dying = [v for v in io.inputs if last_reader[id(v)] == n and freeable(module, v, outputs, updated)]
        if kernel.name.name in externs:
            lines.append(WrapperLine("extern", kernel.name, io.inputs, io.outputs))
        else:
            for v in io.outputs:
                # An input's storage may be the caller's too: never written over.
                old = _in_place_input(rules, kernel, v, [d for d in dying if not is_input(module, d)])
                if old is not None:
                    dying.remove(old)
                    lines.append(WrapperLine("reuse", None, (old,), (v,)))
                else:
                    lines.append(WrapperLine("alloc", None, (v,)))
            lines.append(WrapperLine("launch", kernel.name, io.inputs, io.outputs))
            # Buffers passed between the kernel's loop nests and read nowhere else.
            dying += [v for v in io.outputs if id(v) not in last_reader and id(v) not in outputs]
        lines += [WrapperLine("free", None, (v,)) for v in dying]
    return dataclasses.replace(module, stage="memplan", wrapper=_reuse_freed(module, lines))


def _reuse_freed(module: Module, lines: list[WrapperLine]) -> list[WrapperLine]:
    """Allocations that take a freed buffer's storage instead, as Inductor's
    reuse pool: equal (device, dtype, bytes), the last freed first; its
    `free` line goes (Inductor's FreeIfNotReusedLine). A reuse keeps the old
    storage held from its free to the allocation, so it is taken only where
    that does not raise the program's peak memory, and never across an extern
    call (whose workspace the plan does not see)."""
    aliased = extern_buffers(module, aliasing_only=True)
    live = _live_bytes(module, lines)
    peak = max(live, default=0)
    pool: dict[tuple, list[tuple[object, int]]] = {}  # key -> (freed buffer, its free line), last at the end
    out = list(lines)
    dropped: set[int] = set()
    for k, line in enumerate(lines):
        if line.op == "free" and poolable(module, line.operands[0], aliased):
            v = line.operands[0]
            pool.setdefault(reuse_key(module, v), []).append((v, k))
        if line.op != "alloc":
            continue
        v = line.operands[0]
        size = storage_bytes(v.type)
        stack = pool.get(reuse_key(module, v), [])
        for j in range(len(stack) - 1, -1, -1):
            old, freed_at = stack[j]
            # An extern call in between may take workspace the plan cannot see
            # (a convolution's): held storage would add to that peak.
            across_extern = any(x.op == "extern" for x in lines[freed_at:k])
            if not across_extern and max(live[freed_at:k], default=0) + size <= peak:
                del stack[j]
                dropped.add(freed_at)
                out[k] = WrapperLine("reuse", None, (old,), (v,))
                for t in range(freed_at, k):
                    live[t] += size
                break
    return [line for k, line in enumerate(out) if k not in dropped]


def _live_bytes(module: Module, lines: list[WrapperLine]) -> list[int]:
    """Bytes of buffers held after each line (an extern result counted as new
    storage), inputs the program frees counted from the start."""
    held = sum(
        storage_bytes(x.operands[0].type) for x in lines if x.op == "free" and is_input(module, x.operands[0])
    )
    out = []
    for line in lines:
        if line.op == "alloc":
            held += storage_bytes(line.operands[0].type)
        elif line.op == "extern":
            held += sum(storage_bytes(v.type) for v in line.results)
        elif line.op == "free":
            held -= storage_bytes(line.operands[0].type)
        out.append(held)
    return out


def _in_place_input(rules: InPlaceRules, kernel, new, dying: list):
    """An input the kernel reads for the last time and may overwrite with `new`,
    or None. As Inductor's in-place update, the node writing `new` must read
    it, where a node of the kernel computed before it counts as that node
    (Inductor inlines a fused kernel's pointwise nodes into the one that
    writes: bias + GELU writes over the matmul result it reads); rules.error
    says whether each of those reads comes before the write."""
    nodes = [rules.by_id[id(v)] for v in kernel.nodes]
    upto = next((k for k, n in enumerate(nodes) if n.result is new), len(nodes) - 1)
    read = {id(d.buffer) for n in nodes[: upto + 1] for d in node_reads(n)}
    for old in dying:
        if id(old) in read and rules.error(kernel, old, new, str) is None:
            return old
    return None
