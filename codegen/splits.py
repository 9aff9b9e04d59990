"""Split reductions as the fusion stage records them: a backend that runs a
reduction over few long rows as two kernels (partials, then their combine)
states its rule in its target (`Target.split`, which the fusion pass keeps
such reductions one pass by) and the chunks per row it picks for a plan
(`Backend.split_count`); `split_reductions` writes each such kernel's
count as its `split` attribute, so that the split is in the fusion dump,
not hidden in codegen.

The C++ backend has neither: it chunks every pass of a few-long-row kernel
across its threads inside one kernel (cpp_split.py), multi-pass plans
included, so it needs neither the scheduler's rule nor a second kernel."""

from __future__ import annotations

import dataclasses

from ir_text import Module

from .backends import backend_named
from .kernel_plan import module_plans


def split_reductions(module: Module, backend: str) -> Module:
    """The fusion pass's module with a `split` attribute on every kernel the
    backend splits. It runs on fresh fusion plans only: a re-fed fusion or
    memplan dump keeps what it says (a person may add, change or remove
    the attribute)."""
    count_of = backend_named(backend).split_count
    if count_of is None:
        return module
    counts = {}
    for kernel, plan in module_plans(module):
        count = count_of(plan)
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
