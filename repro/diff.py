"""`tirc diff`: a structural diff of two dumps that ignores value numbering.

Inserting one node renumbers every later anonymous value (`%buf3` becomes
`%buf4`), so a plain text diff shows every later line as changed. Instead,
the values of B are matched to the values of A, and B is printed with each
matched value under its partner's name; the two texts are then diffed line
by line. Unmatched values of B get names that A does not use.

Matching, per scope (module-level values, then each pair of matched loop
bodies):
1. exact: a Merkle-style key per definition (what defines it, its
   attributes and types, and the keys of its operands); equal keys pair up,
   in order where they can, else in definition order. Inputs pair by name
   first, then by type.
2. aligned: what is left pairs along a sequence alignment of the
   definitions (difflib), by op and type, so that a changed op (add -> sub)
   and the values computed from it still pair with their old selves.
Kernels (`@k0`, symbols rather than values) pair by the nodes they hold,
then in order, and are renamed the same way.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass

from ir_text import (
    BodyOp,
    ExternNode,
    GraphOp,
    Module,
    Symbol,
    Value,
    print_ir,
    print_named,
    structurally_equal,
)


@dataclass
class _Def:
    """One definition in a scope: `exact` is its structural key, `loose`
    what it is without its operands, `coarse` only its kind and type."""

    value: object
    exact: object
    loose: object
    coarse: object


def diff_modules(a: Module, b: Module, first: str = "A", second: str = "B") -> str:
    """A unified diff (labels a/FIRST, b/SECOND) of `b` against `a`, B's
    values renamed after their partners in A; "" when the two are the same
    program up to the names of values."""
    if structurally_equal(a, b):
        return ""
    text_a, names_a = print_named(a)
    pairs = _match_values(a, b)
    renamed = _rename_kernels(a, b, pairs)
    preset = {id(vb): names_a[id(va)] for vb, va in pairs.items() if id(va) in names_a}
    # `indK` names are fixed by the position of `indirect` in the body (and
    # index expressions use them): they keep their own names.
    _, names_b = print_named(renamed)
    for node in renamed.nodes:
        for op in getattr(node, "body", ()):
            if op.op == "indirect":
                preset[id(op.result)] = names_b[id(op.result)]
    text_b, _ = print_named(renamed, preset, reserved=set(names_a.values()))
    if text_a == text_b:  # only kernel names differ: show them
        text_b = print_ir(b)
    lines = difflib.unified_diff(
        text_a.splitlines(keepends=True), text_b.splitlines(keepends=True), f"a/{first}", f"b/{second}"
    )
    return "".join(lines)


# --- matching -------------------------------------------------------------


class _Keys:
    """Interns structural signatures as small ints, shared by both modules,
    so that equal structures get equal keys and keys stay cheap to hash."""

    def __init__(self):
        self.table: dict[object, int] = {}

    def intern(self, signature) -> int:
        return self.table.setdefault(signature, len(self.table))


def _shape(x, token):
    """A hashable rendering of an IR literal or dataclass, each Value given
    as `token(value)`; positions are left out."""
    if isinstance(x, Value):
        return token(x)
    if isinstance(x, (tuple, list)):
        return tuple(_shape(y, token) for y in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = (f.name for f in dataclasses.fields(x) if f.name != "pos")
        return (type(x).__name__,) + tuple(_shape(getattr(x, f), token) for f in fields)
    # repr keeps True apart from 1 and nan equal to nan.
    return (type(x).__name__, repr(x) if isinstance(x, float) else x)


def _match_values(a: Module, b: Module) -> dict[Value, Value]:
    """Pairs {value of B: value of A}, module-level and loop-body values."""
    pairs = _match_inputs(a, b)
    keys = _Keys()
    key_a = _input_keys(a, {va: k for k, va in enumerate(pairs.values())}, "a")
    key_b = _input_keys(b, {vb: k for k, vb in enumerate(pairs)}, "b")
    defs_a = _module_defs(a, key_a, keys)
    defs_b = _module_defs(b, key_b, keys)
    pairs.update(_pair(defs_a[len(a.inputs) :], defs_b[len(b.inputs) :]))
    nodes_a = {id(n.result): n for n in a.nodes if n.kind != "extern"}
    for node in b.nodes:
        partner = nodes_a.get(id(pairs.get(node.result))) if node.kind != "extern" else None
        if partner is not None:
            pairs.update(_match_bodies(partner, node, pairs))
    return pairs


def _match_inputs(a: Module, b: Module) -> dict[Value, Value]:
    """Inputs pair by name, then the rest by type, in order."""
    by_name = {inp.value.hint: inp.value for inp in a.inputs if inp.value.hint}
    pairs = {}
    for inp in b.inputs:
        partner = by_name.get(inp.value.hint) if inp.value.hint else None
        if partner is not None:
            pairs[inp.value] = partner
    taken = set(map(id, pairs.values()))
    for inp in b.inputs:
        if inp.value in pairs:
            continue
        for other in a.inputs:
            if id(other.value) not in taken and other.value.type == inp.value.type:
                pairs[inp.value] = other.value
                taken.add(id(other.value))
                break
    return pairs


def _input_keys(module: Module, paired: dict[Value, int], side: str) -> dict[int, object]:
    return {
        id(inp.value): ("input", paired[inp.value]) if inp.value in paired else ("input", side, k)
        for k, inp in enumerate(module.inputs)
    }


def _module_defs(module: Module, key: dict[int, object], keys: _Keys) -> list[_Def]:
    """The module's values in definition order, each with its keys; `key`
    (value id -> key) starts with the inputs' and grows as definitions are met.
    The loose key is the exact one with every operand masked."""

    def token(v):
        return ("v", key.get(id(v)))

    def masked(v):
        return "?"

    defs = [_Def(inp.value, key[id(inp.value)], ("input",), ("input",)) for inp in module.inputs]
    for item in [*module.graph, *module.nodes]:
        if isinstance(item, (GraphOp, ExternNode)):
            category = "graph" if isinstance(item, GraphOp) else "extern"
            types = tuple(_shape(v.type, token) for v in item.results)
            for j, v in enumerate(item.results):
                exact, loose = (
                    (category, item.target, _shape(item.args, t), _shape(item.kwargs, t), types, j)
                    for t in (token, masked)
                )
                key[id(v)] = keys.intern(exact)
                defs.append(_Def(v, key[id(v)], loose, (category, types, j)))
        else:
            t = _shape(item.type, token)
            exact, loose = (
                ("loop", item.kind, item.ranges, item.reduction_ranges, _shape(item.attrs, tok), t)
                + (_body_signature(item.body, tok),)
                for tok in (token, masked)
            )
            key[id(item.result)] = keys.intern(exact)
            defs.append(_Def(item.result, key[id(item.result)], loose, ("loop", t)))
    return defs


def _body_signature(body: list[BodyOp], outer) -> tuple:
    """A body's ops, each local operand given by the position of its definition."""
    local = {id(op.result): k for k, op in enumerate(body) if op.result is not None}

    def token(v):
        return ("local", local[id(v)]) if id(v) in local else outer(v)

    return tuple(_body_op(op, token) for op in body)


