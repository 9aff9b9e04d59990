"""No module outside the backend records compares a backend's name: what a
backend can do is in its record (codegen/backends.py), so a new backend is
new files plus one table entry. A comparison is any `==`, `!=`, `in` or
`not in` with a backend name ("cpp", "triton") on either side, or with
something called `backend` (`options.backend != ...`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ir_text", "lowering", "scheduler", "codegen", "repro", "tirc")
NAMES = {"cpp", "triton"}
# The records themselves, and the table that maps names to them.
RECORDS = {"codegen/backends.py", "codegen/cpp_backend.py", "codegen/triton_backend.py"}


def _is_name(node) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_name(e) for e in node.elts)
    return False


def _is_backend(node) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name == "backend"


def _is_modules(node) -> bool:
    """`sys.modules`: "triton" in it is the Python package, not the backend."""
    return isinstance(node, ast.Attribute) and node.attr == "modules"


def comparisons(source: str) -> list[int]:
    """The lines of `source` that compare a backend name."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_modules(s) for s in sides):
                continue
            named = any(_is_name(s) for s in sides)
            if named or (
                any(_is_backend(s) for s in sides) and any(isinstance(s, ast.Constant) for s in sides)
            ):
                lines.append(node.lineno)
    return lines


def test_no_module_outside_the_records_compares_a_backend_name():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            where = str(path.relative_to(ROOT))
            if where not in RECORDS:
                offenders += [f"{where}:{line}" for line in comparisons(path.read_text())]
    assert not offenders, "backend names compared outside the records:\n" + "\n".join(offenders)


def test_the_check_sees_each_form_of_comparison():
    assert comparisons('if options.backend != "cpp":\n    pass\n') == [1]
    assert comparisons('x = backend == "triton"\n') == [1]
    assert comparisons('ok = name in ("cpp", "triton")\n') == [1]
    assert comparisons("if backend == other:\n    pass\n") == []
    assert comparisons('if device != "cpu":\n    pass\n') == []
    assert comparisons('if "triton" in sys.modules:\n    pass\n') == []
