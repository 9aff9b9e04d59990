"""Factoring a reduction in two: partial results over part of its reduced
variables (a node of its own, with the partials as its outputs), then their
combine, as Inductor splits a reduction into partials and a combine. The
schedule dump shows both nodes; the fusion pass then treats each as any
other node. Two cases pay, each a rule of its own:

- `[row-aligned]`: a whole reduction over values that need another
  reduction's per-row results, such as `kl_div(log_softmax(s),
  log_softmax(t)).sum()`. Unfactored, its reduced space is all the rows
  at once, so it cannot join the kernel of the row reductions it reads (their
  groups differ), and every input is read again from memory: a distillation
  loss over 4096 x 30522 logits wrote a log-softmax to memory and read
  both inputs twice. Factored at the row reductions' boundary, the partials
  per row are one more pass of their kernel, and the combine is a small
  reduction over the rows.
- `[short-run]` (targets that read memory in sectors: `Target.sector_bytes`):
  a reduction whose heaviest input is contiguous only in runs shorter than
  a sector, such as GroupNorm's statistics over a channels-last map, where
  each group's few channels are contiguous and the next pixel's are a whole
  row of channels away. Every lane then reads a sector to use a part of
  it. Factored, the run's variables become outputs of the partials, so
  neighbouring lanes read neighbouring elements (an outer reduction, as
  Inductor's first kernel of GroupNorm reduces each channel over a chunk of
  pixels), and the combine adds a few partials per output.

Only reductions whose partials the reduction itself combines are factored
(sum, prod, max, min, any, all), in one body with one `reduce` whose
epilogue uses nothing computed before it. Partials keep the accumulator's
dtype (a bf16 sum's partials are f32)."""

from __future__ import annotations

import dataclasses
import math

import sympy

from ir_text import (
    BodyOp,
    BufferType,
    FloorDiv,
    LoopNode,
    Mod,
    Module,
    Value,
    contiguous_strides,
    index_var,
    loop_vars,
    simplify_index,
    strided_index,
    to_torch,
)

from .deps import node_group

# A short-run factoring leaves at least this many elements to each partial,
# so the partials are a real reduction, not a copy of their input.
MIN_PARTIAL_RNUMEL = 256
# A combine of at most this many partials per output is a pointwise node
# of unrolled loads (which the inliner may recompute in its readers), not a
# reduction kernel of its own.
MAX_UNROLLED = 8
# The reductions whose partials the reduction itself combines, each with the
# binary op that combines two partials (argmax's would be (value, index) pairs).
COMBINE_OPS = {
    "sum": "add",
    "prod": "mul",
    "max": "maximum",
    "min": "minimum",
    "any": "logical_or",
    "all": "logical_and",
}
# How far back through pointwise producers the row-aligned rule looks for
# the row reductions a whole reduction's input needs.
MAX_PRODUCERS = 64


@dataclasses.dataclass(frozen=True)
class Factoring:
    """How a reduction's reduced variables split: each old r-variable's
    value over the new variables, the partials' extra output variables
    (outer, major first) and their reduced ones (inner), as (name, extent)."""

    rule: str
    substitution: dict
    outer: tuple[tuple[str, int], ...]
    inner: tuple[tuple[str, int], ...]


def factor_reductions(module: Module, ctx=None) -> Module:
    """Every reduction that a rule factors, as its partials and their combine."""
    if ctx is not None and not (ctx.options.fusion and ctx.options.factor_reductions):
        return module
    sector = ctx.target.sector_bytes if ctx is not None else None
    by_id = {id(n.result): n for n in module.nodes if hasattr(n, "body")}
    nodes = []
    for node in module.nodes:
        parts = _parts(node) if node.kind == "reduction" else None
        factoring = parts and (
            _row_aligned(node, by_id) or (_short_run(node, parts[0], sector) if sector else None)
        )
        nodes.extend(factor(node, parts, factoring) if factoring else [node])
    return dataclasses.replace(module, nodes=nodes)


def _parts(node):
    """(prologue, reduce, epilogue, store) of a factorable body, or None."""
    reduces = [k for k, op in enumerate(node.body) if op.op == "reduce"]
    if len(reduces) != 1 or node.body[-1].op != "store":
        return None
    k = reduces[0]
    reduce_op = node.body[k]
    if reduce_op.attr("reduction").name not in COMBINE_OPS:
        return None
    prologue, epilogue = node.body[:k], node.body[k + 1 : -1]
    before = {id(op.result) for op in prologue}
    if any(id(v) in before for op in epilogue + [node.body[-1]] for v in op.operands):
        return None
    if any(op.op in ("load", "index", "indirect") for op in epilogue):
        return None
    return prologue, reduce_op, epilogue, node.body[-1]


