"""The iteration space of a fused kernel, and where each of its nodes runs in it.

A kernel iterates over the output elements of its first reduction (its
*rows*, the i-variables) and, per row, over the reduced elements (the
r-variables); a kernel without a reduction iterates over its first node's
elements. Size-1 dimensions are dropped. Each node takes a *level*:

- `reduction`: a reduction of the kernel's (numel, rnumel) group;
- `row`: a pointwise node with one element per row (an epilogue);
- `elem`: a pointwise node with one element per (row, reduced element): a
  prologue of a reduction, or an elementwise step after one (softmax's
  division), as Inductor fuses a pointwise node into a reduction when its
  numel is the reduction's numel * rnumel.

Every node's loop variables map onto the kernel's in row-major order (the
`mapping`); fusion is legal when, under these mappings, each node reads every
buffer produced inside the kernel at exactly the element its producer writes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy

from ir_text import FloorDiv, Mod, index_var, loop_vars, render_index, simplify_index, strided_index

from .deps import node_group, write_index


@dataclass(frozen=True)
class Place:
    level: str  # "reduction", "row" or "elem"
    mapping: tuple  # (node's loop variable, expression over the kernel's variables)

    def apply(self, expr, ranges: dict[str, int]):
        """An index of the node's variables as one of the kernel's."""
        return _substitute(sympy.sympify(expr), self.mapping, tuple(sorted(ranges.items())))


@dataclass(frozen=True)
class KernelSpace:
    ranges: tuple[int, ...]  # the kernel's i-variable extents
    reduction: tuple[int, ...]  # its r-variable extents, () without a reduction
    places: dict  # id(node) -> Place

    @property
    def variables(self) -> dict[str, int]:
        out = {f"i{k}": s for k, s in enumerate(self.ranges)}
        out.update({f"r{k}": s for k, s in enumerate(self.reduction)})
        return out

    def write_index(self, node):
        """Where the node stores its element, over the kernel's variables."""
        index = strided_index(loop_vars(len(node.ranges)), node.result.type.strides)
        return self.places[id(node)].apply(index, self.variables)


class Refused(Exception):
    """Nodes that cannot share a kernel; the message is the refusal reason."""


def anchor(nodes: list):
    """The node whose loops the kernel runs: its first reduction or scan, else its first node."""
    return next((n for n in nodes if n.kind in ("reduction", "scan")), nodes[0])


def kernel_group(nodes: list) -> tuple[int, int]:
    return node_group(anchor(nodes))


def kernel_space(nodes: list, names) -> KernelSpace:
    """The space of a kernel holding `nodes` (program order); raises Refused
    when a node's size fits neither level or a read crosses elements."""
    first = anchor(nodes)
    numel, rnumel = node_group(first)
    ranges = tuple(s for s in first.ranges if s != 1)
    reduction = tuple(s for s in first.reduction_ranges if s != 1)
    if first.kind == "scan":
        # A scan's kernel runs its loops, all of them (`dim` numbers them);
        # pointwise nodes over the same elements run inside them.
        ranges = tuple(first.ranges)
    space = KernelSpace(ranges, reduction, {})
    levels = {id(n): _place(n, numel, rnumel, ranges, reduction, names) for n in nodes}
    for n in nodes:
        if n.kind in ("reduction", "scan"):
            space.places[id(n)] = levels[id(n)]
    pending = [n for n in nodes if n.kind not in ("reduction", "scan")]
    links = _Links(nodes, [n for n in nodes if id(n) in space.places])
    while pending:
        # Place next a node related to a placed one, so that it can take the
        # arrangement its neighbours imply (a transposed read, a reduction
        # over a leading dimension); otherwise the row-major one. A producer
        # or reader of a placed node goes before a node that only shares a
        # source with one: a shared source may be read at another element
        # (a variance's center, the row's first element), which implies no
        # arrangement, and a node placed by it would misplace its readers.
        node = next(
            (n for n in pending if links.linked(n)),
            next((n for n in pending if _related(n, nodes, space)), pending[0]),
        )
        pending.remove(node)
        flat = levels[id(node)]
        options = [Place(flat.level, m) for m in _aligned_mappings(node, nodes, space, flat.level)] + [flat]
        space.places[id(node)] = next((p for p in options if _fits(node, p, nodes, space, names)), flat)
        links.place(node)
    _check_reads(nodes, space, names)
    return space


def _related(node, nodes, space: KernelSpace) -> bool:
    placed = [m for m in nodes if id(m) in space.places]
    return any(_accesses(node, m) for m in placed)


class _Links:
    """Which nodes read a placed node's result, or have theirs read by one."""

    def __init__(self, nodes: list, placed: list):
        self.loads = {id(n): {id(op.operands[0]) for op in n.body if op.op == "load"} for n in nodes}
        self.results: set[int] = set()  # of the placed nodes
        self.read: set[int] = set()  # by the placed nodes
        for node in placed:
            self.place(node)

    def place(self, node) -> None:
        self.results.add(id(node.result))
        self.read |= self.loads[id(node)]

    def linked(self, node) -> bool:
        return bool(self.loads[id(node)] & self.results) or id(node.result) in self.read


