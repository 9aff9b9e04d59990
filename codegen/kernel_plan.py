"""Backend-neutral statements of one fused kernel, which each backend renders.

Loads of a buffer computed inside the same kernel become the producer's
stored value (fusion checked that the indices match); a buffer is written to
memory only when it leaves the kernel.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from ir_text import Module, index_var
from scheduler import kernel_io, write_index


@dataclass(frozen=True)
class Load:
    var: str
    source: str
    index: object
    dtype: str


@dataclass(frozen=True)
class Compute:
    var: str
    op: str
    args: tuple[str, ...]
    dtype: str
    attrs: tuple


@dataclass(frozen=True)
class Store:
    target: str
    index: object
    var: str
    dtype: str


@dataclass(frozen=True)
class Reduce:
    """Accumulate `arg` over the r-variables; `var` holds the result afterwards.
    Statements before it run per (i, r), statements after it per output element."""

    var: str
    kind: str
    arg: str
    dtype: str  # the result's
    arg_dtype: str


@dataclass(frozen=True)
class Scan:
    """The inclusive scan of `arg` along loop variable `dim`."""

    var: str
    kind: str
    arg: str
    dtype: str
    dim: int


@dataclass(frozen=True)
class KernelPlan:
    name: str
    ranges: tuple[int, ...]
    reduction: tuple[int, ...]  # r-variable ranges (a reduction kernel), else ()
    params: tuple[tuple[str, str], ...]  # (name, dtype): inputs then outputs
    num_inputs: int
    statements: tuple
    nodes: tuple[str, ...]  # IR names of the nodes, for comments


_RESERVED = set(keyword.kwlist) | {
    "torch",
    "triton",
    "tl",
    "call",
    "args",
    "benchmark",
    "runtime",
    "math",
    "int",
    "float",
    "double",
    "bool",
    "char",
    "long",
    "short",
    "void",
    "auto",
    "const",
    "signed",
    "unsigned",
    "new",
    "delete",
    "this",
    "template",
    "typename",
    "namespace",
    "operator",
    "struct",
    "class",
    "union",
    "enum",
    "static",
    "extern",
    "register",
    "volatile",
    "switch",
    "case",
    "default",
    "goto",
    "sizeof",
    "typedef",
    "std",
}


def identifier(ir_name: str) -> str:
    """A Python and C identifier for an IR value name (`%x.y` -> `x_y`)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", ir_name.lstrip("%"))
    if not name or name[0].isdigit() or name in _RESERVED or name.startswith("_"):
        name = "v_" + name
    return name


def identifiers(names: dict[int, str]) -> dict[int, str]:
    """Unique identifiers for every named value (value id -> identifier)."""
    out, used = {}, set()
    for key, name in names.items():
        base = identifier(name)
        ident, k = base, 1
        while ident in used:
            ident, k = f"{base}_{k}", k + 1
        used.add(ident)
        out[key] = ident
    return out


def plan_kernel(module: Module, kernel, names: dict[int, str], ids: dict[int, str], user_map) -> KernelPlan:
    io = kernel_io(module, kernel, user_map)
    by_id = {id(n.result): n for n in module.nodes}
    outputs = {id(v) for v in io.outputs}
    stored: dict[int, str] = {}
    statements = []
    counter = 0
    indirect = 0
    for v in kernel.nodes:
        node = by_id[id(v)]
        local: dict[int, str] = {}
        # Indirect index symbols are per body in the IR (ind0, ...); in the
        # kernel they are renumbered so fused bodies cannot collide.
        renamed: dict = {}
        for op in node.body:
            if op.op == "indirect":
                name = f"ind{indirect}"
                indirect += 1
                renamed[index_var(op.result.hint)] = index_var(name)
                local[id(op.result)] = name
                statements.append(Compute(name, "indirect", (local[id(op.operands[0])],), "i64", op.attrs))
                continue
            if op.op == "store":
                var = local[id(op.operands[0])]
                stored[id(v)] = var
                if id(v) in outputs:
                    statements.append(Store(ids[id(v)], write_index(node), var, v.type.dtype))
                continue
            if op.op == "load" and id(op.operands[0]) in stored:
                local[id(op.result)] = stored[id(op.operands[0])]
                continue
            var = f"t{counter}"
            counter += 1
            local[id(op.result)] = var
            if op.op == "load":
                source = op.operands[0]
                index = op.attr("index").xreplace(renamed)
                statements.append(Load(var, ids[id(source)], index, op.result.type))
            elif op.op == "index":
                index = op.attr("index").xreplace(renamed)
                statements.append(Compute(var, "index", (), "i64", (("index", index),)))
            elif op.op == "reduce":
                arg = op.operands[0]
                kind = op.attr("reduction").name
                statements.append(Reduce(var, kind, local[id(arg)], op.result.type, arg.type))
            elif op.op == "scan":
                arg = op.operands[0]
                kind = op.attr("reduction").name
                statements.append(Scan(var, kind, local[id(arg)], op.result.type, op.attr("dim")))
            else:
                args = tuple(local[id(a)] for a in op.operands)
                statements.append(Compute(var, op.op, args, op.result.type, op.attrs))
    params = tuple((ids[id(v)], v.type.dtype) for v in io.inputs + io.outputs)
    first = by_id[id(kernel.nodes[0])]
    return KernelPlan(
        kernel.name.name,
        tuple(first.ranges),
        tuple(first.reduction_ranges),
        params,
        len(io.inputs),
        tuple(statements),
        tuple(names[id(v)] for v in kernel.nodes),
    )
