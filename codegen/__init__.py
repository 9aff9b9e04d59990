"""Code generation: C++ and Triton kernels and the Python wrapper module."""

from .cache import cache_dir
from . import cache_heal
from .extern_select import select_externs
from .loader import load_output_code
from .runtime import random_input
from .splits import split_reductions, split_rule
from .triton_tune import tune_launches
from .tuning import tuning_target
from .wrapper import generate, prebuild

__all__ = [
    "cache_dir",
    "cache_heal",
    "generate",
    "load_output_code",
    "prebuild",
    "random_input",
    "select_externs",
    "split_reductions",
    "split_rule",
    "tune_launches",
    "tuning_target",
]
