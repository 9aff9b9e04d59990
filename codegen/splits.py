"""Split reductions as the fusion stage records them: a backend that runs a
reduction over few long rows as two kernels (partials, then their combine)
gives the scheduler its rule (`split_rule`), and writes each such kernel's
chunks per row as its `split` attribute (`split_reductions`), so that the
split is in the fusion dump, not hidden in codegen.

The C++ backend has no entry: it chunks every pass of a few-long-row kernel
across its threads inside one kernel (cpp_split.py), multi-pass plans
included, so it needs neither the scheduler's rule nor a second kernel."""

from __future__ import annotations

import dataclasses

from ir_text import Module
from scheduler import SplitRule

from . import triton, triton_split
from .kernel_plan import module_plans

# backend -> (its rule for the scheduler, the chunks per row it picks for a plan or None)
SPLITTERS = {"triton": (triton_split.rule, triton.split_count)}


def split_rule(backend: str) -> SplitRule | None:
    """Which reductions the backend splits into two kernels (None: none)."""
    entry = SPLITTERS.get(backend)
    return entry[0]() if entry else None


def split_reductions(module: Module, backend: str) -> Module:
    """The fusion pass's module with a `split` attribute on every kernel the
    backend splits. It runs on fresh fusion plans only: a re-fed fusion or
    memplan dump keeps what it says (a person may add, change or remove
    the attribute)."""
    entry = SPLITTERS.get(backend)
    if entry is None:
        return module
    counts = {}
    for kernel, plan in module_plans(module):
        count = entry[1](plan)
        if count is not None:
            counts[kernel.name.name] = count
    kernels = [
        (
            dataclasses.replace(k, attrs=k.attrs + (("split", counts[k.name.name]),))
            if k.name.name in counts
            else k
        )
        for k in module.kernels
    ]
    return dataclasses.replace(module, kernels=kernels)
