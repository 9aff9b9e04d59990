"""What a generated `output_code.py` imports: loading compiled kernels, checking
inputs, and switching Triton to its interpreter when there is no GPU."""

from __future__ import annotations

import ctypes
import functools
import math
import os
import sys

import torch

from ir_text import check_index_arguments, guards_indices, storage_span


def cpp_library(source: str):
    """Compile (or fetch from the cache, checked and healed: cache.py) and
    load the kernels in `source`."""
    from .cpp_build import load_library

    return load_library(source)


def cpp_kernel(library, name: str, arity: int):
    fn = getattr(library, name)
    fn.argtypes = [ctypes.c_void_p] * arity
    fn.restype = None
    return fn


# ATen's allocation of an uninitialized tensor by device, without the
# dispatcher and the Python argument parser of torch.empty_strided (the
# functions Inductor's generated code calls; private, so looked up with a
# fallback). A call's Python runs after its previous kernel has evicted the
# caches, where this costs much less than torch.empty_strided (measured:
# docs/design-notes.md, "Codegen").
_FAST_EMPTY = {"cpu": "_empty_strided_cpu", "cuda": "_empty_strided_cuda"}


def allocator(device: str):
    """`empty(shape, strides, dtype)`: a new uninitialized tensor on `device`,
    as torch.empty_strided makes it; a generated `call` allocates its
    buffers with it."""
    guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    fast = getattr(guards, _FAST_EMPTY.get(device, ""), None)
    if fast is not None:
        return fast

    def empty(shape, strides, dtype):
        return torch.empty_strided(shape, strides, dtype=dtype, device=device)

    return empty


def error_slot():
    """Where a C++ kernel records a value eager PyTorch raises on (the
    prelude's tirc_error): [code, two values that describe it, the site of
    the op]. A ctypes array, zeroed: far cheaper to make and to read than a
    tensor (measured: docs/design-notes.md, "Codegen"). ctypes passes it to
    the kernel as its address."""
    return (ctypes.c_int64 * 4)()


def error_tensor():
    """The error slot of an interpreted Triton kernel (the `_index` helper
    records in it as a C++ kernel does in error_slot's): an int64 tensor."""
    return torch.zeros(4, dtype=torch.int64)


def check_values(slot, sites: tuple[str, ...]) -> None:
    """Raise what eager PyTorch raises when the kernel recorded an index out
    of range (code 1; it read 0 in its place) or an integer division by
    zero (code 2; the result is 0). `slot`: error_slot's or error_tensor's;
    its last value is the site of the op at fault, `sites` names them
    ("aten.embedding.default at model.py:16")."""
    code = int(slot[0])
    if code == 1:
        index, size = int(slot[1]), int(slot[2])
        op = sites[int(slot[3])]
        raise IndexError(f"index {index} is out of bounds for a dimension of size {size} (in {op})")
    if code == 2:
        raise ZeroDivisionError(f"integer division by zero (in {sites[int(slot[3])]})")


def use_triton_interpreter(device: str) -> None:
    """Run Triton kernels through its CPU interpreter when compiling for the CPU;
    must run before `import triton`, as Triton reads the switch at import."""
    if device != "cpu":
        return
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError(
            "Triton was imported before tirc could switch it to its CPU interpreter; "
            "set TRITON_INTERPRET=1 in the environment (or import tirc before triton)"
        )
    os.environ["TRITON_INTERPRET"] = "1"


