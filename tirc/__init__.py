"""tirc: a debuggable compiler for PyTorch programs, every stage a textual IR.

fn = tirc.compile(model, inputs, backend="cpp", dump_after=("fusion",), dump_dir="d")
torch.compile(model, backend="tirc")
"""

import os
import sys


def _default_triton_interpreter() -> None:
    """Without a GPU, Triton kernels can only run in Triton's interpreter, and
    Triton reads that switch when it is first imported (which tracing does), so
    it is set here, before anything imports Triton."""
    if "TRITON_INTERPRET" in os.environ or "triton" in sys.modules:
        return
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


_default_triton_interpreter()

from ir_text import TircError  # noqa: E402

from .api import CompiledProgram, compile  # noqa: E402
from .dumps import write_atomic  # noqa: E402
from .options import Options  # noqa: E402

__version__ = "0.1.0"
__all__ = ["compile", "CompiledProgram", "Options", "TircError", "__version__", "write_atomic"]
