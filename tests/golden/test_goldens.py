"""Every golden case compiles to exactly its expected dumps and generated code;
`pytest --update-goldens` rewrites them (docs/goldens.md)."""

from __future__ import annotations

import pytest
from golden_cases import CASES, case_names, expected_files


@pytest.mark.parametrize(
    "case, file", [(case, file) for case in case_names() for file in expected_files(case)]
)
def test_case_compiles_to_its_golden_file(case, file, case_dumps, golden):
    actual = (case_dumps(case) / file).read_bytes().decode()
    golden.check(CASES / case / file, actual)


def test_every_case_has_a_source():
    """A case directory without a source would be skipped without a word."""
    assert case_names(), "no golden cases found"
    assert sorted(p.name for p in CASES.iterdir() if p.is_dir()) == case_names()


def test_a_dump_case_pins_only_the_later_stages():
    tir_cases = [case for case in case_names() if (CASES / case / "source.tir").exists()]
    assert tir_cases, "no golden case from a dump (a reduced repro)"
    for case in tir_cases:
        assert "01-capture.tir" not in expected_files(case)
        assert expected_files(case)[-1] == "output_code.py"
