"""Every golden case compiles to exactly its expected dumps and generated code;
`pytest --update-goldens` rewrites them (docs/goldens.md)."""

from __future__ import annotations

import pytest
from golden_cases import CASES, EXPECTED_FILES, case_names


@pytest.mark.parametrize("file", EXPECTED_FILES)
@pytest.mark.parametrize("case", case_names())
def test_case_compiles_to_its_golden_file(case, file, case_dumps, golden):
    actual = (case_dumps(case) / file).read_bytes().decode()
    golden.check(CASES / case / file, actual)


def test_every_case_has_a_source():
    """A case directory without source.py would be skipped without a word."""
    assert case_names(), "no golden cases found"
    assert sorted(p.name for p in CASES.iterdir() if p.is_dir()) == case_names()