def _row_aligned(node, by_id) -> Factoring | None:
    """The factoring at the rows of a reduction that the input needs: its
    group is (outputs x the first k reduced extents, the rest)."""
    reduced = tuple(node.reduction_ranges)
    numel = math.prod(node.ranges)
    boundaries = {
        (numel * math.prod(reduced[:k]), math.prod(reduced[k:])): k
        for k in range(1, len(reduced))
        if reduced[k - 1] > 1
    }
    if not boundaries:
        return None
    k = _row_reduction_behind(node, by_id, boundaries, numel * math.prod(reduced))
    if k is None:
        return None
    n = len(node.ranges)
    outer = tuple((f"i{n + j}", s) for j, s in enumerate(reduced[:k]))
    inner = tuple((f"r{j}", s) for j, s in enumerate(reduced[k:]))
    substitution = {index_var(f"r{j}"): index_var(name) for j, (name, _) in enumerate(outer + inner)}
    return Factoring("row-aligned", substitution, outer, inner)


def _row_reduction_behind(node, by_id, boundaries: dict, elements: int) -> int | None:
    """The boundary of the first reduction found behind the node's
    elementwise producers (pointwise nodes of one value per reduced element)."""
    pending = [op.operands[0] for op in node.body if op.op == "load"]
    seen: set[int] = set()
    while pending and len(seen) < MAX_PRODUCERS:
        producer = by_id.get(id(pending.pop(0)))
        if producer is None or id(producer.result) in seen:
            continue
        seen.add(id(producer.result))
        if producer.kind == "reduction" and node_group(producer) in boundaries:
            return boundaries[node_group(producer)]
        if producer.kind == "pointwise" and math.prod(producer.ranges) == elements:
            pending.extend(op.operands[0] for op in producer.body if op.op == "load")
    return None


def _short_run(node, prologue: list, sector: int) -> Factoring | None:
    """The factoring that makes the heaviest load's contiguous run of
    reduced elements, when shorter than a sector, outputs of the partials."""
    loads = [op for op in prologue if op.op == "load" and _reduced_symbols(op.attr("index"))]
    if not loads:
        return None
    heaviest = max(loads, key=lambda op: _bytes(op.operands[0]))
    atoms = _atoms(node, prologue)
    if atoms is None:
        return None
    substitution, extents = atoms
    index = simplify_index(sympy.sympify(heaviest.attr("index")).xreplace(substitution), extents)
    coefficients = _coefficients(index, extents)
    if coefficients is None:
        return None
    run, length = [], 1
    for name, coef in sorted(coefficients.items(), key=lambda t: (t[1], t[0])):
        if coef != length:
            break
        run.append(name)
        length *= extents[name]
    itemsize = to_torch(heaviest.operands[0].type.dtype).itemsize
    rest = math.prod(s for name, s in extents.items() if name not in run)
    if not run or length * itemsize >= sector or rest < MIN_PARTIAL_RNUMEL:
        return None
    n = len(node.ranges)
    order = list(extents)  # atoms major first, as the reduced variables run
    outer_atoms = sorted(run, key=order.index)
    inner_atoms = [a for a in order if a not in run]
    renamed = {a: f"i{n + j}" for j, a in enumerate(outer_atoms)}
    renamed.update({a: f"r{j}" for j, a in enumerate(inner_atoms)})
    final = {
        old: expr.xreplace({index_var(a): index_var(new) for a, new in renamed.items()})
        for old, expr in substitution.items()
    }
    outer = tuple((renamed[a], extents[a]) for a in outer_atoms)
    inner = tuple((renamed[a], extents[a]) for a in inner_atoms)
    return Factoring("short-run", final, outer, inner)


def _atoms(node, prologue) -> tuple[dict, dict] | None:
    """Each reduced variable as a sum of atoms, cut where the indices divide
    it (`r0 = 400*a0 + 20*a1 + a2` when they take `r0 // 400`, `r0 // 20 % 20`
    and `r0 % 20`), with the atoms' extents, major first; None when the
    indices are not linear in the atoms."""
    indices = [sympy.sympify(op.attr("index")) for op in prologue if op.op in ("load", "index")]
    substitution, extents = {}, {}
    for j, size in enumerate(node.reduction_ranges):
        var = index_var(f"r{j}")
        cuts = sorted(_divisors(indices, var, size), reverse=True)
        if any(a % b for a, b in zip(cuts, cuts[1:])):
            return None  # divisors that do not nest
        bounds = [size] + cuts + [1]
        expr = sympy.Integer(0)
        for k, (hi, lo) in enumerate(zip(bounds, bounds[1:])):
            name = f"a{j}_{k}"
            extents[name] = hi // lo
            expr += lo * index_var(name)
        substitution[var] = expr
    for index in indices:
        if _coefficients(simplify_index(index.xreplace(substitution), extents), extents) is None:
            return None
    return substitution, extents


