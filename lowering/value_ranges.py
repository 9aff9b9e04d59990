"""Which values a capture graph needs of its inputs, for seeded replay.

A dump's inputs are seeded random tensors unless `--save-inputs` saved the
real ones. Token ids, class targets and gather indices drawn at random make
eager itself raise (an index out of range), and a variance drawn from randn
turns a batch norm's outputs into NaN, which compares equal and so checks
nothing. This analysis finds, per input, the range its values must lie in:

- each use of a value as an index, a target or a probability gives a bound
  (USES: op -> the argument and how its bound follows from the others');
- a bound on a value holds for the values it was copied from: views, casts,
  `where`'s branches (PASSES: op -> the arguments its result's values come
  from), back to the graph's inputs;
- several bounds on one input intersect.

The result is an input's `range` attribute, which codegen's random_input
draws from: integers in [lo, hi), floats in [lo, hi].
"""

from __future__ import annotations

import math
from typing import Callable

from ir_text import INT_DTYPES, GraphOp, Module, Value, int_range, is_float

Range = tuple  # (lo, hi): ints [lo, hi) for an index, floats [lo, hi] for a domain

# Ops whose result holds only values of some arguments (their positions; a
# list argument counts each of its tensors).
PASSES: dict[str, tuple[int, ...]] = {
    "aten.view.default": (0,),
    "aten._unsafe_view.default": (0,),
    "aten.reshape.default": (0,),
    "aten.expand.default": (0,),
    "aten.permute.default": (0,),
    "aten.unsqueeze.default": (0,),
    "aten.squeeze.dim": (0,),
    "aten.squeeze.dims": (0,),
    "aten.squeeze.default": (0,),
    "aten.slice.Tensor": (0,),
    "aten.select.int": (0,),
    "aten.t.default": (0,),
    "aten.transpose.int": (0,),
    "aten.as_strided.default": (0,),
    "aten.alias.default": (0,),
    "aten.clone.default": (0,),
    "aten._to_copy.default": (0,),
    "aten.flip.default": (0,),
    "aten.roll.default": (0,),
    "aten.repeat.default": (0,),
    "aten.cat.default": (0,),
    "aten.stack.default": (0,),
    "aten.where.self": (1, 2),
}


def _plane(args) -> Range | None:
    """[0, H x W) of the input (argument 1) of a 2-D max pool's backward."""
    shape = args[1].type.shape
    return (0, shape[-2] * shape[-1]) if len(shape) >= 2 and shape[-2] * shape[-1] else None


def _dim_size(args, tensor: int, dim: int) -> int | None:
    """The size of dimension args[dim] (an int, maybe negative) of tensor args[tensor]."""
    shape = args[tensor].type.shape
    d = args[dim] if dim < len(args) else 0
    return shape[d] if shape and isinstance(d, int) and -len(shape) <= d < len(shape) else None


def _indexed(args, tensor: int, dim: int) -> Range | None:
    """An index into dimension args[dim] of args[tensor]: [0, size) (gather,
    scatter and index_select refuse negative indices)."""
    size = _dim_size(args, tensor, dim)
    return (0, size) if size else None


def _rows(args, tensor: int) -> Range | None:
    shape = args[tensor].type.shape
    return (0, shape[0]) if shape and shape[0] else None


def _classes(args) -> Range | None:
    """nll_loss's target: a class of the input, whose classes are dim 1 ((C,) alone: dim 0)."""
    shape = args[0].type.shape
    c = shape[0] if len(shape) == 1 else shape[1] if len(shape) > 1 else 0
    return (0, c) if c else None


def _num_classes(args) -> Range | None:
    n = args[1] if len(args) > 1 else -1
    return (0, n) if isinstance(n, int) and n > 0 else None


