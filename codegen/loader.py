"""Load a generated `output_code.py` text as a module, without writing it anywhere.

The source is registered with linecache under a name made of its hash, so
`inspect.getsource` (which @triton.jit needs) and tracebacks can read it.
"""

from __future__ import annotations

import hashlib
import linecache
import types


def load_output_code(code: str, name: str = "output_code"):
    key = hashlib.sha256(code.encode()).hexdigest()[:16]
    filename = f"<tirc-{name}-{key}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    module = types.ModuleType(f"tirc_{name}_{key}")
    module.__file__ = filename
    exec(compile(code, filename, "exec"), module.__dict__)
    return module
