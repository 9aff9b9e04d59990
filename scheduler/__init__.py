"""Dependencies, ordering, fusion and memory planning, with the checks of re-fed dumps."""

from .deps import compute_facts, node_group, node_reads, users, write_index
from .factor import factor_reductions
from .fusion import fuse, kernel_attrs
from .iteration import KernelSpace, Refused, kernel_space
from .lifetimes import frees_inputs
from .memplan import KernelIO, extern_kernels, kernel_io, plan_memory
from .memplan_check import check_memplan, held_bytes, peak_memory
from .plan_check import check_plan
from .schedule import check_facts, derive_facts, drop_dead, inline, schedule
from .split import SplitRule
from .target import Target

__all__ = [
    "compute_facts",
    "node_group",
    "node_reads",
    "users",
    "write_index",
    "factor_reductions",
    "fuse",
    "kernel_attrs",
    "KernelSpace",
    "Refused",
    "kernel_space",
    "KernelIO",
    "frees_inputs",
    "check_memplan",
    "kernel_io",
    "extern_kernels",
    "plan_memory",
    "peak_memory",
    "held_bytes",
    "check_plan",
    "check_facts",
    "schedule",
    "inline",
    "drop_dead",
    "derive_facts",
    "SplitRule",
    "Target",
]
