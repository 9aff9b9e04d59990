"""The golden tests compile each case once per session (golden_cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_cases import compile_case


@pytest.fixture(scope="session")
def case_dumps(tmp_path_factory):
    """`case_dumps(NAME)`: the dump directory of case NAME, compiled once per session."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            made[name] = compile_case(name, tmp_path_factory.mktemp(name))
        return made[name]

    return get