def checked_input(x, shape, strides, dtype, name: str, device: str, updated: bool = False):
    """`x` when it has the compiled shape, dtype, device and strides; an input
    of other strides (channels-last, transposed, expanded, a slice), which
    eager accepts, as a copy in the compiled layout, so that no kernel reads
    its memory with the compiled strides. `updated`: the program writes
    into `x` (the wrapper writes the result back into the caller's tensor)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"input {name}: expected a tensor, got {type(x).__name__}")
    # A kernel given memory of another device (or none: meta) would crash.
    # is_cuda / is_cpu are much cheaper than x.device.type, which every call
    # paid per input (measured: docs/design-notes.md, "Codegen").
    if not (x.is_cuda if device == "cuda" else x.is_cpu):
        raise ValueError(f"input {name}: expected a tensor on {device}, got one on {x.device}")
    # torch.Size and stride() are tuples: compared as they are (no copies;
    # this runs on every call). Other strides take the slower path below.
    if x.shape != shape or x.dtype != dtype:
        raise ValueError(f"input {name}: expected {dtype} {list(shape)}, got {x.dtype} {list(x.shape)}")
    if x.stride() == strides:
        return x
    return _in_compiled_layout(x, strides, name, updated)


def _in_compiled_layout(x, strides, name: str, updated: bool):
    """`x` (of the compiled shape) seen or copied with the compiled `strides`."""
    shape = tuple(x.shape)
    # Strides of dimensions of size 1 (and of an empty tensor) address nothing.
    if x.numel() == 0 or all(a == b for n, a, b in zip(shape, x.stride(), strides) if n > 1):
        return x
    if updated and _broadcast_dims(shape, x.stride()):
        # What eager's in-place ops refuse: one element written through several indices.
        raise ValueError(
            f"input {name}, which the program updates in place, has elements that share memory "
            f"(strides {list(x.stride())}: an expand); pass a clone"
        )
    broadcast = _broadcast_dims(shape, strides)
    if broadcast:
        # The program reads one element for all indices of these dimensions:
        # a copy into that layout would drop the others' values.
        raise ValueError(
            f"input {name}: the program was compiled for an input broadcast along dimension(s) {broadcast} "
            f"(strides {list(strides)}), got strides {list(x.stride())}; compile it for this layout"
        )
    return torch.empty_strided(shape, strides, dtype=x.dtype, device=x.device).copy_(x)


def _broadcast_dims(shape, strides) -> list[int]:
    """The dimensions of more than one element and stride 0 (an expand):
    where torch itself sees internal overlap (has_internal_overlap's Yes)."""
    return [k for k, (n, s) in enumerate(zip(shape, strides)) if n > 1 and s == 0]


def assert_unaliased(inputs, names, updated) -> None:
    """The program writes into the inputs named in `updated` (its `update`
    lines): none may overlap another input in memory, since eager would see
    the write through the other one where the compiled program has read it
    already. Disjoint views of one storage are fine. `inputs`: the caller's
    tensors (`args`), not their copies in the compiled layout."""
    spans = {}
    for x, name in zip(inputs, names):
        start = x.data_ptr()
        spans[name] = (start, start + storage_span(x.shape, x.stride()) * x.element_size())
    for name in updated:
        start, end = spans[name]
        for other, (o_start, o_end) in spans.items():
            if other != name and start < o_end and o_start < end:
                raise ValueError(
                    f"input {name}, which the program updates in place, overlaps input {other} in memory; "
                    "the compiled program needs inputs that do not alias (pass a clone)"
                )


def random_input(shape, strides, dtype, device, seed: int, value_range=None):
    """The input a dump's header describes: seeded values in a strided layout,
    drawn from `value_range` (the header's `range = [lo, hi]`) when given."""
    gen = torch.Generator().manual_seed(seed)
    size = storage_span(shape, strides)
    if value_range is not None and dtype != torch.bool:
        flat = _ranged_values(size, dtype, value_range, gen)
    elif dtype == torch.bool:
        flat = torch.randint(0, 2, (size,), generator=gen).bool()
    elif dtype.is_floating_point:
        flat = torch.randn(size, generator=gen, dtype=torch.float64).to(dtype)
    else:
        # Never zero, so integer division in a program cannot trap.
        flat = torch.randint(-8, 9, (size,), generator=gen)
        flat = torch.where(flat == 0, torch.ones_like(flat), flat).to(dtype)
    return flat.to(device).as_strided(shape, strides)


def _ranged_values(size: int, dtype, value_range, gen):
    """`size` seeded values in `value_range`: integers uniform in [lo, hi)
    (indices, class targets), floats in [lo, hi]: uniform between finite
    bounds (a probability), else a bound plus or minus |randn| (a variance)."""
    lo, hi = value_range
    if not dtype.is_floating_point:
        return torch.randint(int(lo), int(hi), (size,), generator=gen).to(dtype)
    if math.isinf(lo) and math.isinf(hi):
        return torch.randn(size, generator=gen, dtype=torch.float64).to(dtype)
    if math.isinf(hi):
        return (lo + torch.randn(size, generator=gen, dtype=torch.float64).abs()).to(dtype)
    if math.isinf(lo):
        return (hi - torch.randn(size, generator=gen, dtype=torch.float64).abs()).to(dtype)
    flat = lo + (hi - lo) * torch.rand(size, generator=gen, dtype=torch.float64)
    # Rounding to a narrower dtype must not step outside the range.
    return flat.to(dtype).clamp(lo, hi)


# ATen ops whose kernels need some tensor arguments' rows aligned, by the
# argument's position: the memory-efficient and cuDNN attention kernels
# reject an additive bias whose strides are not multiples of 16 elements
# ("attn_bias is not correctly aligned"). Eager's sdpa pads the bias before
# the call; a traced graph makes that pad a slice tirc materializes densely.
ALIGNED_ARGS = {
    "aten._scaled_dot_product_efficient_attention.default": (3,),
    "aten._scaled_dot_product_cudnn_attention.default": (3,),
    "aten._efficient_attention_forward.default": (3,),
}
ALIGNMENT = 16  # elements


def extern_call(op, args, kwargs, layouts):
    """Call an ATen op for an extern node; each result in its planned layout
    (copied when ATen chose other strides, e.g. under another torch version)."""
    for k in _aligned_positions(op):
        if k < len(args):
            args = [*args[:k], aligned_rows(args[k]), *args[k + 1 :]]
    if _guarded(op):
        # Indices the op writes through unchecked (ir_text/index_guards.py).
        check_index_arguments(str(op), args, kwargs)
    results = _flat_tensors(op(*args, **kwargs))
    out = []
    for tensor, (shape, strides) in zip(results, layouts):
        if tuple(tensor.stride()) != strides and tensor.numel() > 1:
            planned = torch.empty_strided(shape, strides, dtype=tensor.dtype, device=tensor.device)
            tensor = planned.copy_(tensor)
        out.append(tensor)
    return out


@functools.cache
def _guarded(op) -> bool:
    """Looked up once per op overload, as _aligned_positions is."""
    return guards_indices(str(op))


@functools.cache
def _aligned_positions(op) -> tuple[int, ...]:
    """ALIGNED_ARGS of an op overload, looked up by name once (str(op) is
    not free, and extern calls run on every call of the program; measured:
    docs/design-notes.md, "Codegen")."""
    return ALIGNED_ARGS.get(str(op), ())


def aligned_rows(t):
    """`t` itself when every stride but the last (1) is a multiple of
    ALIGNMENT elements (0, a broadcast, is one); else a copy whose rows are
    padded to that multiple, seen at `t`'s shape."""
    if not isinstance(t, torch.Tensor) or t.dim() < 2:
        return t
    if t.stride(-1) == 1 and all(s % ALIGNMENT == 0 for s in t.stride()[:-1]):
        return t
    n = t.shape[-1]
    padded = torch.empty((*t.shape[:-1], -(-n // ALIGNMENT) * ALIGNMENT), dtype=t.dtype, device=t.device)
    view = padded[..., :n]
    view.copy_(t)
    return view


def _flat_tensors(result) -> list:
    """The tensors of an ATen result in order, None entries skipped (as the IR lists them)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat_tensors(r)]
    return []
