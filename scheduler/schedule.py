"""The schedule pass (inlining, dead-node elimination, derived facts) and the check of a
re-fed schedule dump: printed facts are recomputed, never trusted."""

from __future__ import annotations

import dataclasses

from ir_text import Module, error_at, format_fact, value_names

from .deps import compute_facts
from .inline import inline_pointwise
from .order import live_nodes


def schedule(module: Module, ctx=None) -> Module:
    """The stage's three steps in order (the pipeline runs them by name)."""
    return derive_facts(drop_dead(inline(module, ctx), ctx), ctx)


def inline(module: Module, ctx=None) -> Module:
    """Inline cheap pointwise nodes into readers that cannot fuse with them
    (not with `fusion=false`, which keeps one kernel per lowered node)."""
    if ctx is None or ctx.options.fusion:
        module = inline_pointwise(module)
    return dataclasses.replace(module, stage="schedule", facts=None)


def drop_dead(module: Module, ctx=None) -> Module:
    """Drop the nodes that no output or update needs."""
    return dataclasses.replace(module, stage="schedule", facts=None, nodes=live_nodes(module))


def derive_facts(module: Module, ctx=None) -> Module:
    """The schedule facts, derived from the loop nodes (a re-fed dump's are
    checked against the same derivation)."""
    out = dataclasses.replace(module, stage="schedule")
    out.facts = compute_facts(out)
    return out


def check_facts(module: Module) -> None:
    """Every schedule fact must equal the one recomputed from the loop nodes."""
    names = value_names(module)

    def name_of(v) -> str:
        return names[id(v)]

    printed = module.facts or []
    expected = compute_facts(module)
    for got, want in zip(printed, expected):
        if got.node is not want.node:
            raise error_at(
                got.pos,
                f"[schedule-order] fact for {names[id(got.node)]} where {names[id(want.node)]} was expected",
            )
        got_text, want_text = format_fact(got, name_of), format_fact(want, name_of)
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
