"""The check of a wrapper program (a re-fed memplan dump), and its peak memory.

The wrapper is simulated line by line over buffer states and the storages
they hold: `alloc` and a non-aliasing `extern` make new storage, `reuse`
hands a live buffer's storage to a new buffer (the old one is dead from then
on), `free` drops a buffer. Storage lives while a live buffer holds it.
"""

from __future__ import annotations

import itertools

from ir_text import Module, error_at, value_names

from .deps import returned, users
from .lifetimes import (
    InPlaceRules,
    describe_key,
    extern_may_alias,
    frees_inputs,
    is_input,
    reuse_key,
    storage_bytes,
)
from .memplan import extern_kernels, kernel_io


class _WrapperSimulation:
    """Runs a wrapper program over buffer states, one method per line kind."""

    def __init__(self, module: Module):
        self.m = module
        self.names = value_names(module)
        self.user_map = users(module)
        self.returned = {id(o) for o in returned(module)}
        self.live = {id(i.value) for i in module.inputs}
        self.computed = set(self.live)
        self.allocated: set[int] = set()
        self.dead: dict[int, str] = {}  # buffer -> why it may not be read: "freed", or its storage went
        self.in_place: dict[int, tuple] = {}  # reused since the last launch: old -> (line, new)
        self.launched: list = []
        self.kernels = {k.name.name: k for k in module.kernels}
        self.externs = extern_kernels(module)
        self.by_id = {id(n.result): n for n in module.nodes}
        self.in_place_rules = InPlaceRules(module)
        # Storage: each buffer holds a set of storages; inputs' storages have no size (not counted).
        self.fresh = itertools.count()
        self.storage = {id(i.value): frozenset({next(self.fresh)}) for i in module.inputs}
        self.size: dict[int, int] = {}
        # Inputs the program frees are its own (frees_inputs): counted while held.
        for line in module.wrapper:
            v = line.operands[0] if line.op == "free" else None
            if v is not None and is_input(module, v):
                (storage,) = self.storage[id(v)]
                self.size[storage] = storage_bytes(v.type)
        self.peak = sum(self.size.values())

    def name(self, v) -> str:
        return self.names[id(v)]

    def held(self) -> int:
        """Bytes of the storages the live buffers hold now (each storage once)."""
        storages = set().union(*(self.storage[b] for b in self.live))
        return sum(self.size.get(s, 0) for s in storages)

    def _define(self, line, v, storage: frozenset) -> None:
        self.allocated.add(id(v))
        self.live.add(id(v))
        self.storage[id(v)] = storage
        self.peak = max(self.peak, self.held())

    def _new_storage(self, v) -> frozenset:
        s = next(self.fresh)
        self.size[s] = storage_bytes(v.type)
        return frozenset({s})

    def alloc(self, line) -> None:
        v = line.operands[0]
        if id(v) in self.allocated or is_input(self.m, v):
            raise error_at(line.pos, f"[alloc-twice] {self.name(v)} is already allocated")
        self._define(line, v, self._new_storage(v))

    def free(self, line) -> None:
        v = line.operands[0]
        if id(v) not in self.live:
            raise error_at(line.pos, f"[free-dead] {self.name(v)} is not a live buffer")
        if id(v) in self.returned:
            raise error_at(line.pos, f"[output-freed] {self.name(v)} is an output; it must not be freed")
        if is_input(self.m, v) and not frees_inputs(self.m):
            raise error_at(
                line.pos,
                f"[free-input] {self.name(v)} is an input, which the caller holds "
                "(the free_inputs option hands the program its inputs)",
            )
        if is_input(self.m, v) and any(target is v for target, _ in self.m.updates):
            raise error_at(
                line.pos, f"[free-input] {self.name(v)} is updated at the end; it must not be freed"
            )
        self.live.discard(id(v))
        self.dead[id(v)] = "after it is freed"

    def reuse(self, line) -> None:
        old, new = line.operands[0], line.results[0]
        if id(new) in self.allocated or is_input(self.m, new):
            raise error_at(line.pos, f"[alloc-twice] {self.name(new)} is already allocated")
        if id(old) not in self.live or is_input(self.m, old):
            raise error_at(
                line.pos, f"[reuse-dead] {self.name(old)} is not a live buffer; its storage cannot be reused"
            )
        if id(old) in self.returned:
            raise error_at(
                line.pos, f"[output-freed] {self.name(old)} is an output; its storage must not be reused"
            )
        have, want = reuse_key(self.m, old), reuse_key(self.m, new)
        if have != want:
            raise error_at(
                line.pos,
                f"[reuse-mismatch] {self.name(old)} holds {describe_key(have)}; "
                f"{self.name(new)} needs {describe_key(want)}",
            )
        sharing = [b for b in self.live if b != id(old) and self.storage[b] & self.storage[id(old)]]
        if sharing:
            other = self.names[min(sharing, key=lambda b: self.names[b])]
            raise error_at(
                line.pos,
                f"[overlap] {self.name(new)} would share storage with {other}, which is live "
                f"(an extern call may return a view of {self.name(old)})",
            )
        self.live.discard(id(old))
        self.dead[id(old)] = f"after its storage went to {self.name(new)}"
        self.in_place[id(old)] = (line, new)
        self._define(line, new, self.storage[id(old)])

    def extern(self, line) -> None:
        kernel = self.kernels[line.kernel.name]
        if kernel.name.name not in self.externs:
            raise error_at(line.pos, f"[extern-line] @{kernel.name.name} is a loop kernel: it is launched")
        node = self.by_id[id(kernel.nodes[0])]
        args = set().union(*(self.storage.get(id(v), frozenset()) for v in line.operands))
        for v in line.results:
            if id(v) in self.allocated:
                raise error_at(line.pos, f"[alloc-twice] {self.name(v)} is already allocated")
            self._define(line, v, frozenset(args) if extern_may_alias(node) else self._new_storage(v))
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
            if id(v) in self.in_place:
                self._check_in_place(kernel, v, io, extern)
            elif id(v) in self.dead:
                raise error_at(line.pos, f"[use-after-free] {label} reads {self.name(v)} {self.dead[id(v)]}")
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
        self.in_place.clear()
        self.launched.append(kernel)

    def _check_in_place(self, kernel, old, io, extern: bool) -> None:
        """The launch right after `reuse %old as %new` reads %old: it must write %new in place."""
        line, new = self.in_place[id(old)]
        label = f"@{kernel.name.name}"
        if extern:
            why = "an extern call never writes in place"
        elif all(v is not new for v in io.outputs):
            why = f"{label} does not write {self.name(new)}"
        else:
            why = self.in_place_rules.error(kernel, old, new, self.name)
        if why is not None:
            raise error_at(
                line.pos,
                f"[in-place] {label} reads {self.name(old)}, so it must write {self.name(new)} in place: {why}",
            )

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
        for line in self.m.wrapper:
            made = (
                line.operands
                if line.op == "alloc"
                else line.results if line.op in ("extern", "reuse") else ()
            )
            for v in made:
                if id(v) in self.live and id(v) not in self.returned:
                    raise error_at(line.pos, f"[never-freed] {self.name(v)} is allocated but never freed")


