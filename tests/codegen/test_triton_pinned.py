"""Triton launch configs pinned in the dump: the tuner's winner is recorded
as a kernel's `triton_config` attribute, output_code.py launches it alone, a
re-fed dump regenerates the same bytes without timing anything, and a
hand-edited pin is checked and obeyed (a persistent reduction turns looped
when RBLOCK no longer holds the row).

The tuner times on a GPU; here it runs through the interpreter with made-up
timings (`codegen.triton_tune._do_bench` replaced), which checks everything
but the clock.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tirc
from codegen import triton_tune
from codegen.kernel_plan import module_plans
from ir_text import parse

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

PROGRAM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x * 2.0, -1)


def get_inputs():
    return [torch.randn(37, 129)]


def get_init_inputs():
    return []
"""


def tirc_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True, cwd=ROOT
    )


def pinned(text: str) -> list[str]:
    return re.findall(r"triton_config = \[[^\]]*\]", text)


class FakeClock:
    """Made-up timings: each timing is 5% faster than the one before, so in
    every round the last config offered is the fastest and wins; counts the
    timings (ROUNDS per config)."""

    def __init__(self):
        self.timed = 0

    def __call__(self, run):
        run()
        self.timed += 1
        return 0.95**self.timed


@pytest.fixture
def tuning(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    monkeypatch.setattr(triton_tune, "enabled", lambda device: True)
    clock = FakeClock()
    monkeypatch.setattr(triton_tune, "_do_bench", clock)
    return clock


def column_sum(x):
    return x.sum(0) * 2


def test_the_winner_is_pinned_in_the_dump_and_launched_alone(tuning, tmp_path):
    # 1024 x 1024 is large enough for the heuristic to offer alternatives.
    torch.manual_seed(0)
    x = torch.randn(1024, 1024)
    program = tirc.compile(column_sum, [x], backend="triton", dump_after="memplan", dump_dir=tmp_path / "d")
    configs = triton_tune.candidate_configs
    assert tuning.timed >= 2
    memplan = (tmp_path / "d" / "05-memplan.tir").read_text()
    (pin,) = pinned(memplan)
    xblock, rblock, warps, stages = json.loads(pin.split("= ")[1])
    assert f"XBLOCK={xblock}, RBLOCK={rblock}, num_warps={warps}, num_stages={stages}" in " ".join(
        program.code.split()
    )
    assert "triton_runtime.launch" not in program.code
    module = parse(memplan, "05-memplan.tir")
    kernel = module.kernels[0]
    (_, plan), *_ = module_plans(module)
    last = configs(plan).configs[-1]  # the fake clock makes the last the fastest
    assert dict(kernel.attrs)["triton_config"] == (last.xblock, last.rblock, last.num_warps, last.num_stages)
    fresh = torch.randn(1024, 1024)
    # A 1024-term f32 sum in another order: a few ulps of a sum of size 50.
    torch.testing.assert_close(program(fresh.clone()), column_sum(fresh), rtol=1e-4, atol=1e-4)


def test_a_second_compile_reads_the_winner_from_disk(tuning, tmp_path):
    x = torch.randn(1024, 1024)
    first = tirc.compile(column_sum, [x], backend="triton").code
    timed = tuning.timed
    assert timed >= 2
    again = tirc.compile(column_sum, [x], backend="triton").code
    assert tuning.timed == timed and again == first
    records = list((tmp_path / "cache" / "triton-autotune").glob("*/*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    configs = len(record["times_ms"])
    assert configs * triton_tune.ROUNDS == timed and record["winner"] == configs - 1
    assert [len(times) for times in record["rounds_ms"]] == [configs] * triton_tune.ROUNDS


def test_a_refed_dump_regenerates_the_same_code_without_timing(tuning, tmp_path, monkeypatch):
    x = torch.randn(1024, 1024)
    program = tirc.compile(column_sum, [x], backend="triton", dump_after="memplan", dump_dir=tmp_path / "d")
    assert tuning.timed >= 2

    def no_timing(run):
        raise AssertionError("a pinned dump must not be timed")

    monkeypatch.setattr(triton_tune, "_do_bench", no_timing)
    done = tirc_cli("compile", tmp_path / "d" / "05-memplan.tir", "--dump-dir", tmp_path / "again")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "again" / "output_code.py").read_text() == program.code


def test_a_damaged_record_is_timed_again(tuning, tmp_path):
    x = torch.randn(1024, 1024)
    tirc.compile(column_sum, [x], backend="triton")
    (record,) = (tmp_path / "cache" / "triton-autotune").glob("*/*.json")
    record.write_text("{not json")
    timed = tuning.timed
    tirc.compile(column_sum, [x], backend="triton")
    assert tuning.timed == 2 * timed
    assert json.loads(record.read_text())["winner"] == timed // triton_tune.ROUNDS - 1


def test_small_kernels_and_the_interpreter_time_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    monkeypatch.setattr(triton_tune, "_do_bench", FakeClock())
    # Without a GPU (the interpreter) the tuner is off, whatever the size.
    assert not triton_tune.enabled("cuda")
    program = tirc.compile(column_sum, [torch.randn(1024, 1024)], backend="triton")
    assert all("triton_config" not in dict(k.attrs) for k in program.compiled.module.kernels)
    assert triton_tune._do_bench.timed == 0
    assert not (tmp_path / "triton-autotune").exists()


def test_choice_keeps_the_first_config_unless_clearly_faster():
    assert triton_tune.choose([1.0, 0.995, 1.2]) == 0
    assert triton_tune.choose([1.0, 0.9, 0.85]) == 2
    assert triton_tune.choose([float("inf"), 2.0]) == 1


@pytest.fixture(scope="module")
def softmax_dumps(tmp_path_factory):
    work = tmp_path_factory.mktemp("pins")
    (work / "prog.py").write_text(PROGRAM)
    done = tirc_cli(
        "compile",
        work / "prog.py",
        "--backend",
        "triton",
        "--dump-after=fusion",
        "--dump-dir",
        work,
        "--save-inputs",
    )
    assert done.returncode == 0, done.stderr
    return work


def with_pin(text: str, pin: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith("  kernel @k0"))
    return text.replace(line, line[:-1] + f", triton_config = {pin}}}")


@pytest.mark.parametrize(
    "pin, looped",
    [("[2, 32, 2, 1]", True), ("[1, 256, 4, 1]", False), ("[4, 64, 1, 2]", True)],
)
def test_a_hand_pinned_config_is_obeyed(softmax_dumps, pin, looped):
    path = softmax_dumps / f"pin{pin.count('2')}{pin.count('4')}{len(pin)}.tir"
    path.write_text(with_pin((softmax_dumps / "04-fusion.tir").read_text(), pin))
    out = softmax_dumps / (path.stem + ".out")
    done = tirc_cli("compile", path, "--check", "--dump-dir", out, "--dump-after", "memplan")
    assert done.returncode == 0, done.stderr
    assert "ok: outputs match" in done.stdout + done.stderr
    code = (out / "output_code.py").read_text()
    xblock, rblock, warps, stages = json.loads(pin)
    assert f"XBLOCK={xblock}, RBLOCK={rblock}, num_warps={warps}, num_stages={stages}" in " ".join(
        code.split()
    )
    assert ("for roffset" in code) == looped
    assert pinned((out / "05-memplan.tir").read_text()) == [f"triton_config = {pin}"]


@pytest.mark.parametrize(
    "pin, message",
    [
        ("[3, 256, 4, 1]", "XBLOCK 3 is not a power of two"),
        ("[1, 0, 4, 1]", "RBLOCK 0 is not a power of two"),
        ("[1, 256, 3, 1]", "num_warps 3 is not one of"),
        ("[1, 256, 4, 0]", "num_stages 0 is not between 1 and 8"),
        ("[8192, 256, 4, 1]", "more than Triton's 2**20"),
        ("[1, 256, 4]", "expected four integers"),
        ('"fast"', "expected four integers"),
    ],
)
def test_a_bad_pin_is_refused_with_its_position(softmax_dumps, pin, message):
    path = softmax_dumps / "bad.tir"
    text = with_pin((softmax_dumps / "04-fusion.tir").read_text(), pin)
    path.write_text(text)
    done = tirc_cli("verify", path)
    assert done.returncode == 2
    line = next(k for k, t in enumerate(text.splitlines(), 1) if t.startswith("  kernel @k0"))
    assert re.match(rf"{re.escape(str(path))}:{line}:\d+: error: \[triton-config\] @k0: ", done.stderr)
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_pointwise_kernels_second_block_is_a_tiles_yblock(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM.replace("torch.softmax(x * 2.0, -1)", "x * 2.0 + 1"))
    done = tirc_cli(
        "compile",
        tmp_path / "prog.py",
        "--backend",
        "triton",
        "--dump-after=fusion",
        "--dump-dir",
        tmp_path,
        "--save-inputs",
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "04-fusion.tir").read_text()
    (tmp_path / "bad.tir").write_text(with_pin(text, "[64, 24, 4, 1]"))
    done = tirc_cli("verify", tmp_path / "bad.tir")
    assert done.returncode == 2 and "YBLOCK 24 is neither 0" in done.stderr
    for pin, meta in (
        ("[64, 0, 2, 1]", "XBLOCK=64, num_warps=2"),
        ("[64, 8, 2, 1]", "XBLOCK=64, YBLOCK=8, num_warps=2"),
    ):
        (tmp_path / "good.tir").write_text(with_pin(text, pin))
        done = tirc_cli("compile", tmp_path / "good.tir", "--check", "--dump-dir", tmp_path / "out")
        assert done.returncode == 0, done.stderr
        assert "ok: outputs match" in done.stdout + done.stderr
        code = (tmp_path / "out" / "output_code.py").read_text()
        assert f"{meta}, num_stages=1" in " ".join(code.split())
        assert ("yindex" in code) == ("YBLOCK" in meta)


def test_a_pin_on_the_cpp_backend_is_refused(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = tirc_cli("compile", tmp_path / "prog.py", "--dump-after=fusion", "--dump-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "bad.tir").write_text(with_pin((tmp_path / "04-fusion.tir").read_text(), "[1, 256, 4, 1]"))
    done = tirc_cli("verify", tmp_path / "bad.tir")
    assert done.returncode == 2
    assert "[triton-config] @k0: a launch config on the cpp backend, whose kernels take none" in done.stderr
