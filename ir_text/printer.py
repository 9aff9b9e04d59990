"""Module -> text: the inverse of the parser, and the definition of canonical form.

The printer assigns every value its name: inputs and named values keep their
hint (made unique), anonymous graph values are numbered %0, %1, ..., loop
buffers %buf0, %buf1, ... and loop-body values %0, %1, ... per body, all in
definition order. Attributes are printed sorted by key.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .index import render_index
from .model import Device, Enum, Module, Symbol, Value

VERSION = "0.1"


class _Namer:
    def __init__(self, preset: dict[int, str] | None = None, reserved=()):
        self.names: dict[int, str] = {}
        # Names given in advance (by value id), which no other value may take.
        self.preset = preset or {}
        self.used: set[str] = set(reserved) | set(self.preset.values())
        self.counters: dict[str, int] = {}

    def define(self, value: Value, prefix: str) -> str:
        hint = value.hint
        if id(value) in self.preset:
            name = self.preset[id(value)]
        elif hint:
            name, k = hint, 1
            while name in self.used:
                name, k = f"{hint}_{k}", k + 1
        else:
            while True:
                n = self.counters.get(prefix, 0)
                self.counters[prefix] = n + 1
                name = f"{prefix}{n}"
                if name not in self.used:
                    break
        self.used.add(name)
        self.names[id(value)] = name
        return "%" + name

    def __call__(self, value: Value) -> str:
        return "%" + self.names[id(value)]


def format_literal(value, names=None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, Device):
        return f"device({format_literal(value.name)})"
    if isinstance(value, Symbol):
        return "@" + value.name
    if isinstance(value, Value):
        return names(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_literal(v, names) for v in value) + "]"
    raise TypeError(f"cannot print literal {value!r}")


def format_attrs(attrs, names=None) -> str:
    inner = ", ".join(f"{k} = {format_literal(v, names)}" for k, v in sorted(attrs))
    return "{" + inner + "}"


def format_fact(fact, names) -> str:
    """One schedule fact as printed; `names(value)` gives a value's `%name`."""

    def dep(d) -> str:
        return f"{names(d.buffer)}[{'*' if d.index is None else render_index(d.index)}]"

    reads = ", ".join(dep(d) for d in fact.reads)
    writes = ", ".join(dep(d) for d in fact.writes)
    users = ", ".join(format_literal(u, names) for u in fact.users)
    return (
        f"node {names(fact.node)} group ({fact.group[0]}, {fact.group[1]}) reads [{reads}] "
        f"writes [{writes}] users [{users}]"
    )


def format_type(t) -> str:
    return f"{t.dtype}[{', '.join(map(str, t.shape))}]"


def _loc(loc) -> str:
    return f" loc({format_literal(loc.file)}:{loc.line})" if loc else ""


def _ranges(node) -> str:
    iters = ", ".join(f"i{k} < {s}" for k, s in enumerate(node.ranges))
    if not node.reduction_ranges:
        return f"[{iters}]"
    reds = ", ".join(f"r{k} < {s}" for k, s in enumerate(node.reduction_ranges))
    return f"[{iters}; {reds}]"


