"""Code generation: the backends (their table, backends.py) and the Python wrapper module.

A backend renders kernel plans (kernel_plan.py: the backend-neutral
statements of one fused kernel), which this facade exports for backends
kept elsewhere (tests/backends)."""

from .backend import Backend, site_names
from .backends import BACKENDS, backend_named
from .cache_heal import cache_dir
from .kernel_plan import Compute, KernelPlan, Load, Loop, Reduce, Scan, Store, checked_op, launched_kernels
from . import cache_heal, cache_store, remote_cache
from .kernel_builds import build_kernels, build_pool
from .loader import load_output_code
from .runtime import random_input
from .splits import split_reductions
from .tuning import tuning_target
from .wrapper import generate, prebuild

__all__ = [
    "Backend",
    "site_names",
    "Compute",
    "KernelPlan",
    "Load",
    "Loop",
    "Reduce",
    "Scan",
    "Store",
    "checked_op",
    "launched_kernels",
    "BACKENDS",
    "backend_named",
    "build_kernels",
    "build_pool",
    "cache_dir",
    "cache_heal",
    "cache_store",
    "remote_cache",
    "generate",
    "load_output_code",
    "prebuild",
    "random_input",
    "split_reductions",
    "tuning_target",
]
