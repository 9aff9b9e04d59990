"""Textual pass tests, as MLIR's lit tests and xDSL's filecheck tests: each
`tests/passes/STAGE/*.tir` is a small hand-written dump of the stage before
STAGE (or of STAGE itself, to test its check of an edited dump), one
`// RUN: tirc ...` line that runs it through STAGE, and either `// CHECK:`
lines over what the command prints (repro.golden.check_lines) or
`// ERROR:` lines over the error it must stop with. Such a test breaks when
its pass changes, not when lowering does. Conventions: docs/goldens.md."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from ir_text import STAGES
from repro.golden import check_lines
from tirc.cli import main as tirc_main

HERE = Path(__file__).parent
FILES = sorted(HERE.rglob("*.tir"))
TESTED_STAGES = ("schedule", "fusion", "memplan")
EXIT_OK, EXIT_ERROR = 0, 2  # tirc's exit statuses (tirc/cli.py)

_DIRECTIVE = re.compile(r"^\s*//\s*(?P<name>RUN|ERROR)\s*:(?P<body>.*)$")
_CHECK = re.compile(r"^\s*//\s*CHECK[-A-Z0-9]*\s*:")
# FileCheck's `[[@LINE]]` and `[[@LINE+N]]`: the directive's own line number, offset.
_AT_LINE = re.compile(r"\[\[@LINE(?P<offset>[+-]\d+)?\]\]")


@dataclass(frozen=True)
class PassTest:
    argv: list[str]  # the RUN line's words after `tirc`; `%s` stands for the file
    errors: list[str]  # the ERROR patterns, `[[@LINE]]` replaced


def read_test(text: str, stage: str, name: str) -> PassTest:
    """The directives of the test file `name` in directory `stage`. A
    malformed file fails its test, so that no file is silently skipped: one
    RUN line, running `tirc` on `%s` through `stage`, and CHECK lines or
    ERROR lines."""
    runs, errors, checks = [], [], False
    for number, line in enumerate(text.splitlines(), 1):
        checks = checks or bool(_CHECK.match(line))
        m = _DIRECTIVE.match(line)
        if m is not None and m["name"] == "RUN":
            runs.append(m["body"].strip())
        elif m is not None:
            errors.append(_at_line(m["body"].strip(), number))
    if len(runs) != 1:
        pytest.fail(f"{name}: expected one `// RUN: tirc ...` line, found {len(runs)}", pytrace=False)
    words = shlex.split(runs[0])
    if words[:1] != ["tirc"] or "%s" not in words:
        pytest.fail(f"{name}: the RUN line must run `tirc ... %s ...`, not {runs[0]!r}", pytrace=False)
    if _stop_after(words) != stage:
        pytest.fail(f"{name}: a test in {stage}/ runs `--stop-after {stage}`", pytrace=False)
    if checks == bool(errors):
        pytest.fail(f"{name}: expected CHECK lines or ERROR lines (exactly one of the two)", pytrace=False)
    return PassTest(words[1:], errors)


def _at_line(pattern: str, number: int) -> str:
    """`pattern` with `[[@LINE+N]]` replaced by the line number `number` + N."""
    return _AT_LINE.sub(lambda at: str(number + int(at["offset"] or 0)), pattern)


def _stage_of(path: Path) -> str:
    parts = path.relative_to(HERE).parts
    if len(parts) != 2 or parts[0] not in TESTED_STAGES:
        pytest.fail(
            f"{path}: a pass test lives in tests/passes/STAGE/, STAGE one of {TESTED_STAGES}", pytrace=False
        )
    return parts[0]


def _stop_after(words: list[str]) -> str | None:
    at = words.index("--stop-after") if "--stop-after" in words else len(words)
    return words[at + 1] if at + 1 < len(words) else None


def run_tirc(argv: list[str]) -> tuple[int, str, str]:
    """tirc's CLI in this process (torch is imported once for all files):
    exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = tirc_main(argv)
        except SystemExit as exit:  # argparse's own errors
            code = exit.code
    return code, out.getvalue(), err.getvalue()


# Kernels these tests plan build into a private cache (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(HERE).as_posix() for p in FILES])
def test_pass(path: Path, tmp_path: Path):
    text = path.read_text()
    test = read_test(text, _stage_of(path), path.relative_to(HERE).as_posix())
    # Run a copy: a pass that crashes writes its reproducer beside its input (tirc/crash.py).
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    code, out, err = run_tirc([str(copy) if word == "%s" else word for word in test.argv])
    if test.errors:
        assert code == EXIT_ERROR, f"expected exit status {EXIT_ERROR}, got {code}; stderr:\n{err}"
        problem = check_lines(err, [f"CHECK: {pattern}" for pattern in test.errors])
        if problem:
            pytest.fail(f"ERROR lines against stderr:\n{problem}", pytrace=False)
        return
    assert code == EXIT_OK, f"exit status {code}; stderr:\n{err}"
    problem = check_lines(out, text)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_every_tested_stage_has_pass_tests():
    """A glob that finds nothing (files moved or renamed) must not pass quietly."""
    assert set(TESTED_STAGES) <= set(STAGES)
    assert {p.relative_to(HERE).parts[0] for p in FILES} >= set(TESTED_STAGES)


RUN = "// RUN: tirc compile %s --stop-after fusion -o -"


@pytest.mark.parametrize(
    "text, problem",
    [
        ("// CHECK: fusion {", "expected one `// RUN: tirc ...` line, found 0"),
        (f"{RUN}\n{RUN}\n// CHECK: fusion {{", "found 2"),
        (RUN, "expected CHECK lines or ERROR lines"),
        (f"{RUN}\n// CHECK: fusion {{\n// ERROR: [cycle]", "expected CHECK lines or ERROR lines"),
        ("// RUN: tirc compile %s --stop-after schedule -o -\n// CHECK: x", "runs `--stop-after fusion`"),
        ("// RUN: python %s\n// CHECK: x", "must run `tirc ... %s ...`"),
    ],
    ids=["no-run", "two-runs", "no-checks", "checks-and-errors", "other-stage", "not-tirc"],
)
def test_a_malformed_test_file_fails(text, problem):
    with pytest.raises(pytest.fail.Exception, match=re.escape(problem)):
        read_test(text, "fusion", "fusion/bad.tir")


def test_error_patterns_name_lines_relative_to_themselves():
    test = read_test(
        f"{RUN}\n\n// ERROR: :[[@LINE+1]]:3: error: [x]\n// ERROR: [[@LINE]] [[@LINE-3]]", "fusion", "t"
    )
    assert test.errors == [":4:3: error: [x]", "4 1"]
    assert test.argv == ["compile", "%s", "--stop-after", "fusion", "-o", "-"]
