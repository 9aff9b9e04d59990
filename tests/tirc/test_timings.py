"""Compile timings (tirc/timings.py): every stage and named step of a
compile is timed, on both backends, and the stages sum to at most the wall
time; `--timings` prints the table on stderr only; the manifest records
them; a code-cache hit lists only what ran; progress lines appear on a
terminal only; and the determinism checks hold with times in the manifest."""

from __future__ import annotations

import io
import json
import re
import sys
import time

import pytest
import torch

import tirc
import tirc.timings
from codegen import backend_named
from tirc.cli import main
from tirc.dumps import comparable_files, manifest_without_timings
from tirc.steps import STEPS
from tirc.timings import Timings

STAGE_FILES = ("01-capture.tir", "02-lower.tir", "03-schedule.tir", "04-fusion.tir", "05-memplan.tir")
PIPELINE = ("capture", "lower", "schedule", "fusion", "memplan")
PROGRESS_LINE = re.compile(r"^tirc: [a-z-]+ \d+\.\d s$")


def program(x, b):
    return torch.softmax(x + b, -1) * 2.0


def inputs():
    return [torch.randn(8, 37), torch.randn(37)]


def pipeline_names(backend: str, upto: str = "memplan", dumps: bool = False) -> list[str]:
    """The names a compile from a program through `upto` records, in order
    (without the code cache)."""
    names = []
    for stage in PIPELINE[: PIPELINE.index(upto) + 1]:
        steps = ["capture.trace"] if stage == "capture" else [name for name, _ in STEPS[stage]]
        if stage == "fusion" and backend_named(backend).prebuild is not None:
            steps.append("fusion.prebuild")
        # Only the memplan stage is read back (pipeline.reads_back).
        read_back = [f"{stage}.parse", f"{stage}.verify"] if stage == "memplan" else []
        names += [stage, *steps, f"{stage}.print", *read_back]
        names += [f"{stage}.dump"] if dumps else []
    return names


@pytest.fixture
def no_code_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")


def table_rows(err: str) -> list[str]:
    """The rows of the `--timings` table in stderr: after its two heading lines."""
    lines = err.splitlines()
    start = lines.index("tirc: timings")
    return lines[start + 2 :]


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_every_stage_and_step_is_timed_within_the_wall_time(backend, no_code_cache):
    start = time.perf_counter()
    compiled = tirc.compile(program, inputs(), backend=backend)
    wall = time.perf_counter() - start
    timings = compiled.timings
    assert list(timings) == pipeline_names(backend) + ["codegen", "build"]
    assert all(seconds >= 0.0 for seconds in timings.values()), timings
    stages = {name: seconds for name, seconds in timings.items() if "." not in name}
    assert sum(stages.values()) <= wall + 1e-3, (stages, wall)
    for stage, seconds in stages.items():
        steps = sum(s for name, s in timings.items() if name.startswith(stage + "."))
        assert steps <= seconds + 1e-6, (stage, steps, seconds)


