"""Ordering and dead-node elimination."""

from __future__ import annotations

from ir_text import Module

from .deps import node_reads, returned


def live_nodes(module: Module) -> list:
    """Nodes that some output depends on, in program order (already topological:
    the text format defines every buffer before its first use)."""
    by_id = {id(r): n for n in module.nodes for r in n.results}
    live: set[int] = set()
    stack = [id(v) for v in returned(module)]
    while stack:
        key = stack.pop()
        node = by_id.get(key)
        if node is None or id(node) in live:
            continue
        live.add(id(node))
        stack.extend(id(d.buffer) for d in node_reads(node))
    return [n for n in module.nodes if id(n) in live]
