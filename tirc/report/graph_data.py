"""One graph's data for the page: its files, the items on their lines, the
kernels, the refused pairs, the memory timeline and the manifest, as plain
JSON-ready lists (ids are list positions, so the page indexes cheaply).

An item is `[kind, file, start, end, name, what, locs, kernel, other]`:
`locs` index the graph's `locs` (`[file, line]` pairs, sorted), `kernel` and
`other` index `kernels` (-1: none)."""

from __future__ import annotations

from ir_text import TircError, format_attrs, parse
from lowering import fallback_ops
from scheduler import extern_kernels

from .collect import GraphFiles, read_text
from .generated import locate_kernels
from .memory import memory_timeline, storage_bytes
from .stages import Dump, Entity, dump_entities, kernel_locs, read_dump


def _is_step(dump: Dump) -> bool:
    return dump.name.count(".") > 1  # NN-STAGE.STEP.tir


def _last_of(dumps: list[Dump], stage: str) -> Dump | None:
    found = [d for d in dumps if d.module.stage == stage]
    plain = [d for d in found if not _is_step(d)]
    return (plain or found or [None])[-1]


def _located(dump: Dump, run):
    """`run(module)`, with a TircError placed in the dump: the module was
    parsed without positions, so an error is found again on a positioned parse."""
    try:
        return run(dump.module)
    except TircError as err:
        if err.line is None:
            try:
                run(parse(dump.text, dump.shown_path))
            except TircError as placed:
                err = placed
        raise err.located(dump.shown_path) from None


def _type_text(value) -> str:
    t = value.type
    return f"{t.dtype}[{', '.join(map(str, t.shape))}] strides [{', '.join(map(str, t.strides))}]"


