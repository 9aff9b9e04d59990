"""The record of one backend: everything the pipeline, the scheduler and the
wrapper need to know of it, so that none of them compares backend names.
A new backend is new files plus one entry in backends.py's table.

The wrapper (`output_code.py`, wrapper.py) is backend-neutral; a backend
supplies the lines its kernels need: imports after the header, the kernels'
section, and the statements of `call` that launch one kernel. The optional
steps are the backend's own parts of the pipeline's stages, each named in
the stage table (tirc/pipeline.py); a backend without one skips it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ir_text import Module
from scheduler import Target

from .kernel_plan import KernelPlan
from .pyformat import py_string


@dataclass(frozen=True)
class Backend:
    name: str
    # The devices its code runs on.
    devices: tuple[str, ...]
    # What the scheduler reads: loop nests per kernel, launch configs, splits.
    target: Target
    # The body ops its renderer knows (every op of ir_text's BODY_OPS, for a complete backend).
    ops: frozenset[str]
    # device -> the module's lines after `from codegen import runtime`.
    header: Callable[[str], list[str]]
    # (plans, prebuild) -> the kernels' section of the module; `prebuild`
    # asks for compiling to start as soon as the source exists.
    kernels: Callable[[list[KernelPlan], bool], list[str]]
    # (plan, argument names, device) -> the lines of `call` that run one kernel.
    launch: Callable[[KernelPlan, list[str], str], list[str]]
    # lower.select-externs: (module, device) -> the module with library calls chosen by timing.
    select_externs: Callable[[Module, str], Module] | None = None
    # fusion.split-reductions: plan -> chunks per row of a reduction it splits, or None.
    split_count: Callable[[KernelPlan], int | None] | None = None
    # memplan.tune-launches: (module, device, build pool or None) -> the module
    # with launch configs pinned by timing.
    tune_launches: Callable[..., Module] | None = None
    # plans -> start compiling the kernels early (fusion's plans, as memplan hands them on).
    prebuild: Callable[[list[KernelPlan]], None] | None = None
    # (memplan module, output_code text, device) -> the jobs that build its kernels
    # in a pool of worker processes (kernel_builds.py); None: it has none.
    build_jobs: Callable[[Module, str, str], list] | None = None
    # device -> what timed choices depend on beyond the program ("" when nothing is timed).
    tuning_target: Callable[[str], str] = lambda device: ""
    # The module global through which `call` launches a kernel, as
    # `launcher(kernel, ...)`; None: `call` calls each kernel itself. The
    # profiler (tirc/profiling.py) times each launch there.
    launcher: str | None = None


def site_names(plan: KernelPlan) -> str:
    """The ops whose values a kernel checks, by the site it records with an
    error (plan.sites), as a tuple of Python strings for
    runtime.check_values: `("aten.embedding.default at model.py:16",)`."""
    names = [py_string(site) for _, site in plan.sites]
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
