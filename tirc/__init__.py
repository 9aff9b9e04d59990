"""tirc: a debuggable compiler for PyTorch programs, every stage a textual IR.

fn = tirc.compile(model, inputs, backend="cpp", dump_after=("fusion",), dump_dir="d")
torch.compile(model, backend="tirc")

The API's names import torch at their first use (PEP 562), so that the
commands that need no torch (`tirc fmt`, `tirc diff`, `tirc --help`) start
in a fraction of a second.
"""

import importlib
import os
import sys


def default_triton_interpreter() -> None:
    """Without a GPU, Triton kernels can only run in Triton's interpreter, and
    Triton reads that switch when it is first imported (which tracing does), so
    it is set before anything imports Triton. With torch imported its CUDA
    check decides; before that, the absence of NVIDIA's device files does,
    which costs no import."""
    if "TRITON_INTERPRET" in os.environ or "triton" in sys.modules:
        return
    if "torch" in sys.modules:
        gpu = sys.modules["torch"].cuda.is_available()
    else:
        gpu = os.path.exists("/dev/nvidiactl")
    if not gpu:
        os.environ["TRITON_INTERPRET"] = "1"


default_triton_interpreter()

__version__ = "0.1.0"

# The API's names -> their module.
_API = {
    "compile": "api",
    "CompiledProgram": "api",
    "Options": "options",
    "write_atomic": "files",
    "TircError": None,  # ir_text's
}
__all__ = ["compile", "CompiledProgram", "Options", "TircError", "__version__", "write_atomic"]


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'tirc' has no attribute {name!r}")
    module = _API[name]
    source = importlib.import_module("ir_text" if module is None else f".{module}", __name__)
    value = getattr(source, name)
    globals()[name] = value
    return value
