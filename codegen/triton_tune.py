"""Choosing Triton launch configs by timing them, at compile time.

A kernel whose heuristic offers several configs (triton_configs.py) runs with
each on scratch buffers of its parameters' layouts (random floats; integers
and booleans zero, so a gather stays in bounds); the fastest wins and is
pinned as the kernel's `triton_config` attribute. The memplan dump therefore
records it, output_code.py launches it alone, and a re-fed dump never times
anything: the dump fully determines the code.

The configs are timed in ROUNDS interleaved rounds (every config once per
round, in order) and each keeps its median, so that a drift of the GPU's
clocks over the timing favours none. The choice is deterministic given the
timings: a later config wins only when it beats every earlier one by more
than MARGIN, so noise keeps the heuristic's.
Winners are cached as JSON under `TIRC_CACHE_DIR/triton-autotune/` (and in
the remote cache, when one is configured: timed_records.py), keyed by the
kernel's code less its names (triton_dedupe.py: the same epilogue in every
block of a network is timed once), its parameters' layouts, the configs
offered, the GPU and Triton's version, and written atomically under a
filelock, so compiling the same kernel again (in this process, another, or
on another machine sharing the remote cache) reads the winner back. With a
build pool (build_pool.py), every config still to be timed is compiled in
its workers first, many at a time; the timing itself stays one kernel
after another.

Timing needs a GPU: on the CPU (the interpreter) and with TIRC_AUTOTUNE=0
kernels keep the heuristic's config. Split reductions (triton_split.py) have
one config and are never timed. A kernel with a `triton_config` already
(a re-fed or hand-edited dump) is left as it is.
"""

from __future__ import annotations

import os
import statistics

import torch

from ir_text import Module, to_torch
from scheduler import kernel_io, users

from .build_pool import BuildJob, tensor_arg
from .timed_records import recorded_choice, timed_record
from .kernel_plan import module_plans
from .loader import load_output_code
from . import runtime, triton_dedupe, triton_shared_cache
from .triton import candidate_configs, render_kernels
from .triton_body import assert_options, checks_indices
from .triton_configs import Config, LaunchConfig
from .triton_runtime import interpreted

MARGIN = 0.01
# Each config timed once per round, its median kept: timed once each, one
# after the other, configs were misranked (measured: docs/design-notes.md,
# "Triton kernels").
ROUNDS = 3
ATTRIBUTE = "triton_config"
KIND = "triton-autotune"


def enabled(device: str) -> bool:
    """Whether compiling for this device times configs: a real GPU."""
    if device == "cpu" or os.environ.get("TIRC_AUTOTUNE") == "0":
        return False
    return not interpreted() and torch.cuda.is_available()


def triton_target(device: str) -> str:
    """What tuned configs depend on beyond the program: the GPU and Triton's
    version ("" when nothing is timed). Caches of compiled code add it to
    their keys."""
    if not enabled(device):
        return ""
    import triton

    return f"{torch.cuda.get_device_name()} triton {triton.__version__}"


def tune_launches(module: Module, device: str, timer=None, builds=None) -> Module:
    """Pin the fastest config of every kernel that has a choice to make.
    `timer(run) -> milliseconds` (default: Triton's do_bench median) is for
    tests, which tune through the interpreter with made-up times. `builds`
    (a build_pool.BuildPool) compiles every config still to be timed in its
    workers first, while the configs of earlier kernels are being timed."""
    if timer is None:
        if not enabled(device):
            return module
        timer = _do_bench
        triton_shared_cache.install()
    user_map = users(module)
    timings = []
    for kernel, plan in module_plans(module):
        if ATTRIBUTE in dict(kernel.attrs):
            continue
        config = candidate_configs(plan)
        # A split reduction (two kernels and a workspace) has one config: nothing to time.
        if len(config.configs) < 2 or config.kind == "split":
            continue
        params = kernel_io(module, kernel, user_map)
        timings.append((kernel, _Timing(plan, config, params.inputs + params.outputs, device)))
    if builds is not None:
        # Kernels with the same code and layouts share a record: the first times it.
        first = {tuple(t.parts): t for _, t in reversed(timings)}
        builds.submit(job for t in first.values() if t.recorded() is None for job in t.jobs())
    for kernel, timing in timings:
        best = timing.config.configs[timing.winner(timer, builds)]
        pinned = (best.xblock, best.rblock or 0, best.num_warps, best.num_stages)
        kernel.attrs = kernel.attrs + ((ATTRIBUTE, pinned),)
    return module


def choose(times: list[float]) -> int:
    """The index of the config to run: the first, unless a later one beats
    every earlier one by more than MARGIN (timing noise never flips it)."""
    best = 0
    for k, t in enumerate(times):
        if t < times[best] * (1 - MARGIN):
            best = k
    return best


