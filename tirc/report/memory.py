"""The memory plan as a timeline: each buffer's lifetime along the wrapper's
lines (alloc, or an extern call's result, or a reuse of another's storage,
to its free or the reuse that hands its storage on), and the bytes held
after each line, counted as the manifest's peak_bytes is
(`scheduler.held_bytes`, the simulation `peak_memory` runs)."""

from __future__ import annotations

from dataclasses import dataclass

from ir_text import Module, storage_span, to_torch
from scheduler import held_bytes


@dataclass
class Lifetime:
    value: object
    start: int  # the wrapper line (0-based) that defines it; -1: an input the program owns
    end: int  # the line that frees it or hands its storage on; len(wrapper): live to the end
    how: str  # alloc, extern, in-place, pool (a reuse of freed storage), input
    reused: object | None = None  # the buffer whose storage it took


def storage_bytes(value) -> int:
    t = value.type
    return storage_span(t.shape, t.strides) * to_torch(t.dtype).itemsize


def _reads_next(wrapper, k: int, old) -> bool:
    """Whether the launch after line k reads `old` (a reuse for an in-place write)."""
    for line in wrapper[k + 1 :]:
        if line.op in ("launch", "extern"):
            return any(v is old for v in line.operands)
    return False


def lifetimes(module: Module) -> list[Lifetime]:
    """The buffers of the wrapper, in the order they come alive."""
    wrapper = module.wrapper
    inputs = {id(i.value) for i in module.inputs}
    live: dict[int, Lifetime] = {}
    out: list[Lifetime] = []
    owned: list[Lifetime] = []  # inputs the program frees, alive from the start

    def born(value, k: int, how: str, reused=None) -> None:
        life = Lifetime(value, k, len(wrapper), how, reused)
        live[id(value)] = life
        out.append(life)

    for k, line in enumerate(wrapper):
        if line.op == "alloc":
            born(line.operands[0], k, "alloc")
        elif line.op == "extern":
            for v in line.results:
                born(v, k, "extern")
        elif line.op == "reuse":
            old, new = line.operands[0], line.results[0]
            if id(old) in live:
                live.pop(id(old)).end = k
            born(new, k, "in-place" if _reads_next(wrapper, k, old) else "pool", old)
        elif line.op == "free":
            v = line.operands[0]
            if id(v) in inputs and id(v) not in live:
                owned.append(Lifetime(v, -1, k, "input"))
            elif id(v) in live:
                live.pop(id(v)).end = k
    return owned + out


def memory_timeline(module: Module) -> tuple[list[int], list[Lifetime]]:
    """(bytes held before the first line and after each, the lifetimes)."""
    return held_bytes(module), lifetimes(module)
