"""Kernel builds in worker processes, for the backends that have them
(build_pool.py; the Triton backend's jobs: triton_builds.py). The
pipeline asks for a pool per compile, hands it to the launch tuner, and
builds the generated module's kernels with it before loading the module."""

from __future__ import annotations

from ir_text import Module

from .backends import backend_named
from .build_pool import BuildPool, workers_wanted


def build_pool(backend: str, device: str) -> BuildPool | None:
    """A pool for a compile's kernel builds; None where the backend builds
    nothing in workers, or no workers are wanted (build_pool.workers_wanted)."""
    if backend_named(backend).build_jobs is None:
        return None
    workers = workers_wanted(device)
    return BuildPool(workers) if workers > 0 else None


def build_kernels(module: Module, code: str, backend: str, device: str, pool: BuildPool) -> None:
    """Build the kernels of `code`, the output_code.py of the memplan-stage
    `module`, in the pool's workers, and wait for them."""
    jobs = backend_named(backend).build_jobs(module, code, device)
    pool.submit(jobs)
    pool.wait(jobs)
