"""Memory planning: which buffers a kernel must write to memory, when each is
allocated and freed, and the check of an edited plan.

As Inductor's wrapper: a buffer all of whose users sit in its own kernel
never leaves the kernel (it is not allocated); others are allocated just
before the kernel that writes them and freed after their last reader. An
extern call allocates its own results (the `extern` line defines them).
"""

from __future__ import annotations

import dataclasses

from ir_text import Module, WrapperLine, error_at, value_names

from .deps import RETURN, node_reads, returned, users


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
    lines: list[WrapperLine] = []
    for n, (kernel, io) in enumerate(zip(module.kernels, ios)):
        if kernel.name.name in externs:
            lines.append(WrapperLine("extern", kernel.name, io.inputs, io.outputs))
        else:
            lines += [WrapperLine("alloc", None, (v,)) for v in io.outputs]
            lines.append(WrapperLine("launch", kernel.name, io.inputs, io.outputs))
        for v in io.inputs:
            if last_reader[id(v)] == n and id(v) not in outputs and _is_buffer(module, v):
                lines.append(WrapperLine("free", None, (v,)))
    return dataclasses.replace(module, stage="memplan", wrapper=lines)


def _is_buffer(module: Module, v) -> bool:
    return all(i.value is not v for i in module.inputs)


class _WrapperSimulation:
    """Runs a wrapper program over buffer states, one method per line kind."""

    def __init__(self, module: Module):
        self.m = module
        self.names = value_names(module)
        self.user_map = users(module)
        self.live = {id(i.value) for i in module.inputs}
        self.computed = set(self.live)
        self.allocated: set[int] = set()
        self.freed: set[int] = set()
        self.launched: list = []
        self.kernels = {k.name.name: k for k in module.kernels}
        self.externs = extern_kernels(module)

    def name(self, v) -> str:
        return self.names[id(v)]

    def alloc(self, line) -> None:
        v = line.operands[0]
        if id(v) in self.allocated or not _is_buffer(self.m, v):
            raise error_at(line.pos, f"[alloc-twice] {self.name(v)} is already allocated")
        self.allocated.add(id(v))
        self.live.add(id(v))

    def free(self, line) -> None:
        v = line.operands[0]
        if id(v) not in self.live or not _is_buffer(self.m, v):
            raise error_at(line.pos, f"[free-dead] {self.name(v)} is not a live buffer")
        if any(o is v for o in returned(self.m)):
            raise error_at(line.pos, f"[output-freed] {self.name(v)} is an output; it must not be freed")
        self.live.discard(id(v))
        self.freed.add(id(v))

    def extern(self, line) -> None:
        kernel = self.kernels[line.kernel.name]
        if kernel.name.name not in self.externs:
            raise error_at(line.pos, f"[extern-line] @{kernel.name.name} is a loop kernel: it is launched")
        for v in line.results:
            if id(v) in self.allocated:
                raise error_at(line.pos, f"[alloc-twice] {self.name(v)} is already allocated")
            self.allocated.add(id(v))
            self.live.add(id(v))
        self.launch(line, extern=True)

    def launch(self, line, extern: bool = False) -> None:
        kernel = self.kernels[line.kernel.name]
        label = f"@{kernel.name.name}"
        if not extern and kernel.name.name in self.externs:
            raise error_at(line.pos, f"[extern-line] {label} is an extern call: write `extern {label}(...)`")
        self._check_order(line, kernel, label)
        io = kernel_io(self.m, kernel, self.user_map)
        if [id(v) for v in line.operands] != [id(v) for v in io.inputs] or [id(v) for v in line.results] != [
            id(v) for v in io.outputs
        ]:
            ins = ", ".join(self.name(v) for v in io.inputs)
            outs = ", ".join(self.name(v) for v in io.outputs)
            raise error_at(
                line.pos, f"[launch-signature] launch {label} should be {label}({ins}) -> ({outs})"
            )
        for v in io.inputs:
            if id(v) in self.freed:
                raise error_at(line.pos, f"[use-after-free] {label} reads {self.name(v)} after it is freed")
            if id(v) not in self.computed:
                raise error_at(
                    line.pos, f"[use-before-def] {label} reads {self.name(v)} before it is computed"
                )
        for v in io.outputs:
            if id(v) not in self.live:
                raise error_at(
                    line.pos, f"[unallocated-write] {label} writes {self.name(v)}, which is not allocated"
                )
            self.computed.add(id(v))
        self.launched.append(kernel)

    def _check_order(self, line, kernel, label: str) -> None:
        n = len(self.launched)
        expected = self.m.kernels[n] if n < len(self.m.kernels) else None
        if expected is not kernel:
            want = f"@{expected.name.name}" if expected else "no further launch"
            raise error_at(
                line.pos,
                f"[launch-order] launch {label} where {want} is next: every kernel is launched "
                "once, in the order of the fusion section",
            )

    def finish(self) -> None:
        if len(self.launched) < len(self.m.kernels):
            missing = self.m.kernels[len(self.launched)]
            raise error_at(missing.pos, f"[launch-order] @{missing.name.name} is never launched")
        kept = {id(o) for o in returned(self.m)}
        for line in self.m.wrapper:
            made = line.operands if line.op == "alloc" else line.results if line.op == "extern" else ()
            for v in made:
                if id(v) in self.live and id(v) not in kept:
                    raise error_at(line.pos, f"[never-freed] {self.name(v)} is allocated but never freed")


def check_memplan(module: Module) -> None:
    """Simulate the wrapper: launches match their kernels, no use before
    allocation or after free, every kernel once and in order, outputs live."""
    sim = _WrapperSimulation(module)
    steps = {"alloc": sim.alloc, "free": sim.free, "launch": sim.launch, "extern": sim.extern}
    for line in module.wrapper:
        steps[line.op](line)
    sim.finish()
