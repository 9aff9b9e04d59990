"""Golden cases: each `cases/NAME/` holds a benchmark-convention `source.py` and
the files `tirc compile source.py --dump-after=all` writes for it (cpp backend).
See docs/goldens.md."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

from tirc.cli import main

CASES = Path(__file__).parent / "cases"
EXPECTED_FILES = (
    "01-capture.tir",
    "02-lower.tir",
    "03-schedule.tir",
    "04-fusion.tir",
    "05-memplan.tir",
    "output_code.py",
)


def case_names() -> list[str]:
    return sorted(p.parent.name for p in CASES.glob("*/source.py"))


def compile_case(name: str, work: Path) -> Path:
    """Compile a copy of the case's source (so no __pycache__ lands among the
    goldens; the dumps name the file `source.py` either way), checked against
    eager PyTorch; the dump dir."""
    shutil.copy(CASES / name / "source.py", work / "source.py")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        # --check: a golden is only worth keeping when the code it pins matches eager.
        code = main(
            [
                "compile",
                str(work / "source.py"),
                "--dump-after=all",
                "--dump-dir",
                str(work / "out"),
                "--check",
            ]
        )
    assert code == 0, err.getvalue()
    return work / "out"
