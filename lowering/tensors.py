"""Lowered tensors: a buffer, or a view of one described by an index function.

Views never become nodes (as Inductor's views are layouts): a view keeps the
buffer it reads and a function from its own element index to the buffer's
storage offset, and a consumer's load composes that function into its index
expression. Only a view that leaves the program (or an extern call's
argument) is materialised by a copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy

from ir_text import FloorDiv, Mod, Value, loop_vars, strided_index


class NotLowerable(Exception):
    """A lowering rule cannot handle these arguments: the op falls back to ATen."""


@dataclass(frozen=True)
class LTensor:
    buffer: Value
    shape: tuple[int, ...]
    dtype: str
    # element index (one sympy expression per dimension) -> storage offset in `buffer`
    indexer: Callable[[tuple], sympy.Expr]
    # Whether this is the buffer itself, in its own layout (not a view).
    is_buffer: bool = False

    def index(self, idx) -> sympy.Expr:
        return sympy.expand(self.indexer(tuple(idx)))

    def derive(self, shape, fn) -> LTensor:
        """A view of this tensor: element `idx` of the view is element `fn(idx)` here."""
        parent = self.indexer
        return LTensor(self.buffer, tuple(int(s) for s in shape), self.dtype, lambda idx: parent(fn(idx)))


def view_strides(t: LTensor) -> tuple[int, ...] | None:
    """The strides of a view whose storage offset is linear in its element
    index (a slice, a permute, an expand), or None (a reshape that needs a
    division, a gather)."""
    variables = loop_vars(len(t.shape))
    terms = sympy.expand(t.indexer(variables)).as_coefficients_dict()
    if any(not (term == 1 or term in variables) or not coeff.is_Integer for term, coeff in terms.items()):
        return None
    return tuple(int(terms.get(v, 0)) for v in variables)


def of_buffer(buffer: Value) -> LTensor:
    t = buffer.type
    strides = t.strides
    return LTensor(buffer, tuple(t.shape), t.dtype, lambda idx: strided_index(idx, strides), True)


def norm_dim(dim: int, rank: int) -> int:
    if rank == 0 and dim in (0, -1):
        return 0
    if not -rank <= dim < rank:
        raise NotLowerable(f"dimension {dim} out of range for rank {rank}")
    return dim % rank


# ---- view rules: (tensor, *args) -> LTensor


def permute(x: LTensor, dims) -> LTensor:
    dims = [norm_dim(d, len(x.shape)) for d in dims]
    shape = [x.shape[d] for d in dims]

    def fn(idx):
        out = [None] * len(dims)
        for k, d in enumerate(dims):
            out[d] = idx[k]
        return tuple(out)

    return x.derive(shape, fn)


def expand(x: LTensor, size, implicit=False) -> LTensor:
    size = list(size)
    offset = len(size) - len(x.shape)
    shape = [x.shape[k - offset] if s == -1 else s for k, s in enumerate(size)]

    def fn(idx):
        return tuple(
            sympy.Integer(0) if x.shape[k] == 1 and shape[k + offset] != 1 else idx[k + offset]
            for k in range(len(x.shape))
        )

    return x.derive(shape, fn)


def unsqueeze(x: LTensor, dim: int) -> LTensor:
    dim = norm_dim(dim, len(x.shape) + 1)
    shape = list(x.shape[:dim]) + [1] + list(x.shape[dim:])
    return x.derive(shape, lambda idx: tuple(idx[:dim]) + tuple(idx[dim + 1 :]))


def squeeze(x: LTensor, dims=None) -> LTensor:
    if dims is None:
        dims = range(len(x.shape))
    elif isinstance(dims, int):
        dims = [dims]
    if not x.shape:
        return x
    drop = {norm_dim(d, len(x.shape)) for d in dims}
    drop = {d for d in drop if x.shape[d] == 1}
    keep = [d for d in range(len(x.shape)) if d not in drop]

    def fn(idx):
        it = iter(idx)
        return tuple(sympy.Integer(0) if d in drop else next(it) for d in range(len(x.shape)))

    return x.derive([x.shape[d] for d in keep], fn)


def slice_view(x: LTensor, dim=0, start=None, end=None, step=1) -> LTensor:
    dim = norm_dim(dim, len(x.shape))
    size = x.shape[dim]
    start, end, step = slice(start, end, step).indices(size)
    length = max(0, (end - start + step - 1) // step)
    shape = list(x.shape)
    shape[dim] = length

    def fn(idx):
        idx = list(idx)
        idx[dim] = start + idx[dim] * step
        return tuple(idx)

    return x.derive(shape, fn)


def select(x: LTensor, dim: int, index: int) -> LTensor:
    dim = norm_dim(dim, len(x.shape))
    index = index % x.shape[dim] if index < 0 else index
    shape = list(x.shape[:dim]) + list(x.shape[dim + 1 :])
    return x.derive(shape, lambda idx: tuple(idx[:dim]) + (sympy.Integer(index),) + tuple(idx[dim:]))


def flip(x: LTensor, dims) -> LTensor:
    dims = {norm_dim(d, len(x.shape)) for d in dims}

    def fn(idx):
        return tuple(x.shape[k] - 1 - v if k in dims else v for k, v in enumerate(idx))

    return x.derive(x.shape, fn)


def reshape(x: LTensor, size) -> LTensor:
    """A row-major reshape: dimensions are matched in blocks of equal product,
    so merging or splitting dimensions gives affine or floordiv/mod indices
    only within a block."""
    size = list(size)
    numel = 1
    for s in x.shape:
        numel *= s
    if -1 in size:
        known = 1
        for s in size:
            if s != -1:
                known *= s
        size[size.index(-1)] = numel // known if known else 0
    if numel == 0:
        return x.derive(size, lambda idx: tuple(sympy.Integer(0) for _ in x.shape))
    blocks = _blocks(list(x.shape), size)
    if x.is_buffer:
        return _reshaped_buffer(x, size, blocks)

    def fn(idx):
        out = []
        for in_dims, out_dims in blocks:
            out += _unflattened(_flat(idx, out_dims, size), in_dims, x.shape)
        return tuple(out)

    return x.derive(size, fn)


def _flat(idx, dims: list[int], size) -> sympy.Expr:
    """The row-major flat index of `idx` over the dimensions `dims` of `size`."""
    linear = sympy.Integer(0)
    for d in dims:
        linear = linear * size[d] + idx[d]
    return linear


def _unflattened(linear, dims: list[int], shape) -> list:
    """The indices along `dims` (in order) of a row-major flat index over them."""
    parts, stride = [], 1
    for d in reversed(dims):
        part = FloorDiv(linear, stride) if stride != 1 else linear
        if d != dims[0]:
            part = Mod(part, shape[d])
        parts.append(part)
        stride *= shape[d]
    return list(reversed(parts))


def _reshaped_buffer(x: LTensor, size: list[int], blocks) -> LTensor:
    """A reshape of a buffer, indexed straight into its storage: a block of
    dimensions laid out one after the other (each stride the next one's
    times its size, as in a contiguous buffer) merges into one run, its
    flat index times the run's stride, with no division or modulo (which
    the index simplifier cannot always take back out: a full `x.flatten()`
    of a contiguous [4, 128, 32, 32] was a sum of four divisions and modulos
    per load, and its C++ reduction much slower than eager's; measured:
    docs/design-notes.md, "Lowering")."""
    strides = x.buffer.type.strides

    def offset(idx):
        total = sympy.Integer(0)
        for in_dims, out_dims in blocks:
            linear = _flat(idx, out_dims, size)
            run = _run_stride(in_dims, x.shape, strides)
            if run is not None:
                total += linear * run
                continue
            parts = _unflattened(linear, in_dims, x.shape)
            total += sum((part * strides[d] for d, part in zip(in_dims, parts)), sympy.Integer(0))
        return total

    return LTensor(x.buffer, tuple(int(s) for s in size), x.dtype, offset)


def _run_stride(dims: list[int], shape, strides) -> int | None:
    """The stride of dimensions (consecutive) laid out as one contiguous
    run, that of the innermost of more than one element (0 where none has
    more: the flat index is then 0); None where they are not one run (size-1
    dimensions aside, each stride is the next one's times its size)."""
    live = [d for d in dims if shape[d] != 1]
    if not all(strides[a] == strides[b] * shape[b] for a, b in zip(live, live[1:])):
        return None
    return strides[live[-1]] if live else 0


def _blocks(a: list[int], b: list[int]) -> list[tuple[list[int], list[int]]]:
    """Split two shapes of equal product into consecutive blocks of equal product."""
    blocks, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        da, db, pa, pb = [], [], 1, 1
        while not (pa == pb and (da or i >= len(a)) and (db or j >= len(b))):
            if (pa <= pb and i < len(a)) or j >= len(b):
                da.append(i)
                pa *= a[i]
                i += 1
            else:
                db.append(j)
                pb *= b[j]
                j += 1
        blocks.append((da, db))
    return blocks


def as_strided(x: LTensor, size, stride, storage_offset=None) -> LTensor:
    if not x.is_buffer:
        raise NotLowerable("as_strided of a view")
    offset = int(storage_offset or 0)
    stride = tuple(stride)
    return LTensor(x.buffer, tuple(size), x.dtype, lambda idx: strided_index(idx, stride, offset))


def alias(x: LTensor, *rest, **kwargs) -> LTensor:
    return x


def diagonal(x: LTensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> LTensor:
    rank = len(x.shape)
    dim1, dim2 = norm_dim(dim1, rank), norm_dim(dim2, rank)
    if dim1 == dim2:
        raise NotLowerable("diagonal of one dimension with itself")
    rows, cols = x.shape[dim1], x.shape[dim2]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    rest = [d for d in range(rank) if d not in (dim1, dim2)]
    shape = [x.shape[d] for d in rest] + [length]

    def fn(idx):
        out = [None] * rank
        for d, v in zip(rest, idx):
            out[d] = v
        k = idx[-1]
        out[dim1] = k - min(offset, 0)
        out[dim2] = k + max(offset, 0)
        return tuple(out)

    return x.derive(shape, fn)


def repeat(x: LTensor, repeats) -> LTensor:
    """Tiles: element k of a repeated dimension reads element k mod size."""
    repeats = list(repeats)
    lead = len(repeats) - len(x.shape)
    if lead < 0:
        raise NotLowerable("repeat with fewer repeats than dimensions")
    padded = [1] * lead + list(x.shape)
    shape = [r * s for r, s in zip(repeats, padded)]

    def fn(idx):
        return tuple(
            Mod(v, s) if r != 1 and s > 1 else (v if s > 1 else sympy.Integer(0))
            for v, r, s in zip(idx[lead:], repeats[lead:], padded[lead:])
        )

    return x.derive(shape, fn)


def unfold(x: LTensor, dim: int, size: int, step: int) -> LTensor:
    """Windows of `size` every `step` along `dim`, as a new last dimension."""
    rank = len(x.shape)
    dim = norm_dim(dim, rank) if rank else 0
    if not x.shape:
        return x.derive((size,), lambda idx: ())
    count = (x.shape[dim] - size) // step + 1
    shape = list(x.shape)
    shape[dim] = count
    shape.append(size)

    def fn(idx):
        out = list(idx[:-1])
        out[dim] = idx[dim] * step + idx[-1]
        return tuple(out)

    return x.derive(shape, fn)


def split_with_sizes(x: LTensor, sizes, dim: int = 0) -> tuple[LTensor, ...]:
    parts, start = [], 0
    for size in sizes:
        parts.append(slice_view(x, dim, start, start + size))
        start += size
    return tuple(parts)


def split(x: LTensor, size: int, dim: int = 0) -> tuple[LTensor, ...]:
    total = x.shape[norm_dim(dim, len(x.shape))]
    sizes = [min(size, total - k) for k in range(0, total, size)] if size > 0 else [total]
    return split_with_sizes(x, sizes or [0], dim)


def unbind(x: LTensor, dim: int = 0) -> tuple[LTensor, ...]:
    return tuple(select(x, dim, k) for k in range(x.shape[norm_dim(dim, len(x.shape))]))


CLONE = "aten.clone.default"
VIEWS: dict[str, Callable] = {
    "aten.permute.default": permute,
    "aten.expand.default": expand,
    "aten.unsqueeze.default": unsqueeze,
    "aten.squeeze.default": lambda x: squeeze(x),
    "aten.squeeze.dim": squeeze,
    "aten.squeeze.dims": squeeze,
    "aten.slice.Tensor": slice_view,
    "aten.select.int": select,
    "aten.flip.default": flip,
    "aten.view.default": reshape,
    "aten.reshape.default": reshape,
    "aten._unsafe_view.default": reshape,
    "aten.as_strided.default": as_strided,
    "aten.alias.default": alias,
    CLONE: alias,
    "aten.lift_fresh_copy.default": alias,
    "aten.detach.default": alias,
    "aten.t.default": lambda x: permute(x, list(reversed(range(len(x.shape))))),
    "aten.transpose.int": lambda x, a, b: permute(x, _swapped(len(x.shape), a, b)),
    "aten.numpy_T.default": lambda x: permute(x, list(reversed(range(len(x.shape))))),
    "aten.diagonal.default": diagonal,
    "aten.repeat.default": repeat,
    "aten.split_with_sizes.default": split_with_sizes,
    "aten.split.Tensor": split,
    "aten.unbind.int": unbind,
    "aten.unfold.default": unfold,
}
# The *_copy variants (what functionalization with views removed, and some
# exports, emit) have the values of their views; a view is no copy here.
_COPY_VARIANTS = (
    "permute expand unsqueeze squeeze slice select view alias t transpose diagonal "
    "split_with_sizes split unbind unfold as_strided"
).split()


def _copy_variant(target: str) -> str:
    namespace, name, overload = target.split(".")
    return f"{namespace}.{name}_copy.{overload}"


VIEWS.update({_copy_variant(t): VIEWS[t] for t in list(VIEWS) if t.split(".")[1] in _COPY_VARIANTS})
# The ops of VIEWS whose result is a tensor of its own in eager PyTorch, not
# a view of the argument's storage: a copy lowered as a view must still be
# returned in storage of its own (lower._output_buffer).
COPIES = frozenset(
    {"aten.clone.default", "aten.lift_fresh_copy.default", "aten.flip.default", "aten.repeat.default"}
    | {t for t in VIEWS if t.split(".")[1].endswith("_copy")}
)


def _swapped(rank: int, a: int, b: int) -> list[int]:
    dims = list(range(rank))
    a, b = norm_dim(a, rank), norm_dim(b, rank)
    dims[a], dims[b] = dims[b], dims[a]
    return dims
