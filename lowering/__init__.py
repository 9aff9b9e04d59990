"""Capture, lowering of ATen to the loop dialect, and the reference interpreter."""

from .capture import _check_tensors as check_tensors
from .capture import _without_vendor_kernels as without_vendor_kernels
from .capture import capture, copy_with_layout, input_names
from .capture_decompositions import _decompositions as decompositions
from .capture_locations import graph_locator, graph_source_files
from .float64_equivalents import FLOAT64_EQUIVALENTS, NoFloat64Kernel
from .interpreter import INTERPRETED_OPS, interpret, run_graph
from .lower import EXTERN_OPS, extern_ops, fallback_ops, lower
from .pointwise import POINTWISE
from .widen import widened

__all__ = [
    "capture",
    "copy_with_layout",
    "check_tensors",
    "decompositions",
    "graph_locator",
    "graph_source_files",
    "input_names",
    "interpret",
    "FLOAT64_EQUIVALENTS",
    "NoFloat64Kernel",
    "run_graph",
    "lower",
    "POINTWISE",
    "INTERPRETED_OPS",
    "EXTERN_OPS",
    "extern_ops",
    "fallback_ops",
    "widened",
    "without_vendor_kernels",
]
