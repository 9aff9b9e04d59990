"""The IR data model shared by every stage.

Values are identity-hashed and carry only a name hint; the printer assigns
the names. Everything else is plain data. `pos` fields hold the (line, col)
a parsed object came from, for error messages; they never reach the text.

A module grows section by section as it goes down the pipeline:
capture: `graph` ops; lower: `nodes` (loop and extern nodes); schedule: + `facts`;
fusion: + `kernels`/`refusals`; memplan: + `wrapper`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .index import storage_span

STAGES = ("capture", "lower", "schedule", "fusion", "memplan")


class Value:
    """An SSA value. Equality is identity; `hint` only suggests a name."""

    __slots__ = ("hint", "type", "pos")

    def __init__(self, hint: str = "", type: Any = None, pos=None):
        self.hint = hint
        self.type = type
        self.pos = pos

    def __repr__(self) -> str:
        return f"Value({self.hint!r}, {self.type!r})"


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(frozen=True)
class BufferType:
    """A tensor with a memory layout: what loop nodes produce."""

    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def tensor(self) -> TensorType:
        return TensorType(self.dtype, self.shape)

    @property
    def numel(self) -> int:
        return self.tensor.numel

    @property
    def storage_size(self) -> int:
        return storage_span(self.shape, self.strides)


@dataclass(frozen=True)
class Loc:
    file: str
    line: int


@dataclass(frozen=True)
class Enum:
    """A bare name literal: a dtype (`f32`), `strided`, `contiguous_format`, ..."""

    name: str


@dataclass(frozen=True)
class Device:
    name: str


@dataclass(frozen=True)
class Symbol:
    """An `@name` reference (a kernel, or `@return` for the graph output)."""

    name: str


# Literal = int | float | bool | str | None | Enum | Device | tuple[Literal|Value, ...]


@dataclass(eq=False)
class Input:
    """A graph input; its value's type is a BufferType (shape, strides, dtype)."""

    value: Value
    device: str
    seed: int
    # The sha256 of the saved tensor (`--save-inputs`), which replay loads
    # from `inputs/<sha256>.pt` beside the dump instead of seeding values.
    sha256: str | None = None
    # The values the program needs (`range = [lo, hi]`, from capture's
    # lowering/value_ranges.py): seeded integers are drawn in [lo, hi),
    # floats in [lo, hi]; None keeps the default draw.
    range: tuple | None = None
    pos: Any = field(default=None, compare=False)


@dataclass(eq=False)
class GraphOp:
    """A capture-stage op: `%r = aten.add.Tensor(%a, %b) {alpha = 2} : f32[8]`."""

    results: tuple[Value, ...]
    target: str
    args: tuple
    kwargs: tuple[tuple[str, Any], ...]
    loc: Loc | None = None
    pos: Any = field(default=None, compare=False)


@dataclass(eq=False)
class BodyOp:
    """One op of a loop body. `load` has attr `index`; `store` has no result."""

    result: Value | None
    op: str
    operands: tuple[Value, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    pos: Any = field(default=None, compare=False)

    def attr(self, key: str, default=None):
        return dict(self.attrs).get(key, default)


@dataclass(eq=False)
class LoopNode:
    """A buffer computed by a loop nest: `%buf0 = loop.pointwise [i0 < 8] ...`."""

    result: Value
    kind: str
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...]
    attrs: tuple[tuple[str, Any], ...]
    body: list[BodyOp]
    loc: Loc | None = None
    pos: Any = field(default=None, compare=False)

    @property
    def type(self) -> BufferType:
        return self.result.type

    @property
    def results(self) -> tuple[Value, ...]:
        return (self.result,)

    @property
    def origin(self) -> str:
        """The ATen op the node was lowered from."""
        return dict(self.attrs).get("origin", "an op")

    @property
    def site(self) -> str:
        """The op and its source line, as runtime errors name them:
        "aten.embedding.default at model.py:16"."""
        return f"{self.origin} at {self.loc.file}:{self.loc.line}" if self.loc else self.origin


