"""Repro tooling: the reducer (delta debugging over the IR), the structural
diff, and golden-file checks. Replay lives in tirc.commands; the reducer's
oracle, which runs candidates, in tirc.reducing.

The reducer (which edits modules through the scheduler, and so imports
torch) is imported at its first use (PEP 562), so that `tirc diff` starts
without torch."""

import importlib

from .determinism import check_rerun, compile_args, recording
from .diff import diff_modules
from .program import op_count

_WITH_TORCH = {"Reduction": "reduce", "reduce_module": "reduce"}

__all__ = [
    "Reduction",
    "check_rerun",
    "compile_args",
    "diff_modules",
    "op_count",
    "recording",
    "reduce_module",
]


def __getattr__(name: str):
    module = _WITH_TORCH.get(name)
    if module is None:
        raise AttributeError(f"module 'repro' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
