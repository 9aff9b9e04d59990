"""What generated Triton code consults at run time: whether kernels run
through Triton's CPU interpreter (whose bf16 cast truncates, so the kernels
spell out round-to-nearest-even there), and the launches of a module's
kernels."""

from __future__ import annotations

import os

import torch

from . import triton_shared_cache


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


class Launches:
    """The Triton launches of one generated module. The first launch of a
    kernel with given sizes, meta-parameters and pointer alignments goes
    through `JITFunction.run`, which compiles and specialises it; later
    ones call the compiled kernel's launcher directly, as Inductor's
    CachingAutotuner does. `JITFunction.run` binds and specialises every
    argument on every call, host time that bounded whole CNNs (measured:
    docs/design-notes.md, "Triton kernels"). Under the interpreter, or
    where this Triton's compiled kernels lack the launcher's attributes,
    every launch takes the JIT path."""

    def __init__(self):
        self.compiled: dict[tuple, tuple] = {}
        self.knobs = None if interpreted() else _knobs()
        if self.knobs is not None:
            triton_shared_cache.install()

    def run(self, kernel, grid: tuple, args: tuple, **meta) -> None:
        if self.knobs is None:
            kernel[grid](*args, **meta)
            return
        # id(kernel): a JITFunction hashes by its source's digest, computed
        # on each call; the module holds its kernels as long as it lives.
        key = (id(kernel), *meta.values(), *_specialization(args))
        found = self.compiled.get(key)
        if found is None:
            compiled = kernel[grid](*args, **meta)
            constants = _constants(kernel, compiled, len(args), meta)
            if constants is not None:
                self.compiled[key] = (compiled, constants)
            return
        compiled, constants = found
        values = args + constants
        stream = torch._C._cuda_getCurrentRawStream(torch._C._cuda_getDevice())
        hooks = self.knobs.runtime
        x, y, z = (*grid, 1, 1)[:3]
        compiled.run(
            x,
            y,
            z,
            stream,
            compiled.function,
            compiled.packed_metadata,
            compiled.launch_metadata(grid, stream, *values),
            hooks.launch_enter_hook,
            hooks.launch_exit_hook,
            *values,
        )


# Arguments Triton specialises on by value: sizes (constants of the launch
# site, kept whole) and the absent error slot.
_BY_VALUE = (int, float, bool, type(None))


def _specialization(args: tuple):
    """What Triton specialises a compiled kernel on that can change between
    calls: each pointer's alignment (Triton assumes 16 bytes where it finds
    them)."""
    return (a if type(a) in _BY_VALUE else a.data_ptr() % 16 == 0 for a in args)


def _constants(kernel, compiled, count: int, meta: dict) -> tuple | None:
    """The values of the kernel's parameters after the `count` positional
    ones (its constexprs, from `meta`), in order; None where the compiled
    kernel cannot be launched directly."""
    names = getattr(kernel, "arg_names", None)
    needed = ("run", "function", "packed_metadata", "launch_metadata")
    if compiled is None or names is None or not all(hasattr(compiled, n) for n in needed):
        return None
    rest = names[count:]
    if any(name not in meta for name in rest):
        return None
    return tuple(meta[name] for name in rest)


def _knobs():
    """Triton's runtime knobs (launch hooks), where this Triton has them."""
    try:
        from triton import knobs
    except ImportError:
        return None
    return knobs if hasattr(getattr(knobs, "runtime", None), "launch_enter_hook") else None
