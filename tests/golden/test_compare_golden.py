"""Whole-file goldens (repro.golden.compare_golden) and the pytest plugin
around them: a mismatch fails with a unified diff, `--update-goldens`
rewrites the file."""

from __future__ import annotations

import os

import pytest

from repro.golden import compare_golden

EXPECTED = "kernel @k0 = fuse(%buf0)\nkernel @k1 = fuse(%buf1)\nreturn (%buf1)\n"


def test_identical_text_passes(tmp_path):
    (tmp_path / "04-fusion.tir").write_text(EXPECTED)
    assert compare_golden(tmp_path / "04-fusion.tir", EXPECTED, update=False) is None


def test_a_difference_gives_a_unified_diff(tmp_path):
    (tmp_path / "04-fusion.tir").write_text(EXPECTED)
    actual = EXPECTED.replace("@k1 = fuse(%buf1)", "@k1 = fuse(%buf1, %buf2)")
    message = compare_golden(tmp_path / "04-fusion.tir", actual, update=False, name="case/04-fusion.tir")
    assert message.splitlines() == [
        "case/04-fusion.tir differs from the actual output (run pytest --update-goldens to accept it):",
        "--- expected/case/04-fusion.tir",
        "+++ actual/case/04-fusion.tir",
        "@@ -1,3 +1,3 @@",
        " kernel @k0 = fuse(%buf0)",
        "-kernel @k1 = fuse(%buf1)",
        "+kernel @k1 = fuse(%buf1, %buf2)",
        " return (%buf1)",
    ]


def test_a_missing_final_newline_shows_in_the_diff(tmp_path):
    (tmp_path / "a.tir").write_text(EXPECTED)
    message = compare_golden(tmp_path / "a.tir", EXPECTED.rstrip("\n"), update=False)
    assert "+return (%buf1)\n\\ No newline at end of file" in message


def test_a_missing_golden_says_how_to_create_it(tmp_path):
    message = compare_golden(tmp_path / "new" / "a.tir", EXPECTED, update=False, name="new/a.tir")
    assert message == "golden file new/a.tir is missing; run pytest --update-goldens to create it"


def test_update_writes_the_file_and_its_directory(tmp_path):
    path = tmp_path / "case" / "a.tir"
    assert compare_golden(path, EXPECTED, update=True) is None
    assert path.read_text() == EXPECTED
    assert compare_golden(path, "changed\n", update=True) is None
    assert path.read_text() == "changed\n"
    assert os.listdir(path.parent) == ["a.tir"], "a temporary file was left behind"


def test_update_leaves_an_unchanged_file_alone(tmp_path):
    path = tmp_path / "a.tir"
    path.write_text(EXPECTED)
    os.utime(path, (1, 1))
    compare_golden(path, EXPECTED, update=True)
    assert path.stat().st_mtime == 1


# ---- the plugin, in pytest sessions of its own ------------------------------

GOLDEN_TEST = """
from pathlib import Path

def test_output(golden):
    golden.check(Path(__file__).parent / "cases" / "out.tir", "line 1\\nline 2 changed\\nline 3\\n")
"""


@pytest.fixture
def plugin_project(pytester, monkeypatch):
    """An empty pytest project that loads the golden plugin and no installed
    plugins (hypothesis' alone would cost a second a run)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest('pytest_plugins = ["repro.golden_plugin"]')
    return pytester


@pytest.fixture
def session(plugin_project):
    """A pytest project with one test and its stale golden file."""
    pytester = plugin_project
    pytester.makepyfile(test_golden_case=GOLDEN_TEST)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "out.tir").write_text("line 1\nline 2\nline 3\n")
    return pytester


def test_a_stale_golden_fails_with_a_diff(session):
    result = session.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "cases/out.tir differs from the actual output (run pytest --update-goldens to accept it):",
            "--- expected/cases/out.tir",
            "+++ actual/cases/out.tir",
            "@@ -1,3 +1,3 @@",
            " line 1",
            "-line 2",
            "+line 2 changed",
            " line 3",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    assert (session.path / "cases" / "out.tir").read_text() == "line 1\nline 2\nline 3\n"


def test_update_goldens_rewrites_a_stale_golden(session):
    session.runpytest("--update-goldens").assert_outcomes(passed=1)
    assert (session.path / "cases" / "out.tir").read_text() == "line 1\nline 2 changed\nline 3\n"
    session.runpytest().assert_outcomes(passed=1)


def test_update_goldens_creates_a_missing_golden(session):
    (session.path / "cases" / "out.tir").unlink()
    result = session.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*golden file cases/out.tir is missing; run pytest --update-goldens*"])
    session.runpytest("--update-goldens").assert_outcomes(passed=1)
    assert (session.path / "cases" / "out.tir").exists()


def test_a_failing_check_line_fails_the_test_with_its_directive(plugin_project):
    pytester = plugin_project
    pytester.makepyfile("""
        def test_kernels(golden):
            golden.check_lines("kernel @k0\\nkernel @k1\\n", ["CHECK-COUNT-1: kernel", "CHECK-NOT: kernel"])
        """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["check 2: CHECK-NOT: kernel", "  error: found, but must not occur here"])