class _Builder:
    def __init__(self, files: GraphFiles):
        self.files = files
        self.dumps = [read_dump(path, str(path)) for path in files.dumps]
        self.entities: list[Entity] = []
        for k, dump in enumerate(self.dumps):
            self.entities += dump_entities(dump, k)
        self.main = _last_of(self.dumps, "memplan") or _last_of(self.dumps, "fusion")
        self.plan = _last_of(self.dumps, "fusion") or self.main
        self.kernels = list(self.main.module.kernels) if self.main else []
        self.kernel_index = {k.name.name: n for n, k in enumerate(self.kernels)}
        self.code_text = read_text(files.output_code) if files.output_code else None
        self.memory = self._memory()
        self.python_names: dict[str, str | None] = {}  # IR kernel name -> its name in output_code.py
        if self.code_text is not None:
            self._code_entities()

    def _code_entities(self) -> None:
        if self.main is None or self.main.module.wrapper is None:
            return
        m = self.main.module
        first_node = {id(n.result): n for n in m.nodes}
        by_name = {k.name.name: k for k in m.kernels}
        launches = []
        for line in m.wrapper:
            if line.op in ("launch", "extern"):
                node = first_node.get(id(by_name[line.kernel.name].nodes[0]))
                target = node.target if node is not None and node.kind == "extern" else None
                launches.append((line.kernel.name, line.op, target))
        found = locate_kernels(self.code_text, str(self.files.output_code), launches)
        locs = kernel_locs(m)
        file = len(self.dumps)
        for name, code in found.items():
            for start, end in code.definitions:
                label = "@" + name
                self.entities.append(
                    Entity("code", file, start, end, label, code.python_name, locs[name], name)
                )
            if code.launch is not None:
                start, end = code.launch
                self.entities.append(
                    Entity("launch", file, start, end, "@" + name, "launch", locs[name], name)
                )
        self.python_names = {name: code.python_name for name, code in found.items()}

    def _memory(self):
        if self.main is None or self.main.module.wrapper is None:
            return None
        return _located(self.main, memory_timeline)

    def data(self) -> dict:
        locs = sorted({loc for e in self.entities for loc in e.locs}, key=lambda loc: (loc.file, loc.line))
        loc_index = {loc: n for n, loc in enumerate(locs)}
        kernel = lambda name: self.kernel_index.get(name, -1) if name is not None else -1  # noqa: E731
        items = [
            [e.kind, e.file, e.start, e.end, e.name, e.what, [loc_index[x] for x in e.locs], kernel(e.kernel)]
            + ([kernel(e.other_kernel)] if e.kind == "refusal" else [])
            for e in self.entities
        ]
        files = [{"name": d.name, "stage": d.module.stage, "note": d.note, "kind": "tir"} for d in self.dumps]
        if self.code_text is not None:
            files.append({"name": "output_code.py", "stage": "codegen", "note": None, "kind": "code"})
        return {
            "name": self.files.name,
            "files": files,
            "locs": [[loc.file, loc.line] for loc in locs],
            "items": items,
            "kernels": self._kernels(loc_index),
            "refusals": [n for n, e in enumerate(self.entities) if e.kind == "refusal" and self._in_plan(e)],
            "memory": self._memory_data(),
            "fallbacks": self._fallbacks(),
            "layout": self._layout(),
            "manifest": self.files.manifest,
        }

    def _layout(self) -> list[str] | None:
        """The lower pass's layout decision: [name, reason], or None."""
        layout = self.main.module.layout if self.main is not None else None
        if layout is None:
            return None
        name, attrs = layout
        return [name, str(dict(attrs).get("reason", ""))]

    def _in_plan(self, e: Entity) -> bool:
        return self.plan is not None and self.dumps[e.file] is self.plan

    def _kernels(self, loc_index) -> list[dict]:
        if self.main is None:
            return []
        m = self.main.module
        names = self.main.printed.names
        externs = extern_kernels(m)
        locs = kernel_locs(m)
        by_id = {id(v): n for n in m.nodes for v in n.results}
        python = self.python_names
        out = []
        for k in self.kernels:
            name = k.name.name
            first = by_id.get(id(k.nodes[0])) if k.nodes else None
            origins = dict.fromkeys(
                n.target if n.kind == "extern" else n.origin for n in map(by_id.get, map(id, k.nodes)) if n
            )
            out.append(
                {
                    "name": name,
                    "python": python.get(name),
                    "extern": name in externs,
                    "target": first.target if first is not None and first.kind == "extern" else None,
                    "attrs": format_attrs(k.attrs, lambda v: names[id(v)]) if k.attrs else "",
                    "choices": (
                        format_attrs([a for a in k.attrs if a[0] != "group"], lambda v: names[id(v)])
                        if any(a[0] != "group" for a in k.attrs)
                        else ""
                    ),
                    "nodes": [names[id(v)] for v in k.nodes],
                    "ops": list(origins),
                    "locs": [loc_index[x] for x in locs[name]],
                }
            )
        return out

    def _memory_data(self):
        if self.memory is None:
            return None
        held, lives = self.memory
        names = self.main.printed.names
        file = self.dumps.index(self.main)
        line_items = {e.start: n for n, e in enumerate(self.entities) if e.file == file and e.kind == "wline"}
        wrapper_lines = [line_items.get(self.main.printed.lines[id(w)], -1) for w in self.main.module.wrapper]
        peak = max(held)
        return {
            "held": held,
            "peak": peak,
            "peakAt": held.index(peak),
            "lines": wrapper_lines,
            "buffers": [
                [
                    names[id(life.value)],
                    storage_bytes(life.value),
                    life.start,
                    life.end,
                    life.how,
                    names[id(life.reused)] if life.reused is not None else "",
                    _type_text(life.value),
                ]
                for life in lives
            ],
        }

    def _fallbacks(self) -> dict:
        source = self.main or next((d for d in reversed(self.dumps) if d.module.nodes), None)
        if source is None:
            return {"ops": [], "items": []}
        ops = list(fallback_ops(source.module))
        file = self.dumps.index(source)
        items = [
            n
            for n, e in enumerate(self.entities)
            if e.file == file
            and e.kind == "node"
            and getattr(e.item, "kind", "") == "extern"
            and e.item.target in ops
        ]
        return {"ops": ops, "items": items}


def graph_data(files: GraphFiles) -> tuple[dict, list[str]]:
    """(the graph's data, the texts of its files in the order of data["files"])."""
    builder = _Builder(files)
    texts = [d.text for d in builder.dumps]
    if builder.code_text is not None:
        texts.append(builder.code_text)
    return builder.data(), texts
