"""Golden cases: each `cases/NAME/` holds a source and the files `tirc compile
SOURCE --dump-after=all` writes for it (cpp backend, the source's options).
The source is `source.py` (a benchmark-convention program: every stage's
dump is a golden) or `source.tir` (a dump, such as a reduced repro: the
stages after its own are goldens). See docs/goldens.md."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

from ir_text import STAGES, parse
from tirc.cli import main

CASES = Path(__file__).parent / "cases"
EXPECTED_FILES = tuple(f"{k + 1:02d}-{stage}.tir" for k, stage in enumerate(STAGES)) + ("output_code.py",)


def case_source(name: str) -> Path:
    return next(p for p in (CASES / name / "source.py", CASES / name / "source.tir") if p.exists())


def case_names() -> list[str]:
    return sorted({p.parent.name for suffix in ("py", "tir") for p in CASES.glob(f"*/source.{suffix}")})


def expected_files(name: str) -> tuple[str, ...]:
    """The files a case pins: every stage for a program, the later ones for a dump."""
    source = case_source(name)
    if source.suffix == ".py":
        return EXPECTED_FILES
    first = parse(source.read_text(), str(source)).stage_index + 1
    return EXPECTED_FILES[first:]


def compile_case(name: str, work: Path) -> Path:
    """Compile a copy of the case's source (so no __pycache__ lands among the
    goldens; the dumps name the file `source.py` either way), checked against
    eager PyTorch or the reference interpreter; the dump dir."""
    source = case_source(name)
    shutil.copy(source, work / source.name)
    if (source.parent / "inputs").is_dir():  # the tensors a dump's --save-inputs names
        shutil.copytree(source.parent / "inputs", work / "inputs")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        # --check: a golden is only worth keeping when the code it pins is right.
        code = main(
            [
                "compile",
                str(work / source.name),
                "--dump-after=all",
                "--dump-dir",
                str(work / "out"),
                "--check",
            ]
        )
    assert code == 0, err.getvalue()
    return work / "out"
