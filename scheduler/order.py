"""Ordering and dead-node elimination."""

from __future__ import annotations

from ir_text import Module

from .deps import node_reads


def live_nodes(module: Module) -> list:
    """Nodes that some output depends on, in program order (already topological:
    the text format defines every buffer before its first use)."""
    by_id = {id(n.result): n for n in module.nodes}
    live: set[int] = set()
    stack = [id(v) for v in module.outputs]
    while stack:
        key = stack.pop()
        if key in live or key not in by_id:
            continue
        live.add(key)
        stack.extend(id(d.buffer) for d in node_reads(by_id[key]))
    return [n for n in module.nodes if id(n.result) in live]
