"""Buffer lifetimes for the wrapper: storage sizes and reuse keys, which
buffers may share storage through an extern call, and when a kernel may write
an output over one of its inputs (in place).

Shared by the planner (`memplan.py`) and the check of a re-fed plan
(`memplan_check.py`), so both apply the same rules.
"""

from __future__ import annotations

import sympy

from ir_text import BufferType, Module, resolve_target, to_torch

from .deps import node_reads, returned, write_index


def storage_bytes(t: BufferType) -> int:
    """Bytes a buffer's layout reaches: 1 + sum((size-1)*stride) elements (0 when empty)."""
    return t.storage_size * to_torch(t.dtype).itemsize


def reuse_key(module: Module, v) -> tuple[str, str, int]:
    """As Inductor's reuse pool: storage is passed on only between equal (device, dtype, bytes)."""
    return dict(module.options).get("device", "cpu"), v.type.dtype, storage_bytes(v.type)


def describe_key(key: tuple[str, str, int]) -> str:
    device, dtype, size = key
    return f"{dtype} on {device}, {size} bytes"


def is_input(module: Module, v) -> bool:
    return any(i.value is v for i in module.inputs)


def frees_inputs(module: Module) -> bool:
    """Whether the program owns its inputs (the `free_inputs` option): its
    memory plan may then free one after its last use, which drops the
    program's reference; an input's storage is never reused all the same
    (the caller may hold it elsewhere: a forward's output saved for the
    backward)."""
    return dict(module.options).get("free_inputs") is True


def freeable(module: Module, v, outputs: set[int], updated: set[int]) -> bool:
    """Whether the plan may free `v` after its last reader: an intermediate
    buffer, or an input of a program that owns its inputs, but never an
    output or the target of an update."""
    if id(v) in outputs:
        return False
    if is_input(module, v):
        return frees_inputs(module) and id(v) not in updated
    return True


def extern_may_alias(node) -> bool:
    """Whether an extern call may return a view of an argument: its ATen schema
    marks a result as an alias (an unknown op is assumed to)."""
    overload = resolve_target(node.target)
    if overload is None:
        return True
    return any(r.alias_info is not None for r in overload._schema.returns)


def extern_buffers(module: Module, aliasing_only: bool = False) -> frozenset[int]:
    """Ids of the buffers extern calls read or return (only of the calls that may alias, if asked)."""
    out = set()
    for node in module.nodes:
        if node.kind == "extern" and (not aliasing_only or extern_may_alias(node)):
            out.update(id(d.buffer) for d in node_reads(node))
            out.update(id(r) for r in node.results)
    return frozenset(out)


def poolable(module: Module, v, aliased: frozenset[int]) -> bool:
    """A freed buffer whose storage a later buffer may take: not a program
    input, not returned, and not possibly aliased by an extern call's result."""
    kept = {id(o) for o in returned(module)}
    return not is_input(module, v) and id(v) not in kept and id(v) not in aliased


class InPlaceRules:
    """When a kernel may write an output over one of its inputs; built once per module."""

    def __init__(self, module: Module):
        self.m = module
        self.by_id = {id(n.result): n for n in module.nodes}
        # A non-aliasing extern call's result is a fresh tensor in its planned
        # layout, like an allocated buffer; only calls that may return a view
        # of an argument make their buffers unsafe to write over.
        self.extern_ids = extern_buffers(module, aliasing_only=True)
        self.kept = {id(o) for o in returned(module)}

    def error(self, kernel, old, new, name) -> str | None:
        """Why `kernel` may not write `new` over `old` in place, or None when it may.

        Safe also for fused kernels that loop over the data several times: only
        pointwise nodes, identical types, every load of `old` at the index where
        `new`'s node writes, over the same ranges, by that node or one before it.
        """
        nodes = [self.by_id[id(v)] for v in kernel.nodes]
        label = f"@{kernel.name.name}"
        other = next((n for n in nodes if n.kind != "pointwise"), None)
        if other is not None:
            return f"{label} holds a {other.kind} node ({name(other.result)}); only pointwise kernels write in place"
        if is_input(self.m, old) or id(old) in self.kept:
            return f"{name(old)} is a program input or output"
        if id(old) in self.extern_ids or id(new) in self.extern_ids:
            return f"{name(old)} or {name(new)} is an argument or result of an extern call that may alias"
        if old.type != new.type:
            return f"{name(old)} and {name(new)} have different types or strides"
        at = next((k for k, n in enumerate(nodes) if n.result is new), None)
        if at is None:
            return f"{label} does not compute {name(new)}"
        producer, want = nodes[at], write_index(nodes[at])
        for k, node in enumerate(nodes):
            for dep in node_reads(node):
                if dep.buffer is not old:
                    continue
                if k > at:
                    return f"{name(node.result)} reads {name(old)} after {name(new)} is written"
                if node.ranges != producer.ranges or not _same_index(dep.index, want):
                    return f"{name(node.result)} reads {name(old)} elsewhere than {name(new)} is written"
        return None


def _same_index(a, b) -> bool:
    return a == b or sympy.expand(a - b) == 0