def test_timings_flag_prints_the_table_on_stderr_only(model_file, capsys, no_code_cache):
    capsys.readouterr()
    assert main(["compile", str(model_file), "--timings"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("tirc: compiled model.py through memplan"), lines[0]
    assert lines[1] == "tirc: timings"
    rows = table_rows(err)
    names = [row.split()[0] for row in rows]
    assert names == ["source", *pipeline_names("cpp"), "codegen", "build", "total"]
    assert len({len(line) for line in lines[2:]}) == 1, "rows not aligned"
    assert rows[-1].endswith(" 100.0%")
    shares = [float(row.split()[-1].rstrip("%")) for row in rows if not row.startswith("    ")][:-1]
    assert abs(sum(shares) - 100.0) <= 0.1 * len(shares), shares


def test_a_compile_stopped_early_times_only_what_ran(model_file, capsys, no_code_cache):
    capsys.readouterr()
    assert main(["compile", str(model_file), "--stop-after", "fusion", "-o", "-", "--timings"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("tirc ") and "tirc: timings" not in out  # stdout: the IR text only
    names = [row.split()[0] for row in table_rows(err)]
    prebuild = "fusion.prebuild"  # the build starts only when codegen follows
    assert names == ["source", *(n for n in pipeline_names("cpp", "fusion") if n != prebuild), "total"]


def test_replay_prints_the_table_after_its_verdict(dumps, stage_files, capsys):
    capsys.readouterr()
    assert main(["replay", str(dumps("cpp") / stage_files[3]), "--timings"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "ok: outputs match the reference interpreter"
    names = [row.split()[0] for row in table_rows(err)]
    assert names == ["source", *pipeline_names("cpp")[-6:], "codegen", "build", "total"]


def test_the_manifest_records_the_timings(tmp_path, no_code_cache):
    compiled = tirc.compile(program, inputs(), dump_after="all", dump_dir=tmp_path / "d")
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["timings"] == [
        {"name": name, "seconds": round(seconds, 6)} for name, seconds in compiled.timings.items()
    ]
    names = [entry["name"] for entry in manifest["timings"]]
    assert names == [*pipeline_names("cpp", dumps=True), "codegen", "codegen.dump", "build"]


def test_a_code_cache_hit_lists_only_what_ran(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TIRC_NO_CODE_CACHE", raising=False)
    first = tirc.compile(program, inputs())
    assert {"cache.lookup", "cache.store", "lower", "codegen"} <= set(first.timings)
    second = tirc.compile(program, inputs())
    capture = ["capture", "capture.trace", "capture.print"]
    assert list(second.timings) == [*capture, "cache", "cache.lookup", "build"]
    assert second.compiled.module.stage == "memplan"  # the entry's memplan text, parsed now
    assert list(second.timings) == [*capture, "cache", "cache.lookup", "cache.parse", "build"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream", [_Terminal, io.StringIO], ids=["terminal", "pipe"])
def test_progress_lines_only_on_a_terminal(stream, monkeypatch, no_code_cache):
    monkeypatch.setattr(tirc.timings, "PROGRESS_AFTER_S", 0.0)  # every compile counts as long
    err = stream()
    monkeypatch.setattr(sys, "stderr", err)
    tirc.compile(program, inputs())
    lines = err.getvalue().splitlines()
    if stream is io.StringIO:
        assert lines == []
        return
    assert all(PROGRESS_LINE.match(line) for line in lines), lines
    assert [line.split()[1] for line in lines] == [*PIPELINE, "codegen", "build"]


def test_no_progress_lines_from_the_cli_off_a_terminal(model_file, capsys, monkeypatch, no_code_cache):
    monkeypatch.setattr(tirc.timings, "PROGRESS_AFTER_S", 0.0)
    capsys.readouterr()
    assert main(["compile", str(model_file)]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tirc: compiled model.py"), lines


def test_verbose_prints_every_stage_off_a_terminal(model_file, capsys, no_code_cache):
    """`-v`: a line per stage as it finishes, on a pipe too and for a short
    compile, then the summary; a training compile names each graph's."""
    capsys.readouterr()
    assert main(["compile", str(model_file), "-v"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == ["source", *PIPELINE, "codegen"], lines
    assert all(re.match(r"^tirc: [a-z-]+ \d+\.\d{3} s$", line) for line in lines[:-1]), lines
    assert lines[-1].startswith("tirc: compiled model.py")
    assert main(["compile", str(model_file), "-v", "--train"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("tirc: forward: lower ") for line in lines), lines
    assert any(line.startswith("tirc: backward: memplan ") for line in lines), lines


def test_progress_waits_for_the_threshold_then_prints_each_stage_once():
    now = [0.0]
    out = _Terminal()
    timings = Timings(progress=out, clock=lambda: now[0], progress_after=2.0)

    def run(name: str, seconds: float) -> None:
        with timings.measure(name):
            now[0] += seconds

    run("capture", 0.5)
    run("lower.ops", 0.25)
    run("lower", 0.25)
    assert out.getvalue() == ""  # a short compile prints nothing
    run("schedule", 1.5)
    assert out.getvalue().splitlines() == ["tirc: capture 0.5 s", "tirc: lower 0.2 s", "tirc: schedule 1.5 s"]
    run("capture", 1.0)  # measured again: added, not reported again
    assert len(out.getvalue().splitlines()) == 3
    assert timings.as_dict() == {"capture": 1.5, "lower": 0.25, "lower.ops": 0.25, "schedule": 1.5}


def test_the_table_is_aligned_with_shares_of_the_total():
    lines = tirc.timings.table({"capture": 3.0, "capture.trace": 1.5, "lower": 1.0})
    assert lines == [
        "tirc: timings",
        "  stage             seconds   share",
        "  capture             3.000   75.0%",
        "    capture.trace     1.500   37.5%",
        "  lower               1.000   25.0%",
        "  total               4.000  100.0%",
    ]


def test_determinism_checks_ignore_only_the_manifests_timings(tmp_path, no_code_cache):
    for name in ("a", "b"):
        tirc.compile(program, inputs(), dump_after="all", dump_dir=tmp_path / name)
    a = (tmp_path / "a" / "manifest.json").read_bytes()
    rest = json.loads(a)
    assert rest.pop("timings")
    assert json.loads(manifest_without_timings(a)) == rest
    first, second = comparable_files(tmp_path / "a"), comparable_files(tmp_path / "b")
    assert sorted(first) == sorted([*STAGE_FILES, "output_code.py", "manifest.json"])
    assert first == second
    assert first["manifest.json"] == manifest_without_timings(a)


def test_check_determinism_passes_and_is_timed(model_file, tmp_path, capsys, no_code_cache):
    capsys.readouterr()
    argv = ["compile", str(model_file), "--option", "check_determinism=true", "--timings"]
    code = main(argv + ["--dump-after", "all", "--dump-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert code == 0, err
    names = [row.split()[0] for row in table_rows(err)]
    assert names[-3:] == ["determinism", "build", "total"]
    assert "timings" in json.loads((tmp_path / "d" / "manifest.json").read_text())
