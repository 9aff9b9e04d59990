"""What compile-time timing depends on beyond the program."""

from __future__ import annotations

from .backends import backend_named


def tuning_target(backend: str, device: str) -> str:
    """The GPU and Triton version whose launch configs are timed, or the
    processor whose matmul libraries are ("" when nothing is timed). Caches
    of compiled code add it to their keys: a program compiled elsewhere may
    have chosen otherwise."""
    return backend_named(backend).tuning_target(device)
