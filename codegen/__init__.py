"""Code generation: C++ and Triton kernels and the Python wrapper module."""

from .loader import load_output_code
from .runtime import random_input
from .wrapper import generate

__all__ = ["generate", "load_output_code", "random_input"]
