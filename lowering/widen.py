"""A module with one dtype widened to another, built from the data.

`tirc replay` takes a second look at a float32 difference by running the
dump's program in float64: the same module with every f32 made f64. Only
dtypes change: value types (inputs, graph-op results, loop and extern
buffers, loop-body values) and dtype literals (`{dtype = f32}` of a graph op
or a `to_dtype`). Names, strings, source locations and every other field are
the module's own, so a value named `%f32` or a source file `f32.py` stays
what it is, and an error in the copy points at the module's own positions.
"""

from __future__ import annotations

from dataclasses import replace

from ir_text import BufferType, Dep, Enum, Module, TensorType, Value, verify


class _Widen:
    """The copy under way: a new Value for every value of the module, typed
    anew, and the fields that refer to values pointed at the new ones."""

    def __init__(self, narrow: str, wide: str):
        self.narrow = narrow
        self.wide = wide
        self.values: dict[int, Value] = {}

    def type(self, t):
        if isinstance(t, (TensorType, BufferType)) and t.dtype == self.narrow:
            return replace(t, dtype=self.wide)
        if isinstance(t, str) and t == self.narrow:  # a loop-body value's type is a dtype
            return self.wide
        return t

    def define(self, value: Value) -> Value:
        new = Value(value.hint, self.type(value.type), value.pos)
        self.values[id(value)] = new
        return new

    def value(self, value: Value) -> Value:
        return self.values[id(value)]

    def literal(self, x):
        if isinstance(x, Value):
            return self.value(x)
        if isinstance(x, Enum) and x.name == self.narrow:
            return Enum(self.wide)
        if isinstance(x, tuple):
            return tuple(self.literal(item) for item in x)
        return x

    def attrs(self, attrs):
        return tuple((key, self.literal(v)) for key, v in attrs)

    def graph_op(self, op):
        results = tuple(self.define(v) for v in op.results)
        return replace(op, results=results, args=self.literal(op.args), kwargs=self.attrs(op.kwargs))

    def node(self, node):
        if node.kind == "extern":
            results = tuple(self.define(v) for v in node.results)
            return replace(
                node, results=results, args=self.literal(node.args), kwargs=self.attrs(node.kwargs)
            )
        result = self.define(node.result)
        return replace(
            node, result=result, attrs=self.attrs(node.attrs), body=[self.body_op(op) for op in node.body]
        )

    def body_op(self, op):
        operands = self.values_of(op.operands)
        result = None if op.result is None else self.define(op.result)
        return replace(op, result=result, operands=operands, attrs=self.attrs(op.attrs))

    def dep(self, dep: Dep) -> Dep:
        return Dep(self.value(dep.buffer), dep.index)

    def fact(self, fact):
        return replace(
            fact,
            node=self.value(fact.node),
            reads=tuple(self.dep(d) for d in fact.reads),
            writes=tuple(self.dep(d) for d in fact.writes),
            users=self.literal(fact.users),
        )

    def kernel(self, kernel):
        return replace(kernel, nodes=self.values_of(kernel.nodes), attrs=self.attrs(kernel.attrs))

    def refusal(self, refusal):
        return replace(refusal, first=self.value(refusal.first), second=self.value(refusal.second))

    def wrapper_line(self, line):
        return replace(line, operands=self.values_of(line.operands), results=self.values_of(line.results))

    def values_of(self, values) -> tuple[Value, ...]:
        return tuple(self.value(v) for v in values)

    def module(self, m: Module) -> Module:
        def each(section, copy):  # a later stage's section, None before that stage
            return None if section is None else [copy(item) for item in section]

        inputs = [replace(i, value=self.define(i.value)) for i in m.inputs]
        graph = [self.graph_op(op) for op in m.graph]
        nodes = [self.node(node) for node in m.nodes]
        return replace(
            m,
            inputs=inputs,
            graph=graph,
            nodes=nodes,
            outputs=self.values_of(m.outputs),
            updates=tuple((self.value(t), self.value(v)) for t, v in m.updates),
            facts=each(m.facts, self.fact),
            kernels=each(m.kernels, self.kernel),
            refusals=each(m.refusals, self.refusal),
            wrapper=each(m.wrapper, self.wrapper_line),
            sections_pos=dict(m.sections_pos),
        )


def widened(module: Module, narrow: str = "f32", wide: str = "f64") -> Module:
    """A copy of `module` with every `narrow` dtype made `wide` (see the
    module docstring for what that covers), verified; `module` is left as it
    is. Raises TircError where the widened program breaks a rule of its
    stage."""
    return verify(_Widen(narrow, wide).module(module))
