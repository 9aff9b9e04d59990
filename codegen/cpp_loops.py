"""What the C++ loop shapes share: statements rendered as C++, loops opened
and closed, the OpenMP pragma, and when to run in parallel."""

from __future__ import annotations

from dataclasses import dataclass

from ir_text import render_index

from .cpp_ops import C_TYPES, CPP_INDEX, expr
from .kernel_plan import Compute, Load, Store

# Parallelise only when there is enough work to pay for waking the threads.
PARALLEL_MIN_NUMEL = 32768


@dataclass(frozen=True)
class Keep:
    """Save `var`, computed in this pass, at `place` (an element of a row
    buffer or of an output: the rows shape keeps values a later pass of the
    row would recompute, cpp_keep.py)."""

    var: str
    place: str


@dataclass(frozen=True)
class Reload:
    """`var`, computed in an earlier pass, read back from its `place`."""

    var: str
    dtype: str
    place: str


class Body:
    """Renders statements, tracking each variable's dtype; variables in
    `arrays` hold one value per lane (the lanes shape) and are indexed."""

    def __init__(self, lines: list[str], arrays: frozenset[str] = frozenset()):
        self.lines = lines
        self.arrays = arrays
        self.dtypes: dict[str, str] = {}

    def ref(self, var: str) -> str:
        return f"{var}[lane]" if var in self.arrays else var

    def define(self, var: str, dtype: str, text: str, pad: str) -> None:
        """Values are defined once (the IR is SSA), so `const`: a value of a
        row read inside a parallel chunk loop (cpp_split.py) is shared with
        the OpenMP threads, and g++ reloaded a non-const one at each use; a
        constant exponent of powf then was not seen as one, many times
        slower (measured: docs/design-notes.md, "C++ kernels")."""
        if var in self.arrays:
            self.lines.append(f"{pad}{var}[lane] = {text};")
        else:
            self.lines.append(f"{pad}const {C_TYPES[dtype]} {var} = {text};")
        self.dtypes[var] = dtype

    def statement(self, stmt, pad: str) -> None:
        _STATEMENTS[type(stmt)](self, stmt, pad)


def _load(body: Body, stmt: Load, pad: str) -> None:
    body.define(stmt.var, stmt.dtype, f"p_{stmt.source}[{render_index(stmt.index, CPP_INDEX)}]", pad)


def _compute(body: Body, stmt: Compute, pad: str) -> None:
    body.define(stmt.var, stmt.dtype, expr(stmt, body.dtypes, body.ref), pad)


def _store(body: Body, stmt: Store, pad: str) -> None:
    body.lines.append(f"{pad}p_{stmt.target}[{render_index(stmt.index, CPP_INDEX)}] = {body.ref(stmt.var)};")


def _keep(body: Body, stmt: Keep, pad: str) -> None:
    body.lines.append(f"{pad}{stmt.place} = {stmt.var};")


def _reload(body: Body, stmt: Reload, pad: str) -> None:
    body.define(stmt.var, stmt.dtype, stmt.place, pad)


_STATEMENTS = {Load: _load, Compute: _compute, Store: _store, Keep: _keep, Reload: _reload}


def split(names_sizes):
    """Loops of one iteration become constants; the others stay loops."""
    names_sizes = list(names_sizes)
    consts = [name for name, size in names_sizes if size == 1]
    loops = [(name, size) for name, size in names_sizes if size != 1]
    return consts, loops


def constants(lines, names, pad: str) -> None:
    for name in names:
        lines.append(f"{pad}const int64_t {name} = 0;")


def open_loops(lines, loops, depth: int, pragma: str | None = None) -> int:
    """Nested `for` loops; `pragma` goes before the first."""
    for k, (name, size) in enumerate(loops):
        pad = "  " * depth
        if k == 0 and pragma:
            lines.append(f"{pad}#pragma {pragma}")
        lines.append(f"{pad}for (int64_t {name} = 0; {name} < {size}; ++{name}) {{")
        depth += 1
    return depth


def close_loops(lines, depth: int, count: int) -> int:
    for _ in range(count):
        depth -= 1
        lines.append("  " * depth + "}")
    return depth


def parallel_pragma(loops: int) -> str:
    return "omp parallel for" + (f" collapse({loops})" if loops > 1 else "")


def rindex(sizes) -> str:
    """The flat (row-major) index over the r-variables."""
    text = ""
    for k, size in enumerate(sizes):
        text = f"r{k}" if k == 0 else f"({text}) * {size} + r{k}"
    return text or "0"
