"""What compile-time timing depends on beyond the program."""

from __future__ import annotations

from .extern_select import extern_target
from .triton_tune import triton_target


def tuning_target(backend: str, device: str) -> str:
    """The GPU and Triton version whose launch configs are timed, or the
    processor whose matmul libraries are ("" when nothing is timed). Caches
    of compiled code add it to their keys: a program compiled elsewhere may
    have chosen otherwise."""
    return triton_target(backend, device) + extern_target(backend, device)