def _divisors(indices, var, size: int) -> set[int]:
    """The divisors of `size` that `var` is divided by, or reduced modulo,
    in the indices; `mod(floordiv(r, a), b)` also cuts at a*b."""
    found = set()
    for index in indices:
        for term in index.atoms(FloorDiv, Mod):
            base, d = term.args
            if var not in base.free_symbols or not d.is_Integer:
                continue
            cuts = [int(d)]
            if isinstance(term, Mod) and isinstance(base, FloorDiv) and base.args[1].is_Integer:
                cuts.append(int(base.args[1]) * int(d))
            found.update(c for c in cuts if 1 < c < size and size % c == 0)
    return found


def _coefficients(index, extents: dict) -> dict | None:
    """Each atom's coefficient in a linear index; None when an atom appears
    inside a division or modulo."""
    symbols = {index_var(a) for a in extents}
    for term in index.atoms(FloorDiv, Mod):
        if term.free_symbols & symbols:
            return None
    expanded = sympy.expand(index)
    return {a: int(expanded.coeff(index_var(a))) for a in extents if expanded.coeff(index_var(a)) != 0}


def _reduced_symbols(index) -> bool:
    return any(s.name.startswith("r") for s in sympy.sympify(index).free_symbols)


def _bytes(value) -> int:
    t = value.type
    return math.prod(t.shape) * to_torch(t.dtype).itemsize


def factor(node, parts, factoring: Factoring) -> list:
    """The partials node and the combine node, which keeps the node's result;
    `parts` is the node's (prologue, reduce, epilogue, store)."""
    prologue, reduce_op, epilogue, store = parts
    shape = tuple(node.ranges) + tuple(s for _, s in factoring.outer)
    extents = {f"i{k}": s for k, s in enumerate(node.ranges)}
    extents.update(dict(factoring.outer + factoring.inner))
    local: dict[int, Value] = {}
    body = []
    for op in prologue + [reduce_op]:
        attrs = op.attrs
        if op.op in ("load", "index"):
            expr = simplify_index(sympy.sympify(op.attr("index")).xreplace(factoring.substitution), extents)
            attrs = tuple((k, expr if k == "index" else v) for k, v in op.attrs)
        result = Value(op.result.hint, op.result.type)
        local[id(op.result)] = result
        body.append(BodyOp(result, op.op, tuple(local.get(id(v), v) for v in op.operands), attrs))
    body.append(BodyOp(None, "store", (local[id(reduce_op.result)],)))
    acc = reduce_op.result.type
    partial = Value(node.result.hint, BufferType(acc, shape, contiguous_strides(shape)))
    attrs = tuple(sorted(dict(node.attrs, factored=f"[{factoring.rule}]").items()))
    inner = tuple(s for _, s in factoring.inner)
    partials = LoopNode(partial, "reduction", shape, inner, attrs, body, node.loc)
    return [partials, _combine(node, partial, factoring.outer, reduce_op, epilogue + [store])]


def _combine(node, partial: Value, outer, reduce_op, tail_ops: list) -> LoopNode:
    """The node that reduces each output's partials (`outer` their extra
    variables) and runs the reduction's epilogue and store (`tail_ops`)."""
    acc = reduce_op.result.type
    where = strided_index(
        list(loop_vars(len(node.ranges))) + list(loop_vars(len(outer), "r")), partial.type.strides
    )
    if math.prod(s for _, s in outer) <= MAX_UNROLLED:
        head, value = _unrolled(partial, where, outer, COMBINE_OPS[reduce_op.attr("reduction").name], acc)
        reduced = ()
    else:
        load = BodyOp(Value("", acc), "load", (partial,), (("index", where),))
        value = Value(reduce_op.result.hint, acc)
        head = [load, BodyOp(value, "reduce", (load.result,), reduce_op.attrs)]
        reduced = tuple(s for _, s in outer)
    mapped = {id(reduce_op.result): value}
    tail = []
    for op in tail_ops:
        result = Value(op.result.hint, op.result.type) if op.result is not None else None
        tail.append(BodyOp(result, op.op, tuple(mapped.get(id(v), v) for v in op.operands), op.attrs))
        if result is not None:
            mapped[id(op.result)] = result
    kind = "reduction" if reduced else "pointwise"
    return LoopNode(node.result, kind, tuple(node.ranges), reduced, tuple(node.attrs), head + tail, node.loc)


def _unrolled(partial: Value, where, outer, op: str, dtype: str) -> tuple[list, Value]:
    """Loads of each output's few partials folded with the reduction's
    binary op, in order: a pointwise combine, which the inliner may then
    recompute in its readers instead of a kernel launch of its own."""
    ops: list[BodyOp] = []
    value = None
    for flat in range(math.prod(s for _, s in outer)):
        coords, rest = {}, flat
        for k in range(len(outer) - 1, -1, -1):
            coords[index_var(f"r{k}")] = sympy.Integer(rest % outer[k][1])
            rest //= outer[k][1]
        load = BodyOp(Value("", dtype), "load", (partial,), (("index", where.xreplace(coords)),))
        ops.append(load)
        if value is None:
            value = load.result
            continue
        folded = BodyOp(Value("", dtype), op, (value, load.result))
        ops.append(folded)
        value = folded.result
    return ops, value
