"""The backend table: a backend's name (`--backend`, the `backend` option)
to its record (backend.py). Nothing else in tirc knows which backends exist."""

from __future__ import annotations

from ir_text import TircError

from .backend import Backend
from .cpp_backend import CPP
from .triton_backend import TRITON

BACKENDS: dict[str, Backend] = {"cpp": CPP, "triton": TRITON}


def backend_named(name: str) -> Backend:
    entry = BACKENDS.get(name)
    if entry is None:
        raise TircError(f"unknown backend '{name}' (expected {' or '.join(BACKENDS)})")
    return entry
