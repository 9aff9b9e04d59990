"""Stages import each other only through their facades (STYLE.md): no module of
one package imports a private module of another."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ir_text", "lowering", "scheduler", "codegen", "repro", "tirc")


def _imported_modules(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno


def test_packages_import_each_other_through_facades():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            for module, line in _imported_modules(path):
                top, _, rest = module.partition(".")
                if top in PACKAGES and top != package and rest:
                    offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, "\n".join(offenders)


def test_the_check_sees_a_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from scheduler.fusion import fuse\n")
    assert list(_imported_modules(bad)) == [("scheduler.fusion", 1)]