class _Printer:
    def __init__(self, module: Module, names: _Namer | None = None):
        self.m = module
        self.names = names or _Namer()
        self.lines: list[str] = []
        self.body_names: dict[int, str] = {}
        # The line (1-based) each item is printed on, by the item's id.
        self.item_lines: dict[int, int] = {}

    def _at(self, item) -> None:
        """`item` is printed on the next line."""
        self.item_lines[id(item)] = len(self.lines) + 1

    def run(self) -> str:
        m = self.m
        self.lines.append(f"tirc {m.version} stage={m.stage} source={format_literal(m.source)}")
        self.lines.append("options " + format_attrs(m.options))
        if m.layout is not None:
            self.lines.append(f"layout {m.layout[0]} {format_attrs(m.layout[1])}")
        for inp in m.inputs:
            name = self.names.define(inp.value, "arg")
            attrs = (("device", inp.device), ("seed", inp.seed), ("strides", inp.value.type.strides))
            if inp.sha256 is not None:
                attrs += (("sha256", inp.sha256),)
            if inp.range is not None:
                attrs += (("range", inp.range),)
            self._at(inp)
            self.lines.append(f"input {name} : {format_type(inp.value.type)} {format_attrs(attrs)}")
        self.lines.append("")
        for op in m.graph:
            self._graph_op(op)
        for node in m.nodes:
            if node.kind == "extern":
                self._extern_node(node)
            else:
                self._loop_node(node)
        for target, value in m.updates:
            self.lines.append(f"update {self.names(target)} = {self.names(value)}")
        outs = ", ".join(self.names(v) for v in m.outputs)
        self.lines.append(f"return ({outs})")
        if m.facts is not None:
            self._schedule()
        if m.kernels is not None:
            self._fusion()
        if m.wrapper is not None:
            self._wrapper()
        return "\n".join(self.lines) + "\n"

    def _graph_op(self, op):
        results = ", ".join(self.names.define(v, "") for v in op.results)
        args = ", ".join(format_literal(a, self.names) for a in op.args)
        attrs = " " + format_attrs(op.kwargs, self.names) if op.kwargs else ""
        types = [format_type(v.type) for v in op.results]
        type_text = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
        self._at(op)
        self.lines.append(f"{results} = {op.target}({args}){attrs} : {type_text}{_loc(op.loc)}")

    def _loop_node(self, node):
        name = self.names.define(node.result, "buf")
        t = node.result.type
        attrs = " " + format_attrs(node.attrs, self.names) if node.attrs else ""
        strides = ", ".join(map(str, t.strides))
        self._at(node)
        self.lines.append(
            f"{name} = loop.{node.kind} {_ranges(node)}{attrs} : {format_type(t)} strides [{strides}] {{"
        )
        local = _Namer(self.names.preset)
        local.names = dict(self.names.names)
        local.used = set(self.names.used)
        for op in node.body:
            self.lines.append("  " + self._body_op(op, local))
        self.body_names.update(local.names)
        self.lines.append("}" + _loc(node.loc))

    def _extern_node(self, node):
        schema = extern_schema(node.target)
        if schema:
            self.lines.append(f"// {schema}")
        args = ", ".join(format_literal(a, self.names) for a in node.args)
        attrs = " " + format_attrs(node.kwargs, self.names) if node.kwargs else ""
        results = ", ".join(self.names.define(v, "buf") for v in node.results)
        layouts = [
            f"{format_type(v.type)} strides [{', '.join(map(str, v.type.strides))}]" for v in node.results
        ]
        layout_text = layouts[0] if len(layouts) == 1 else "(" + ", ".join(layouts) + ")"
        self._at(node)
        self.lines.append(f"{results} = extern {node.target}({args}){attrs} : {layout_text}{_loc(node.loc)}")

    def _body_op(self, op, local) -> str:
        if op.op == "store":
            return f"store {local(op.operands[0])}"
        result = local.define(op.result, "")
        if op.op == "load":
            index = render_index(op.attr("index"))
            return f"{result} = load {local(op.operands[0])}[{index}] : {op.result.type}"
        if op.op == "index":
            return f"{result} = index [{render_index(op.attr('index'))}] : {op.result.type}"
        operands = ", ".join(local(v) for v in op.operands)
        attrs = " " + format_attrs(op.attrs, local) if op.attrs else ""
        return f"{result} = {op.op}({operands}){attrs} : {op.result.type}"

    def _schedule(self):
        self.lines += ["", "schedule {"]
        for fact in self.m.facts:
            self._at(fact)
            self.lines.append("  " + format_fact(fact, self.names))
        self.lines.append("}")

    def _fusion(self):
        self.lines += ["", "fusion {"]
        for k in self.m.kernels:
            nodes = "; ".join(", ".join(self.names(v) for v in nest) for nest in k.loop_nests())
            attrs = " " + format_attrs(k.attrs, self.names) if k.attrs else ""
            self._at(k)
            self.lines.append(f"  kernel @{k.name.name} = fuse({nodes}){attrs}")
        for r in self.m.refusals or ():
            reason = format_literal(r.reason)
            self._at(r)
            self.lines.append(
                f"  refused({self.names(r.first)}, {self.names(r.second)}) {{reason = {reason}}}"
            )
        self.lines.append("}")

    def _wrapper(self):
        self.lines += ["", "wrapper {"]
        for line in self.m.wrapper:
            self._at(line)
            if line.op in ("launch", "extern"):
                ins = ", ".join(self.names(v) for v in line.operands)
                outs = ", ".join(self.names(v) for v in line.results)
                self.lines.append(f"  {line.op} @{line.kernel.name}({ins}) -> ({outs})")
            elif line.op == "reuse":
                self.lines.append(f"  reuse {self.names(line.operands[0])} as {self.names(line.results[0])}")
            else:
                self.lines.append(f"  {line.op} {self.names(line.operands[0])}")
        self.lines.append("}")


def extern_schema(target: str) -> str | None:
    """The ATen schema of an extern call, printed above it for the reader
    (a comment: the op name with its overload is what the parser reads):
    the table of op_facts.py in a process without torch, else torch's."""
    from .op_facts import known_op

    known = known_op(target)
    return known.schema if known is not None else live_schema(target)


@functools.lru_cache(maxsize=4096)
def live_schema(target: str) -> str | None:
    """extern_schema, asked of torch."""
    from .graph_check import resolve_target

    overload = resolve_target(target)
    return str(overload._schema) if overload is not None else None


def print_ir(module: Module) -> str:
    """The canonical text of a module."""
    return _Printer(module).run()


def print_named(
    module: Module, names: dict[int, str] | None = None, reserved=()
) -> tuple[str, dict[int, str]]:
    """The module's text with preset names: `names` maps a value's id to its
    name (without `%`); the other values are named as usual, but never with a
    preset or `reserved` name. Also returns every value's name, loop-body
    values included, keyed by id (for `tirc diff`, which prints one dump
    with the other's names)."""
    printer = _Printer(module, _Namer(names, reserved))
    text = printer.run()
    return text, {**printer.body_names, **printer.names.names}


@dataclass(frozen=True)
class PrintedModule:
    """A module's canonical text, the printed name (with `%`) of every
    module-level value and the line (1-based) each item is printed on, both
    keyed by id: inputs, graph ops, loop and extern nodes (an extern node's
    own line, below its schema comment), schedule facts, kernels, refusals
    and wrapper lines. A loop node's body follows its line, one op a line,
    then its closing `}`."""

    text: str
    names: dict[int, str]
    lines: dict[int, int]


def print_located(module: Module) -> PrintedModule:
    """The canonical text of a module, with where each item and value is in it
    (for tools that link a dump's lines to its items: `tirc report`)."""
    printer = _Printer(module)
    text = printer.run()
    names = {k: "%" + v for k, v in printer.names.names.items()}
    return PrintedModule(text, names, printer.item_lines)


def value_names(module: Module) -> dict[int, str]:
    """The printed name (with `%`) of every module-level value, keyed by id."""
    printer = _Printer(module)
    printer.run()
    return {k: "%" + v for k, v in printer.names.names.items()}