@dataclass(eq=False)
class ExternNode:
    """Buffers computed by calling an ATen op: `%buf3 = extern aten.mm.default(%x, %w) : ...`.

    Used for matmul and convolution by design, and for every op without a
    lowering (the fallback); args hold buffer Values and literals, as a graph
    op's do. `results` have layouts (BufferTypes).
    """

    results: tuple[Value, ...]
    target: str
    args: tuple
    kwargs: tuple[tuple[str, Any], ...]
    loc: Loc | None = None
    pos: Any = field(default=None, compare=False)
    kind = "extern"

    @property
    def result(self) -> Value:
        return self.results[0]


@dataclass(frozen=True)
class Dep:
    """A read or write of `buffer` at `index` (None: the whole buffer)."""

    buffer: Value
    index: Any


@dataclass(eq=False)
class NodeFacts:
    """Derived scheduling facts of one node, printed in the schedule dump."""

    node: Value
    group: tuple[int, int]
    reads: tuple[Dep, ...]
    users: tuple[Any, ...]  # Values, or Symbol("return")
    pos: Any = field(default=None, compare=False)
    # What the node stores: its buffer at the write index (a star dep for an
    # extern call's results, which ATen writes whole).
    writes: tuple[Dep, ...] = ()


@dataclass(eq=False)
class Kernel:
    """`kernel @k0 = fuse(%a, %b; %c) {...}`: nodes in program order, in loop
    nests run one after the other (`nests` holds their sizes; None: one nest)."""

    name: Symbol
    nodes: tuple[Value, ...]
    attrs: tuple[tuple[str, Any], ...]
    pos: Any = field(default=None, compare=False)
    nests: tuple[int, ...] | None = None

    def loop_nests(self) -> tuple[tuple[Value, ...], ...]:
        out, start = [], 0
        for size in self.nests or (len(self.nodes),):
            out.append(tuple(self.nodes[start : start + size]))
            start += size
        return tuple(out)


@dataclass(eq=False)
class Refusal:
    first: Value
    second: Value
    reason: str
    pos: Any = field(default=None, compare=False)


@dataclass(eq=False)
class WrapperLine:
    """`alloc %b`, `free %b`, `launch @k(%ins) -> (%outs)`, `extern @k(%ins) -> (%outs)`,
    and `reuse %old as %new` (operands `(old,)`, results `(new,)`)."""

    op: str
    kernel: Symbol | None
    operands: tuple[Value, ...]
    results: tuple[Value, ...] = ()
    pos: Any = field(default=None, compare=False)


@dataclass(eq=False)
class Module:
    stage: str
    source: str
    version: str
    options: tuple[tuple[str, Any], ...]
    inputs: list[Input]
    graph: list[GraphOp] = field(default_factory=list)
    nodes: list = field(default_factory=list)
    outputs: tuple[Value, ...] = ()
    # Inputs the program mutates, with their new values: `update %x = %buf5`.
    updates: tuple[tuple[Value, Value], ...] = ()
    # The lower pass's layout decision, `layout channels_last {reason = "..."}`:
    # (name, attrs), None before lower. A record: the strides are the truth.
    layout: tuple[str, tuple[tuple[str, Any], ...]] | None = None
    facts: list[NodeFacts] | None = None
    kernels: list[Kernel] | None = None
    refusals: list[Refusal] | None = None
    wrapper: list[WrapperLine] | None = None
    outputs_pos: Any = field(default=None, compare=False)
    options_pos: Any = field(default=None, compare=False)
    # Where the header names the stage, and where each section ('schedule',
    # 'fusion', 'wrapper') begins: stage-section errors point there.
    stage_pos: Any = field(default=None, compare=False)
    sections_pos: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def stage_index(self) -> int:
        return STAGES.index(self.stage)