def _body_op(op: BodyOp, token) -> tuple:
    result_type = op.result.type if op.result is not None else None
    return (op.op, tuple(token(v) for v in op.operands), _shape(op.attrs, token), result_type)


def _match_bodies(node_a, node_b, pairs: dict[Value, Value]) -> dict[Value, Value]:
    """Pairs of body values of two matched loop nodes. Module-level operands
    are compared through the module-level pairs."""
    keys = _Keys()

    def defs(node, outer):
        key: dict[int, int] = {}

        def token(v):
            return ("local", key[id(v)]) if id(v) in key else outer(v)

        out = []
        for op in node.body:
            if op.result is None:
                continue
            key[id(op.result)] = keys.intern(_body_op(op, token))
            loose = _body_op(op, lambda v: "?")
            out.append(_Def(op.result, key[id(op.result)], loose, (op.result.type,)))
        return out

    def outer_b(v):
        return ("outer", id(pairs[v])) if v in pairs else ("outer b", id(v))

    return _pair(defs(node_a, lambda v: ("outer", id(v))), defs(node_b, outer_b))


def _pair(defs_a: list[_Def], defs_b: list[_Def]) -> dict:
    """Pairs {B def's value: A def's value}: equal exact keys, first along an
    alignment (so that the pairs keep their order where they can), then
    anywhere (a moved definition, ties in definition order); then the rest
    along an alignment of what they are."""
    partner: dict[int, int] = {}  # index in B -> index in A
    exact_a, exact_b = [d.exact for d in defs_a], [d.exact for d in defs_b]
    matcher = difflib.SequenceMatcher(None, exact_a, exact_b, autojunk=False)
    for block in matcher.get_matching_blocks():
        partner.update((block.b + k, block.a + k) for k in range(block.size))
    waiting: dict[object, list[int]] = {}
    matched_a = set(partner.values())
    for i, key in enumerate(exact_a):
        if i not in matched_a:
            waiting.setdefault(key, []).append(i)
    for j, key in enumerate(exact_b):
        if j not in partner and waiting.get(key):
            partner[j] = waiting[key].pop(0)
    matched_a = set(partner.values())
    tokens_a = [("m", i) if i in matched_a else d.loose for i, d in enumerate(defs_a)]
    tokens_b = [("m", partner[j]) if j in partner else d.loose for j, d in enumerate(defs_b)]
    for i, j in _aligned(tokens_a, tokens_b, defs_a, defs_b):
        if j not in partner and i not in matched_a:
            partner[j] = i
            matched_a.add(i)
    return {defs_b[j].value: defs_a[i].value for j, i in partner.items()}