USE = Callable[[tuple], "Range | None"]
# op -> ((argument position, its bound from the op's arguments), ...). For
# `index`/`index_put` the argument is a list: its k-th tensor indexes dim k.
USES: dict[str, tuple[tuple[int, USE], ...]] = {
    "aten.embedding.default": ((1, lambda a: _rows(a, 0)),),
    "aten._embedding_bag.default": ((1, lambda a: _rows(a, 0)),),
    "aten.embedding_bag.default": ((1, lambda a: _rows(a, 0)),),
    "aten.index_select.default": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.gather.default": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.scatter.src": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.scatter.value": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.scatter_add.default": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.scatter_reduce.two": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.index_add.default": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.index_copy.default": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.index_fill.int_Scalar": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.index_fill.int_Tensor": ((2, lambda a: _indexed(a, 0, 1)),),
    "aten.take.default": ((1, lambda a: (0, a[0].type.numel) if a[0].type.numel else None),),
    "aten.nll_loss_forward.default": ((1, _classes),),
    "aten.nll_loss2d_forward.default": ((1, _classes),),
    "aten.one_hot.default": ((0, _num_classes),),
    "aten.bernoulli.default": ((0, lambda a: (0.0, 1.0)),),
    "aten.bernoulli.p": ((0, lambda a: (0.0, 1.0)),),
    "aten.binary_cross_entropy.default": ((0, lambda a: (0.0, 1.0)), (1, lambda a: (0.0, 1.0))),
    "aten.native_batch_norm.default": ((4, lambda a: (0.0, math.inf)),),
    "aten._native_batch_norm_legit_no_training.default": ((4, lambda a: (0.0, math.inf)),),
    # A backward graph's saved indices: positions in the pooled input's
    # plane, rows of the embedding's weight (ir_text/index_guards.py checks them).
    "aten.max_pool2d_with_indices_backward.default": ((7, _plane),),
    "aten.embedding_dense_backward.default": (
        (1, lambda a: (0, a[2]) if isinstance(a[2], int) and a[2] > 0 else None),
    ),
}
# Ops that index each dimension with the tensors of a list argument (position 1).
LIST_INDEXED = ("aten.index.Tensor", "aten.index_put.default", "aten._unsafe_index.Tensor")
MASKS = ("b8", "u8")  # index tensors of these dtypes are masks, not indices
# A square root of `x + eps` (eps > 0) is how the norms' decompositions take
# a variance: x is one, and must be >= 0. (A bare sqrt or log of an input
# needs nothing: NaN compares equal to NaN.)
VARIANCE_ROOTS = ("aten.sqrt.default", "aten.rsqrt.default")


def input_ranges(module: Module) -> dict[Value, Range]:
    """The range each input's values need (inputs without a need are absent)."""
    sources = _sources(module.graph)
    producers = {r: op for op in module.graph for r in op.results}
    dtypes = {inp.value: inp.value.type.dtype for inp in module.inputs}
    needs: dict[Value, Range] = {}
    for op in module.graph:
        for value, bound in _bounds(op, producers):
            for inp in _origins(value, sources):
                fitted = _fits(bound, dtypes[inp]) if inp in dtypes else None
                if fitted is not None:
                    needs[inp] = _intersect(needs.get(inp), fitted)
    # Bounds that contradict each other leave nothing to draw from: no range.
    return {v: r for v, r in needs.items() if r[0] < r[1]}


def _bounds(op: GraphOp, producers) -> list[tuple[Value, Range]]:
    """(value, range) for each bound `op` puts on its arguments."""
    args = op.args
    found = []
    for position, rule in USES.get(op.target, ()):
        if position < len(args) and isinstance(args[position], Value):
            found.append((args[position], rule(args)))
    if op.target in LIST_INDEXED and len(args) > 1 and isinstance(args[1], tuple):
        shape = args[0].type.shape
        for dim, index in enumerate(args[1]):
            if isinstance(index, Value) and dim < len(shape) and shape[dim] and index.type.dtype not in MASKS:
                # Negative indices count from the end here, as in Python.
                found.append((index, (-shape[dim], shape[dim])))
    if op.target in VARIANCE_ROOTS:
        inner = producers.get(args[0])
        if inner is not None and inner.target == "aten.add.Tensor" and _positive_scalar(inner.args[1:2]):
            found.append((inner.args[0], (0.0, math.inf)))
    return [(v, r) for v, r in found if isinstance(v, Value) and r is not None]


def _positive_scalar(args) -> bool:
    return bool(args) and isinstance(args[0], (int, float)) and not isinstance(args[0], bool) and args[0] > 0


def _sources(graph: list[GraphOp]) -> dict[Value, list[Value]]:
    """Result -> the values its values are copied from (PASSES)."""
    sources = {}
    for op in graph:
        positions = PASSES.get(op.target)
        if positions is None or len(op.results) != 1:
            continue
        found = []
        for k in positions:
            arg = op.args[k] if k < len(op.args) else None
            found += [a for a in (arg if isinstance(arg, tuple) else (arg,)) if isinstance(a, Value)]
        sources[op.results[0]] = found
    return sources


def _origins(value: Value, sources) -> list[Value]:
    """The values `value`'s values come from, followed back through PASSES ops."""
    seen, stack, found = set(), [value], []
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in sources:
            stack += sources[v]
        else:
            found.append(v)
    return found


def _intersect(a: Range | None, b: Range) -> Range:
    if a is None:
        return b
    return (max(a[0], b[0]), min(a[1], b[1]))


def _fits(r: Range, dtype: str) -> Range | None:
    """The range in the input's dtype's terms: integer bounds for integer
    inputs, float ones for float inputs; None where it does not apply (a
    float domain on an integer input, any range on a bool)."""
    lo, hi = r
    if dtype in INT_DTYPES:
        if isinstance(lo, float) or isinstance(hi, float):
            return None
        # A u8 index takes no negative values, an i8 one none past 127.
        least, greatest = int_range(dtype)
        return (max(lo, least), min(hi, greatest + 1))
    if is_float(dtype):
        return (float(lo), float(hi))
    return None
