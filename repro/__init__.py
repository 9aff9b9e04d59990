"""Repro tooling: the reducer (delta debugging over the IR), the structural
diff, and golden-file checks. Replay lives in tirc.commands; the reducer's
oracle, which runs candidates, in tirc.reducing."""

from .determinism import check_rerun, compile_args, recording
from .diff import diff_modules
from .program import op_count
from .reduce import Reduction, reduce_module

__all__ = [
    "Reduction",
    "check_rerun",
    "compile_args",
    "diff_modules",
    "op_count",
    "recording",
    "reduce_module",
]