@functools.lru_cache(maxsize=65536)
def _accesses(a, b) -> tuple:
    """(index in a's variables, index in b's variables) of the element one
    reads where the other reads or writes it: shared sources, and the buffer
    one of them produces for the other."""
    pairs = []
    for op in a.body:
        if op.op != "load":
            continue
        for other in b.body:
            if other.op == "load" and other.operands[0] is op.operands[0]:
                pairs.append((op.attr("index"), other.attr("index")))
        if op.operands[0] is b.result:
            pairs.append((op.attr("index"), write_index(b)))
    for other in b.body:
        if other.op == "load" and other.operands[0] is a.result:
            pairs.append((write_index(a), other.attr("index")))
    return tuple(pairs)


def _aligned_mappings(node, nodes, space: KernelSpace, level: str) -> list[tuple]:
    """Mappings of the node's variables onto the kernel's that make one of
    its accesses coincide with a placed node's access of the same element,
    by matching strides (see _match), in a deterministic order. A `row`
    node maps onto the kernel's i-variables, an `elem` node onto all."""
    variables = space.variables
    targets = tuple(sorted((v, s) for v, s in variables.items() if level == "elem" or v.startswith("i")))
    out = []
    for other in nodes:
        place = space.places.get(id(other))
        if place is None:
            continue
        for mine, theirs in _accesses(node, other):
            theirs = place.apply(theirs, variables)
            mapping = _match(sympy.sympify(mine), theirs, tuple(node.ranges), targets)
            if mapping is not None and mapping not in out:
                out.append(mapping)
    return out