def _aligned(tokens_a, tokens_b, defs_a, defs_b):
    """Index pairs (i, j) that a sequence alignment puts side by side: equal
    tokens, and within a replaced stretch, equal coarse keys."""
    matcher = difflib.SequenceMatcher(None, tokens_a, tokens_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            yield from zip(range(i1, i2), range(j1, j2))
        elif tag == "replace":
            coarse_a = [d.coarse for d in defs_a[i1:i2]]
            coarse_b = [d.coarse for d in defs_b[j1:j2]]
            inner = difflib.SequenceMatcher(None, coarse_a, coarse_b, autojunk=False)
            for sub, k1, k2, l1, l2 in inner.get_opcodes():
                if sub == "equal":
                    yield from zip(range(i1 + k1, i1 + k2), range(j1 + l1, j1 + l2))


# --- kernels --------------------------------------------------------------


def _rename_kernels(a: Module, b: Module, pairs: dict[Value, Value]) -> Module:
    """`b` with each kernel named as its partner in A (the kernel holding the
    same nodes, else the one at its place in order); the others keep their
    name unless A uses it."""
    if not a.kernels or not b.kernels:
        return b
    defs_a = [_Def(k, tuple(map(id, k.nodes)), "kernel", "kernel") for k in a.kernels]
    defs_b = [_Def(k, tuple(id(pairs.get(v, v)) for v in k.nodes), "kernel", "kernel") for k in b.kernels]
    partner = _pair(defs_a, defs_b)
    taken = {k.name.name for k in a.kernels}
    names = {}
    for k in b.kernels:
        if k in partner:
            names[k.name.name] = partner[k].name.name
    for k in b.kernels:
        if k not in partner:
            name, n = k.name.name, 0
            while name in taken or name in names.values():
                name, n = f"k{n}", n + 1
            names[k.name.name] = name

    def renamed(symbol):
        return Symbol(names.get(symbol.name, symbol.name)) if symbol is not None else None

    kernels = [dataclasses.replace(k, name=renamed(k.name)) for k in b.kernels]
    wrapper = b.wrapper and [dataclasses.replace(line, kernel=renamed(line.kernel)) for line in b.wrapper]
    return dataclasses.replace(b, kernels=kernels, wrapper=wrapper)