class _Timing:
    """One kernel's configs to time, and the key of its record: the kernel's
    code less its names (triton_dedupe.py), its parameters' layouts, the
    configs, the GPU and Triton's version."""

    def __init__(self, plan, config: LaunchConfig, values, device: str):
        import triton

        self.plan, self.config, self.values, self.device = plan, config, values, device
        self.source, kernel = _kernel_source(plan)
        layouts = [(v.type.shape, v.type.strides, v.type.dtype) for v in values]
        gpu = torch.cuda.get_device_name() if device != "cpu" else "cpu"
        code = triton_dedupe.code_key(plan, kernel) or kernel
        self.parts = [code, repr(layouts), repr(config.configs), gpu, triton.__version__]

    def recorded(self) -> dict | None:
        return recorded_choice(KIND, self.parts, self.valid)

    def valid(self, record: dict) -> bool:
        return type(record.get("winner")) is int and 0 <= record["winner"] < len(self.config.configs)

    def extents(self) -> list[int]:
        config = self.config
        return [config.xnumel] + ([] if config.rnumel is None else [config.rnumel])

    def jobs(self) -> list[BuildJob]:
        """A build of the kernel with each config, on the launch's argument types."""
        dtypes = [tensor_arg(v.type.dtype) for v in self.values]
        args = tuple(dtypes + [None] * len(_error_slot(self.plan, "cuda")) + self.extents())
        options = assert_options(self.plan)
        return [
            BuildJob(
                self.source,
                self.plan.name,
                args,
                (self.config.programs(c),),
                tuple(sorted({**c.kwargs(), **options}.items())),
            )
            for c in self.config.configs
        ]

    def winner(self, timer, builds) -> int:
        return timed_record(KIND, self.parts, lambda: self._measure(timer, builds), self.valid)["winner"]

    def _measure(self, timer, builds) -> dict:
        if builds is not None:
            builds.wait(self.jobs())
        plan, config, device = self.plan, self.config, self.device
        kernel = getattr(load_output_code(self.source, "tune"), plan.name)
        args = [_scratch(v.type, device) for v in self.values] + _error_slot(plan, device) + self.extents()
        options = assert_options(plan)
        runs = [_runner(kernel, (config.programs(c),), c, args, options) for c in config.configs]
        rounds = [[_time(run, timer) for run in runs] for _ in range(ROUNDS)]
        times = [statistics.median(per_config) for per_config in zip(*rounds)]
        return {
            "kernel": plan.name,
            "configs": [c.meta() for c in config.configs],
            "rounds_ms": rounds,
            "times_ms": times,
            "winner": choose(times),
        }


def _kernel_source(plan) -> tuple[str, str]:
    """A module holding the kernel alone, as output_code.py renders it, and
    the kernel's own source."""
    helpers, (kernel,) = render_kernels([plan])
    lines = [
        "import triton",
        "import triton.language as tl",
        "",
        "from codegen import triton_runtime",
        "",
        *helpers,
        "",
        "",
        kernel,
    ]
    return "\n".join(lines) + "\n", kernel


def _scratch(buffer_type, device: str) -> torch.Tensor:
    """A flat buffer covering the layout: kernels index their storage."""
    size = max(buffer_type.storage_size, 1)
    dtype = to_torch(buffer_type.dtype)
    if dtype.is_floating_point:
        return torch.randn(size, device=device).to(dtype)
    return torch.zeros(size, dtype=dtype, device=device)


def _error_slot(plan, device: str) -> list:
    """The `p_error` argument of a kernel that checks indices (as `call`
    passes it); the scratch buffers' indices are 0, always in range."""
    if not checks_indices(plan):
        return []
    return [runtime.error_tensor() if device == "cpu" else None]


def _runner(kernel, grid: tuple[int], config: Config, args, options: dict):
    """A launch of `kernel` on `grid` with `config` (and the kernel's assert
    options), compiled here; None for a config that cannot compile or
    launch (it never wins)."""
    meta = {**config.kwargs(), **options}

    def run():
        kernel[grid](*args, **meta)

    try:
        run()
    except Exception:  # noqa: BLE001 - Triton raises many kinds (out of resources, ...)
        return None
    return run


def _time(run, timer) -> float:
    if run is None:
        return float("inf")
    try:
        return float(timer(run))
    except Exception:  # noqa: BLE001 - as _runner: a launch that fails never wins
        return float("inf")


def _do_bench(run) -> float:
    from triton.testing import do_bench

    return do_bench(run, warmup=5, rep=10, return_mode="median")
