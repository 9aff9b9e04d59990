"""Each dump as a report shows it: its text, and the items on its lines
(inputs, graph ops, loop and extern nodes, schedule facts, kernels, refused
pairs, wrapper lines), each with its source locations and its kernel.

Lines come from the printer (`ir_text.print_located`), never from scanning
the text: a dump is parsed, printed again, and shown as printed. A dump not
in canonical form (edited by hand) is shown as `tirc fmt` would write it,
with a note, so that every line it shows is one the report can place."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ir_text import Loc, Module, PrintedModule, format_attrs, parse, print_located

from .collect import read_text


@dataclass
class Entity:
    """One item on the lines [start, end] (1-based) of a file shown in the report.

    kind: input, op, node, fact, kernel, refusal, wline (wrapper line),
    code (a kernel's definition in output_code.py), launch (its launch there)."""

    kind: str
    file: int
    start: int
    end: int
    name: str
    what: str
    locs: tuple[Loc, ...] = ()
    kernel: str | None = None  # the IR name of the kernel it belongs to
    other_kernel: str | None = None  # a refusal's second kernel
    item: object = field(default=None, repr=False)


@dataclass
class Dump:
    name: str  # the file's name in its directory
    shown_path: str  # as error messages name it
    text: str
    module: Module
    printed: PrintedModule
    note: str | None


def read_dump(path: Path, shown_path: str) -> Dump:
    text = read_text(path)
    # Positions are not needed (the printer gives the lines), and the
    # unpositioned parse is much faster; a text that fails is parsed again
    # with them, for a FILE:LINE:COL message.
    module = parse(text, shown_path, positions=False)
    printed = print_located(module)
    note = None
    if printed.text != text:
        note = "not in canonical form: shown as `tirc fmt` prints it"
    return Dump(path.name, shown_path, printed.text, module, printed, note)


def _kernel_of(module: Module) -> dict[int, str]:
    """Node value id -> the name of the kernel holding it."""
    return {id(v): k.name.name for k in module.kernels or () for v in k.nodes}


def _node_locs(module: Module) -> dict[int, Loc | None]:
    """Value id -> the location of the node (or graph op) defining it."""
    out = {}
    for item in list(module.graph) + list(module.nodes):
        for v in item.results:
            out[id(v)] = item.loc
    return out


def kernel_locs(module: Module) -> dict[str, tuple[Loc, ...]]:
    """Kernel name -> the distinct locations of its nodes, in node order."""
    locs = _node_locs(module)
    out = {}
    for k in module.kernels or ():
        seen = dict.fromkeys(locs[id(v)] for v in k.nodes if locs.get(id(v)) is not None)
        out[k.name.name] = tuple(seen)
    return out


def dump_entities(dump: Dump, file: int) -> list[Entity]:
    m, lines, names = dump.module, dump.printed.lines, dump.printed.names
    kernel_of = _kernel_of(m)
    locs = _node_locs(m)
    by_kernel = kernel_locs(m)

    def loc_of(*values) -> tuple[Loc, ...]:
        return tuple(dict.fromkeys(locs[id(v)] for v in values if locs.get(id(v)) is not None))

    out = []
    for inp in m.inputs:
        line = lines[id(inp)]
        out.append(Entity("input", file, line, line, names[id(inp.value)], "input", item=inp))
    for op in m.graph:
        line = lines[id(op)]
        label = ", ".join(names[id(v)] for v in op.results)
        out.append(Entity("op", file, line, line, label, op.target, loc_of(*op.results), item=op))
    for node in m.nodes:
        line = lines[id(node)]
        end = line if node.kind == "extern" else line + len(node.body) + 1
        what = node.target if node.kind == "extern" else f"loop.{node.kind} {node.origin}"
        label = ", ".join(names[id(v)] for v in node.results)
        out.append(
            Entity(
                "node",
                file,
                line,
                end,
                label,
                what,
                loc_of(*node.results),
                kernel_of.get(id(node.result)),
                item=node,
            )
        )
    for fact in m.facts or ():
        line = lines[id(fact)]
        out.append(Entity("fact", file, line, line, names[id(fact.node)], "schedule fact", loc_of(fact.node)))
    for k in m.kernels or ():
        line = lines[id(k)]
        what = format_attrs(k.attrs, lambda v: names[id(v)]) if k.attrs else ""
        out.append(
            Entity("kernel", file, line, line, "@" + k.name.name, what, by_kernel[k.name.name], k.name.name)
        )
    for r in m.refusals or ():
        line = lines[id(r)]
        label = f"{names[id(r.first)]}, {names[id(r.second)]}"
        out.append(
            Entity(
                "refusal",
                file,
                line,
                line,
                label,
                r.reason,
                loc_of(r.first, r.second),
                kernel_of.get(id(r.first)),
                kernel_of.get(id(r.second)),
                item=r,
            )
        )
    for w in m.wrapper or ():
        out.append(_wrapper_entity(w, file, lines[id(w)], names, by_kernel, loc_of))
    return out


def _wrapper_entity(w, file: int, line: int, names, by_kernel, loc_of) -> Entity:
    if w.op in ("launch", "extern"):
        ins = ", ".join(names[id(v)] for v in w.operands)
        outs = ", ".join(names[id(v)] for v in w.results)
        return Entity(
            "wline",
            file,
            line,
            line,
            "@" + w.kernel.name,
            f"{w.op} ({ins}) -> ({outs})",
            by_kernel.get(w.kernel.name, ()),
            w.kernel.name,
            item=w,
        )
    values = tuple(w.operands) + tuple(w.results)
    label = " as ".join(names[id(v)] for v in values)
    return Entity("wline", file, line, line, label, w.op, loc_of(*values), item=w)
