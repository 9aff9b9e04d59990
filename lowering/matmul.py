"""Batched matmuls of one matrix broadcast over the batch, run as one mm.

`x @ W` of a 3-D `x` that cannot be viewed as a matrix (a permuted input:
nn.MultiheadAttention's projections, sequence first) decomposes to
`bmm(x, expand(W))`. An extern call's broadcast argument is materialised,
which made one copy of W per batch element: a BERT layer's [768, 2304]
projection 32 times, 226 MB written and read per call, and the layer many
times slower than eager (measured: docs/design-notes.md, "Lowering").
Eager's matmul folds the batch into the rows instead, and so does this
rule: `mm(x as [B*M, K], W)` seen as [B, M, N]. `x` is copied when it is
not a view of rows (B*M*K elements, the size of the product's input, not
of W's broadcast).
"""

from __future__ import annotations

import sympy

from ir_text import BufferType, GraphOp, Value, contiguous_strides

from .tensors import LTensor, NotLowerable, reshape

MM = "aten.mm.default"


def _bmm(ctx, op: GraphOp, a, b):
    if not (isinstance(a, LTensor) and isinstance(b, LTensor)) or len(a.shape) != 3 or len(b.shape) != 3:
        raise NotLowerable("bmm of tensors of rank 3 only")
    batch, m, k = a.shape
    n = b.shape[2]
    if 0 in a.shape or n == 0 or batch == 1 or not _broadcast_over_batch(b):
        raise NotLowerable("the second operand varies along the batch")
    matrix = b.derive((k, n), lambda idx: (sympy.Integer(0), *idx))
    rows = reshape(a, [batch * m, k])
    dtype = op.results[0].type.dtype
    shape = (batch * m, n)
    mm = GraphOp((Value("", BufferType(dtype, shape, contiguous_strides(shape))),), MM, (), (), op.loc)
    (product,) = ctx.extern(mm, (rows, matrix), ())
    return reshape(product, [batch, m, n])


def _broadcast_over_batch(t: LTensor) -> bool:
    """Whether every batch element of `t` reads the same storage (an expand)."""
    batch = sympy.Symbol("bmm_batch", integer=True, nonnegative=True)
    index = t.index((batch, sympy.Symbol("bmm_row", integer=True), sympy.Symbol("bmm_col", integer=True)))
    return batch not in index.free_symbols


MATMUL_RULES = {"aten.bmm.default": _bmm}
