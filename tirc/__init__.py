"""tirc: a debuggable compiler for PyTorch programs, every stage a textual IR.

    fn = tirc.compile(model, inputs, backend="cpp", dump_after=("fusion",), dump_dir="d")
    torch.compile(model, backend="tirc")
"""

from ir_text import TircError

from .api import CompiledProgram, compile
from .options import Options

__version__ = "0.1.0"
__all__ = ["compile", "CompiledProgram", "Options", "TircError", "__version__"]
