"""Inlining: a cheap pointwise node is recomputed inside a reader that takes
its elements in another arrangement, as Inductor inlines a pointwise buffer's
body into its readers unless it is realized.

Fusion puts a producer and its consumer in one kernel only when the consumer
reads each element where, and when, the producer writes it. A read that
broadcasts (a bias of [C] added to [N, C]), slices, transposes, gathers, or
takes several neighbours (pooling) cannot fuse; recomputing the producer's
few ops at the read's index costs less than a kernel boundary and a buffer
in memory, except for a gather that a broadcast read would repeat
(`_repeated_gather`). A producer that is still read elsewhere, or returned, stays;
dead-node elimination drops the others. A returned or large producer is
recomputed only for a consumer that reads few of its elements (`_inlinable`).

Inlining goes through chains: a recomputed producer's own reads are
recomputed in turn where they are misaligned too. A producer read more
than once (by other nodes, or at other indices), whose recomputation would
read more than MAX_SHARED_READS buffers, is read from memory instead (as
Inductor realizes a buffer of more than `realize_reads_threshold` reads
with several users): WaveNet's residual stream `x = x + res(z)`, padded for
each layer's causal convolution, was recomputed from the first layer's input
in every layer, reading 2 to 11 buffers per element where eager reads 2
(its ten layers ran 1.01-1.10x eager's time on 2 cores, 0.85-0.88x with
the cut).
"""

from __future__ import annotations

import dataclasses
import math
import re

import sympy

from ir_text import (
    BodyOp,
    FloorDiv,
    Mod,
    Module,
    Value,
    index_var,
    non_overlapping,
    simplify_index,
    strided_index,
)

from .deps import returned
from .exact_indices import fold_indirect
from .iteration import flat_mapping

_ROW_VARIABLE = re.compile(r"i\d+")
CAT = "aten.cat.default"
# A consumer that reads a producer this many times fewer than the producer
# has elements recomputes it whatever its size (_inlinable).
FEW_READS = 4
# As Inductor's realize_opcount_threshold: a body larger than this is read
# from memory rather than recomputed by each reader.
MAX_INLINED_OPS = 30
# The most ops a reader's body may grow to by inlining (reads at several
# indices, as pooling does, copy the producer once per index); a
# concatenation's, per part (each piece of it computes one part).
MAX_BODY_OPS = 400
# The most buffers a recomputed producer that other nodes also read may
# read, through the producers it recomputes in turn (Inductor's
# realize_reads_threshold).
MAX_SHARED_READS = 4


def inline_pointwise(module: Module) -> Module:
    by_id = {id(n.result): n for n in module.nodes}
    kept = {id(v) for v in returned(module)}
    # Loads of each value, over every node: two reads at two indices are two readers.
    readers: dict[int, int] = {}
    for node in module.nodes:
        for op in getattr(node, "body", ()):
            if op.op == "load":
                readers[id(op.operands[0])] = readers.get(id(op.operands[0]), 0) + 1
    chains = _Chains(by_id, readers, kept)
    nodes = []
    for node in module.nodes:
        if node.kind in ("pointwise", "reduction", "scan"):
            body = _inline_into(node, by_id, kept, chains)
            if body is not node.body:
                node = dataclasses.replace(node, body=body)
                by_id[id(node.result)] = node
        nodes.append(node)
    return dataclasses.replace(module, nodes=nodes)


def _inlinable(producer, kept: set[int], few: bool, part: bool = False) -> bool:
    """Whether a read of `producer` may recompute it. A consumer that reads
    it FEW_READS times fewer than it has elements (a variance's center,
    the first element of each row: lowering/reductions.py) recomputes any
    pointwise producer, returned or large: the cost is a fraction of the
    producer's, and the read would otherwise keep the producer out of the
    consumer's kernel (it reads another element than the one it fuses).
    A concatenation computes a `part` of any size once per element, as the
    part's own kernel would (PSPNet's upsampled maps: the corner gathers of
    a bilinear interpolation, 31 ops each, were written out and read back)."""
    if producer is None or producer.kind != "pointwise":
        return False
    if not non_overlapping(producer.result.type.shape, producer.result.type.strides):
        return False
    small = part or len(producer.body) <= MAX_INLINED_OPS
    return few or (id(producer.result) not in kept and small)


