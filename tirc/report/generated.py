"""Where each kernel is in output_code.py: its definition and its launch.

output_code.py is Python, read with `ast` and never run. Its `call`
launches the kernels in the wrapper's order, so the k-th launch statement
there is the wrapper's k-th `launch` line, and the name it launches is the
kernel's Python name (codegen renames kernels whose IR name is not a plain
`k<N>`). A kernel is defined at module level: a Triton `def`, or a name
bound to the C++ library's function, whose C++ source (a string of the
module) defines a function of that name. Names derived from a kernel's
(`k0_1`, a loop nest; `k0_split`, a split reduction's second kernel) are
part of its code. An extern call is the statement of `call` that names its
ATen op (`torch.ops.aten.mm.default`)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from ir_text import TircError


@dataclass
class KernelCode:
    python_name: str | None  # None: an extern call
    definitions: list[tuple[int, int]] = field(default_factory=list)  # line ranges
    launch: tuple[int, int] | None = None


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _definitions(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Module-level names bound by a def or an assignment -> their lines."""
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list])
            out[stmt.name] = (first, stmt.end_lineno)
        elif (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            out[stmt.targets[0].id] = (stmt.lineno, stmt.end_lineno)
    return out


def _launched(stmt, kernels: set[str]) -> str | None:
    """The kernel a statement of `call` launches: one it calls, or passes
    first to a launcher (`_launch(k0, grid, ...)`)."""
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in kernels:
            return node.func.id
        if node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in kernels:
            return node.args[0].id
    return None


def _calls_op(stmt, target: str) -> bool:
    """Whether a statement of `call` runs the ATen op `target`: through
    `torch.ops`, or, for `as_strided`, as the direct view codegen writes
    (`buf = src.as_strided(...)`; a reuse's reinterpretation, which looks the
    same, only ever precedes a loop kernel's launch)."""
    want = f"torch.ops.{target}"
    for node in ast.walk(stmt):
        if isinstance(node, ast.Attribute) and _dotted(node) == want:
            return True
        if target == "aten.as_strided.default" and isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "as_strided":
                return True
    return False


def _cpp_functions(lines: list[str], tree: ast.Module) -> dict[str, tuple[int, int]]:
    """C++ functions defined in the module's string constants (the kernels'
    source): name -> lines, from the line that opens it (and the comment
    lines right above) to its closing brace at the start of a line."""
    out = {}
    # A definition's first line: unindented, not a comment or a directive,
    # ending with the brace that opens its body; the name is before its "(".
    opening = re.compile(r"[^\s/#][^(]*?\b([A-Za-z_]\w*)\(.*\{\s*$")
    for stmt in tree.body:
        value = getattr(stmt, "value", None)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        row = value.lineno
        while row <= value.end_lineno:
            match = opening.match(lines[row - 1])
            if not match:
                row += 1
                continue
            first = row
            while first > value.lineno and lines[first - 2].startswith("//"):
                first -= 1
            end = row
            while end < value.end_lineno and lines[end - 1] != "}":
                end += 1
            out[match.group(1)] = (first, end)
            row = end + 1
    return out


def locate_kernels(
    text: str, filename: str, launches: list[tuple[str, str, str | None]]
) -> dict[str, KernelCode]:
    """IR kernel name -> where its code and launch are, for the wrapper's
    `launches`: (IR kernel name, "launch" or "extern", the extern's ATen op)."""
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as err:
        raise TircError(f"not valid Python: {err.msg}", filename, err.lineno, err.offset) from None
    lines = text.split("\n")
    defined = _definitions(tree)
    call = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "call"), None)
    kernels = {name for name in defined if not name.startswith("_") and name not in ("call", "benchmark")}
    statements = list(call.body) if call is not None else []
    definitions = _by_kernel(defined, _cpp_functions(lines, tree))
    out, cursor = {}, 0
    for name, kind, target in launches:
        found = None
        for k in range(cursor, len(statements)):
            launched = _launched(statements[k], kernels)
            if kind == "launch" and launched is not None:
                found = (k, launched)
                break
            if kind == "extern":
                if launched is not None:
                    break
                if target is not None and _calls_op(statements[k], target):
                    found = (k, None)
                    break
        if found is None:
            continue
        k, python_name = found
        cursor = k + 1
        code = KernelCode(python_name, launch=(statements[k].lineno, statements[k].end_lineno))
        if python_name is not None:
            code.definitions = definitions.get(python_name, [])
        out[name] = code
    return out


def _by_kernel(*tables: dict) -> dict[str, list[tuple[int, int]]]:
    """Kernel name -> the lines of its definitions and of those derived from
    its name (codegen keeps every name apart from any other's derived ones)."""
    out: dict[str, list] = {}
    for table in tables:
        for name, lines in table.items():
            out.setdefault(name, []).append(lines)
            derived = _DERIVED.fullmatch(name)
            if derived:
                out.setdefault(derived.group(1), []).append(lines)
    return {name: sorted(set(lines)) for name, lines in out.items()}


_DERIVED = re.compile(r"(.+)_([0-9]+|split)")
