"""The builds of a generated module's Triton kernels (build_pool.py): one
job per distinct launch of `call`, on the argument types, sizes and config
that `call` passes, so that the module's first call finds every kernel in
Triton's cache. An alias kernel (triton_dedupe.py) is built under the name
of the function it runs. A split reduction's two launches are left to the
first call."""

from __future__ import annotations

import re

from ir_text import Module

from .build_pool import BuildJob, tensor_arg
from .kernel_plan import module_plans
from .triton import launch_spec
from .triton_body import assert_options, checks_indices

# `k9 = k6  # ...`: an alias line of the kernels' section (triton_dedupe.py).
_ALIAS = re.compile(r"^([A-Za-z_]\w*) = ([A-Za-z_]\w*)  # ", re.M)


def launch_jobs(module: Module, code: str, device: str) -> list[BuildJob]:
    """The jobs for the memplan-stage `module`'s kernels in `code`, its
    output_code.py text (none on the CPU, whose interpreter builds nothing)."""
    if device == "cpu":
        return []
    plans = {kernel.name.name: plan for kernel, plan in module_plans(module)}
    runs = dict(_ALIAS.findall(code))
    jobs = {}
    for line in module.wrapper:
        if line.op != "launch":
            continue
        plan = plans[line.kernel.name]
        spec = launch_spec(plan)
        if spec is None:
            continue
        config, extents, grid = spec
        dtypes = [tensor_arg(v.type.dtype) for v in line.operands + line.results]
        args = tuple(dtypes + [None] * checks_indices(plan) + extents)
        meta = tuple(sorted({**config.kwargs(), **assert_options(plan)}.items()))
        job = BuildJob(code, runs.get(plan.name, plan.name), args, grid, meta)
        jobs.setdefault(job, None)
    return list(jobs)