class _Chains:
    """Which producers are too costly to recompute for one more reader:
    read more than once (or returned), and reading more than
    MAX_SHARED_READS buffers through the producers that recomputing it
    would recompute in turn."""

    def __init__(self, by_id, readers: dict[int, int], kept: set[int]):
        self.by_id, self.readers, self.kept = by_id, readers, kept
        self.memo: dict[int, int] = {}

    def shared_and_wide(self, producer) -> bool:
        key = id(producer.result)
        shared = self.readers.get(key, 0) > 1 or key in self.kept
        return shared and self.reads(producer) > MAX_SHARED_READS

    def reads(self, producer) -> int:
        """Buffers read to recompute one element of `producer` elsewhere:
        its loads, each of a pointwise producer that would be recomputed
        in turn counted as that one's."""
        key = id(producer.result)
        if key not in self.memo:
            total = 0
            for op in producer.body:
                if op.op != "load":
                    continue
                source = self.by_id.get(id(op.operands[0]))
                recomputed = (
                    source is not None and source.kind == "pointwise" and not self.shared_and_wide(source)
                )
                total += self.reads(source) if recomputed else 1
            self.memo[key] = total
        return self.memo[key]


def _reads(node, index, producer) -> int:
    """How many times `node` reads `producer` at `index`: once per output
    element where the index holds only i-variables (an r-variable, or an
    indirect index computed per element, makes it once per iteration); a
    concatenation reads each element of a part once, as codegen runs a
    large one in pieces (codegen/plan_pieces.py), each computing its part
    only."""
    per_output = all(_ROW_VARIABLE.fullmatch(str(v)) for v in sympy.sympify(index).free_symbols)
    if per_output and _part_of(node, producer):
        return producer.result.type.numel
    return math.prod(node.ranges) * (1 if per_output else math.prod(node.reduction_ranges))


def _part_of(node, producer) -> bool:
    """Whether `producer` is shaped as a part of the concatenation `node`:
    as its result but along one dimension."""
    if node.origin != CAT or producer.kind != "pointwise" or len(producer.ranges) != len(node.ranges):
        return False
    return sum(a != b for a, b in zip(producer.ranges, node.ranges)) <= 1


def _few_reads(node, index, producer) -> bool:
    """Whether `node` reads `producer` at `index` FEW_READS times fewer than
    the producer has elements."""
    return _reads(node, index, producer) * FEW_READS <= producer.result.type.numel


def _repeated_gather(node, index, producer) -> bool:
    """Whether `node` reads each element of a producer that gathers (an
    indirect load, with its bounds check) or decodes its indices (a load at
    a floordiv or mod of a loop variable) FEW_READS times or more: a
    broadcast read would redo that work for each repeat. Swin's relative
    position bias, `table[index]` of 3 x 49 x 49 elements added to the
    scores of 32 windows, was gathered 32 times per element inside the
    softmax's kernel, and its shifted-window mask, compared from a window
    partition of the image's regions, decoded 6 times (a 2-core CPU: the
    kernel took 3.2 ms, 1.7 ms reading both from memory)."""
    if not any(op.op == "indirect" or _decodes(op) for op in producer.body):
        return False
    return _reads(node, index, producer) >= FEW_READS * producer.result.type.numel


def _decodes(op) -> bool:
    return op.op == "load" and bool(sympy.sympify(op.attr("index")).atoms(FloorDiv, Mod))


def _inline_into(node, by_id, kept, chains: _Chains):
    """The node's body with inlinable reads replaced by the producers' ops;
    the spliced ops are visited in turn, so chains inline through."""
    pending = list(node.body)
    out: list[BodyOp] = []
    # Load results replaced by spliced values; the key's Value is kept
    # alive beside it, so that its id cannot be reused by a new Value.
    replaced: dict[int, tuple[Value, Value]] = {}
    scope = _loop_ranges(node)
    changed = False
    parts = 1 + sum(op.op == "where" for op in node.body) if node.origin == CAT else 1

    def resolve(v: Value) -> Value:
        while id(v) in replaced and replaced[id(v)][0] is v:
            v = replaced[id(v)][1]
        return v

    while pending:
        op = pending.pop(0)
        if op.op == "reduce":
            scope = {k: v for k, v in scope.items() if not k.startswith("r")}
        operands = tuple(resolve(v) for v in op.operands)
        if operands != op.operands:
            op = dataclasses.replace(op, operands=operands)
        producer = by_id.get(id(op.operands[0])) if op.op == "load" else None
        few = producer is not None and _few_reads(node, op.attr("index"), producer)
        if (
            producer is not None
            and _inlinable(producer, kept, few, _part_of(node, producer))
            and (few or not chains.shared_and_wide(producer))
            and not _repeated_gather(node, op.attr("index"), producer)
            and not _aligned(producer, node, op.attr("index"))
            and len(out) + len(pending) + len(producer.body) <= MAX_BODY_OPS * parts
        ):
            ops, value = _splice(producer, op.attr("index"), scope, len(out) + len(pending))
            replaced[id(op.result)] = (op.result, value)
            pending[0:0] = ops
            changed = True
            continue
        if op.op == "indirect":
            scope[op.result.hint] = op.attr("size")
        out.append(op)
    folded = fold_indirect(out, _loop_ranges(node))
    return _renumber_indirect(folded) if changed or folded is not out else node.body


