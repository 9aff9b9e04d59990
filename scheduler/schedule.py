"""The schedule pass (dead-node elimination, derived facts) and the check of a
re-fed schedule dump: printed facts are recomputed, never trusted."""

from __future__ import annotations

import dataclasses

from ir_text import Module, Symbol, error_at, render_index, value_names

from .deps import compute_facts
from .order import live_nodes


def schedule(module: Module, ctx=None) -> Module:
    out = dataclasses.replace(module, stage="schedule", nodes=live_nodes(module))
    out.facts = compute_facts(out)
    return out


def _fact_text(fact, names) -> str:
    def dep(d):
        return f"{names[id(d.buffer)]}[{'*' if d.index is None else render_index(d.index)}]"

    users = ", ".join("@" + u.name if isinstance(u, Symbol) else names[id(u)] for u in fact.users)
    reads = ", ".join(dep(d) for d in fact.reads)
    return f"group {fact.group} reads [{reads}] users [{users}]"


def check_facts(module: Module) -> None:
    """Every schedule fact must equal the one recomputed from the loop nodes."""
    names = value_names(module)
    printed = module.facts or []
    expected = compute_facts(module)
    for got, want in zip(printed, expected):
        if got.node is not want.node:
            raise error_at(
                got.pos,
                f"[schedule-order] fact for {names[id(got.node)]} where {names[id(want.node)]} was expected",
            )
        got_text, want_text = _fact_text(got, names), _fact_text(want, names)
        if got_text != want_text:
            raise error_at(
                got.pos,
                f"[stale-fact] facts of {names[id(got.node)]} do not match the loop nodes: "
                f"recomputed {want_text}",
            )
    if len(printed) < len(expected):
        missing = expected[len(printed)].node
        raise error_at(missing.pos, f"[schedule-order] the schedule has no fact for {names[id(missing)]}")
    if len(printed) > len(expected):
        raise error_at(
            printed[len(expected)].pos, "[schedule-order] a fact for a node that is not in the module"
        )