@functools.lru_cache(maxsize=65536)
def _match(mine, theirs, sizes: tuple, variables: tuple):
    """The node's variables (extents `sizes`) as expressions of the kernel's
    `variables` ((name, extent) pairs) under which the affine index `mine`
    equals `theirs`, the mapping a bijection of the two iteration spaces;
    None if there is none of this kind.

    Each variable of stride c and extent n spans the strides c .. c*n. Cut
    at every stride where a variable of either side starts or ends, the
    variables fall into *digits* (lo, hi); the two sides must have the same
    digits, none twice. So a node's dimension may be one kernel variable, or
    several (a map's h and w where the kernel runs its pixels as one), or a
    part of one (the h of a kernel variable over h * w), whatever the order
    of the two sides' variables."""
    variables = dict(variables)
    own = _coefficients(mine)
    kernel = _coefficients(theirs)
    if own is None or kernel is None or not set(kernel) <= set(variables):
        return None
    dims = {f"i{k}": size for k, size in enumerate(sizes) if size != 1}
    if any(own.get(v, 0) <= 0 for v in dims) or any(kernel.get(v, 0) <= 0 for v in variables):
        return None  # a variable the access does not move along, or moves backwards along
    node_side = {v: (own[v], n) for v, n in dims.items()}
    kernel_side = {v: (kernel[v], n) for v, n in variables.items()}
    node_digits = _digits(node_side, kernel_side)
    kernel_digits = _digits(kernel_side, node_side)
    if node_digits is None or kernel_digits is None:
        return None
    owner = {digit: var for var, digit in kernel_digits}
    wanted = [digit for _, digit in node_digits]
    if len(owner) != len(kernel_digits) or len(set(wanted)) != len(wanted) or set(wanted) != set(owner):
        return None
    values = {}
    for var, (lo, hi) in node_digits:
        source = owner[(lo, hi)]
        stride, extent = kernel_side[source]
        digit = index_var(source) if lo == stride else FloorDiv(index_var(source), lo // stride)
        if hi != stride * extent:
            digit = Mod(digit, hi // lo)
        values[var] = values.get(var, 0) + digit * (lo // own[var])
    return tuple(
        (index_var(f"i{k}"), simplify_index(values[f"i{k}"], variables) if size != 1 else sympy.Integer(0))
        for k, size in enumerate(sizes)
    )


def _digits(side: dict, other: dict) -> list | None:
    """[(variable, (lo, hi))] of `side`'s variables ({name: (stride, extent)})
    cut at every stride where a variable of either side starts or ends; None
    where a cut does not divide (no digit decomposition)."""
    spans = list(side.values()) + list(other.values())
    cuts = sorted({c for c, _ in spans} | {c * n for c, n in spans})
    out = []
    for var, (stride, extent) in sorted(side.items()):
        lo = stride
        for cut in cuts:
            if stride < cut < stride * extent:
                if cut % lo:
                    return None
                out.append((var, (lo, cut)))
                lo = cut
        if (stride * extent) % lo:
            return None
        out.append((var, (lo, stride * extent)))
    return out


def affine_strides(index) -> dict[str, int] | None:
    """{variable: stride} of an affine index, None if it is not affine."""
    return _coefficients(sympy.sympify(index))


@functools.lru_cache(maxsize=65536)
def _coefficients(expr) -> dict[str, int] | None:
    """{variable: coefficient} of an affine index (None if it is not affine)."""
    out = {}
    for term in sympy.Add.make_args(sympy.expand(expr)):
        coeff, body = term.as_coeff_Mul()
        if body == 1:
            continue
        if not (body.is_Symbol and coeff.is_Integer):
            return None
        out[body.name] = int(coeff)
    return out


def _fits(node, place: "Place", nodes, space: KernelSpace, names) -> bool:
    """Whether, with `place`, the node's reads and its readers among the placed nodes line up."""
    trial = KernelSpace(space.ranges, space.reduction, dict(space.places))
    trial.places[id(node)] = place
    placed = [n for n in nodes if id(n) in trial.places]
    try:
        # Only the reads to and from `node` decide between its options: those
        # among the nodes placed before are the same whichever it takes (and
        # kernel_space checks every read once all are placed).
        _check_reads(placed, trial, names, involving=node)
    except Refused:
        return False
    return True


def _place(node, numel: int, rnumel: int, ranges, reduction, names) -> Place:
    n, r = node_group(node)
    label = names[id(node.result)]
    if node.kind == "scan":
        return Place("row", tuple((v, v) for v in loop_vars(len(node.ranges))))
    if node.kind == "reduction":
        if (n, r) != (numel, rnumel):
            raise Refused(
                f"[group] reduction sizes differ: {label} is {(n, r)}, the kernel {(numel, rnumel)}"
            )
        outer = flat_mapping(tuple(node.ranges), "i", ranges, ())
        inner = flat_mapping(tuple(node.reduction_ranges), "r", (), reduction)
        return Place("reduction", outer + inner)
    if n == numel:
        return Place("row", flat_mapping(tuple(node.ranges), "i", ranges, ()))
    if rnumel > 1 and n == numel * rnumel:
        return Place("elem", flat_mapping(tuple(node.ranges), "i", ranges, reduction))
    fits = f"{numel} rows" + (f" or {numel * rnumel} elements" if rnumel > 1 else "")
    raise Refused(f"[group] {label} has {n} elements, the kernel {fits} ({(numel, rnumel)})")


@functools.lru_cache(maxsize=4096)
def flat_mapping(sizes: tuple[int, ...], prefix: str, ranges: tuple, reduction: tuple) -> tuple:
    """Variables `prefix0..` over `sizes`, as the row-major unflattening of
    the kernel's i-variables then r-variables (whose element counts agree).
    With no elements (a size of 0) no iteration runs, so every variable
    maps to 0; unflattening would divide by the zero size."""
    if 0 in sizes:
        return tuple((index_var(f"{prefix}{k}"), sympy.Integer(0)) for k in range(len(sizes)))
    kernel_vars = list(loop_vars(len(ranges))) + list(loop_vars(len(reduction), "r"))
    extents = list(ranges) + list(reduction)
    flat, stride = sympy.Integer(0), 1
    for v, size in zip(reversed(kernel_vars), reversed(extents)):
        flat += stride * v
        stride *= size
    variables = {v.name: s for v, s in zip(kernel_vars, extents)}
    mapping, stride = [], 1
    for k in range(len(sizes) - 1, -1, -1):
        expr = Mod(FloorDiv(flat, stride), sizes[k]) if sizes[k] != 1 else sympy.Integer(0)
        mapping.append((index_var(f"{prefix}{k}"), simplify_index(expr, variables)))
        stride *= sizes[k]
    return tuple(reversed(mapping))


@functools.lru_cache(maxsize=65536)
def _substitute(expr, mapping: tuple, ranges: tuple):
    return simplify_index(expr.xreplace(dict(mapping)), dict(ranges))


def _check_reads(nodes, space: KernelSpace, names, involving=None) -> None:
    """Each read of a buffer computed in the kernel must take the element
    its producer writes, and per-row code cannot read per-element values;
    with `involving`, only the reads by or from that node."""
    producers = {id(n.result): n for n in nodes}
    variables = space.variables
    for consumer in nodes:
        place = space.places[id(consumer)]
        level = place.level
        for op in consumer.body:
            if op.op == "reduce":
                level = "row"  # the epilogue runs once per row
            if op.op != "load" or id(op.operands[0]) not in producers:
                continue
            producer = producers[id(op.operands[0])]
            if involving is not None and involving is not consumer and involving is not producer:
                continue
            who, whom = names[id(consumer.result)], names[id(producer.result)]
            index = op.attr("index")
            if any(s.name.startswith("ind") for s in sympy.sympify(index).free_symbols):
                raise Refused(f"[indirect] {who} reads {whom} at an indirect index")
            if space.places[id(producer)].level == "elem" and level == "row":
                raise Refused(f"[level] {who} runs once per row but reads {whom}, a per-element value")
            read = place.apply(index, variables)
            written = space.write_index(producer)
            if sympy.expand(read - written) != 0:
                raise Refused(
                    f"[memory-deps] {who} reads {whom}[{render_index(read)}] but it is written at"
                    f" [{render_index(written)}]"
                )