def _simulate(module: Module, after_line=None) -> _WrapperSimulation:
    """The simulation run over the whole wrapper; `after_line(sim)` is
    called after each line."""
    sim = _WrapperSimulation(module)
    steps = {
        "alloc": sim.alloc,
        "free": sim.free,
        "reuse": sim.reuse,
        "launch": sim.launch,
        "extern": sim.extern,
    }
    for line in module.wrapper:
        steps[line.op](line)
        if after_line is not None:
            after_line(sim)
    sim.finish()
    return sim


def check_memplan(module: Module) -> None:
    """Simulate the wrapper: launches match their kernels, no use before
    allocation or after free, reuse only of live storage of the same size,
    in place only where legal, every kernel once and in order, outputs live."""
    _simulate(module)


def peak_memory(module: Module) -> int:
    """Most bytes of storage held at once by the wrapper program: allocations,
    reused storage once, extern results, and the inputs it frees (it owns
    them: the free_inputs option) until they are freed; not the other inputs."""
    return _simulate(module).peak


def held_bytes(module: Module) -> list[int]:
    """Bytes of storage the wrapper program holds, as `peak_memory` counts
    them: before its first line, then after each line (so the list is one
    longer than the wrapper, and its maximum is the peak)."""
    held = [_WrapperSimulation(module).held()]
    _simulate(module, lambda sim: held.append(sim.held()))
    return held