def _loop_ranges(node) -> dict[str, int]:
    scope = {f"i{k}": s for k, s in enumerate(node.ranges)}
    scope.update({f"r{k}": s for k, s in enumerate(node.reduction_ranges)})
    return scope


def _aligned(producer, consumer, index) -> bool:
    """Whether the consumer reads element e of its iteration (row-major, its
    r-variables innermost) at the offset where the producer writes its e-th
    element: then fusion can put them together and nothing is recomputed."""
    sizes = tuple(consumer.ranges) + tuple(consumer.reduction_ranges)
    if producer.result.type.numel != math.prod(sizes):
        return False
    mapping = flat_mapping(
        tuple(producer.result.type.shape), "i", tuple(consumer.ranges), tuple(consumer.reduction_ranges)
    )
    written = strided_index([expr for _, expr in mapping], producer.result.type.strides)
    scope = _loop_ranges(consumer)
    return sympy.expand(simplify_index(written, scope) - simplify_index(index, scope)) == 0


def _splice(producer, index, scope: dict[str, int], tag: int) -> tuple[list[BodyOp], Value]:
    """Copies of the producer's ops computing the element the consumer reads
    at `index`, and the value the producer would have stored."""
    t = producer.result.type
    coords = _decode(index, t.shape, t.strides, scope)
    mapping = {index_var(f"i{k}"): c for k, c in enumerate(coords)}
    local: dict[int, Value] = {}
    ops = []
    for op in producer.body:
        if op.op == "store":
            return ops, local[id(op.operands[0])]
        attrs = op.attrs
        if op.op in ("load", "index"):
            expr = simplify_index(sympy.sympify(op.attr("index")).xreplace(mapping), scope)
            attrs = tuple((k, expr if k == "index" else v) for k, v in op.attrs)
        result = Value(op.result.hint, op.result.type)
        if op.op == "indirect":
            # A name no other op of the consumer has; _renumber_indirect gives the final ones.
            result.hint = f"ind_inl{tag}_{len(ops)}"
            mapping[index_var(op.result.hint)] = index_var(result.hint)
        local[id(op.result)] = result
        operands = tuple(local.get(id(v), v) for v in op.operands)
        ops.append(BodyOp(result, op.op, operands, attrs))
    raise AssertionError("a loop body ends with its store")


def _decode(offset, shape, strides, scope: dict[str, int]) -> list:
    """The coordinates of the element at storage `offset` (for a decodable
    layout). A buffer of no elements has none to decode: 0 for each."""
    coords = []
    for size, stride in zip(shape, strides):
        if size == 1 or 0 in shape:
            coords.append(sympy.Integer(0))
            continue
        coords.append(simplify_index(Mod(FloorDiv(offset, stride), size), scope))
    return coords


def _renumber_indirect(body: list[BodyOp]) -> list[BodyOp]:
    """Indirect ops are named ind0, ind1, ... in body order (a verifier rule)."""
    renamed: dict = {}
    values: dict[int, Value] = {}
    out = []
    for op in body:
        operands = tuple(values.get(id(v), v) for v in op.operands)
        attrs = op.attrs
        if op.op in ("load", "index") and renamed:
            expr = sympy.sympify(op.attr("index")).xreplace(renamed)
            attrs = tuple((k, expr if k == "index" else v) for k, v in op.attrs)
        result = op.result
        if op.op == "indirect":
            name = f"ind{len(renamed)}"
            renamed[index_var(op.result.hint)] = index_var(name)
            result = values[id(op.result)] = Value(name, op.result.type)
        out.append(BodyOp(result, op.op, operands, attrs))
    return out
