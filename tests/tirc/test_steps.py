"""Named steps of the stages (tirc/steps.py): `--stop-after` and
`--dump-after` take a whole step, `-o -` prints the result, a step's dump
re-feeds as a dump of its stage, a partial step is refused with the step
that completes it, and an injected crash in a step is reported by name with
the stage's reproducer, which replays to it."""

from __future__ import annotations

import pytest

from ir_text import parse, print_ir
from tirc.cli import main
from tirc.pipeline import STAGE_TABLE
from tirc.steps import STEP_NAMES, STEPS, WHOLE_STEPS

# One row of 70007: a reduction the Triton backend splits into two kernels
# (fusion.split-reductions writes `split = N`), the rest plain kernels.
SOURCE = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return (x * 2.0).sum(dim=-1, keepdim=True), torch.relu(x[:, :37]) + 1.0


def get_inputs():
    return [torch.randn(1, 70007)]
"""


@pytest.fixture
def program(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    return path


def stdout_of(capsys, cli, *args) -> str:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_the_table_runs_the_named_steps_in_order():
    assert [s.name for stage in STAGE_TABLE for s in stage.steps] == list(STEP_NAMES)
    assert set(WHOLE_STEPS) <= set(STEP_NAMES) and "schedule.inline" not in WHOLE_STEPS
    assert all(name.startswith(stage + ".") for stage, steps in STEPS.items() for name, _ in steps)


def test_stop_after_a_step_prints_the_module_before_the_later_steps(program, cli, capsys):
    fuse = stdout_of(
        capsys, cli, "compile", program, "--backend", "triton", "--stop-after", "fusion.fuse", "-o", "-"
    )
    fusion = stdout_of(
        capsys, cli, "compile", program, "--backend", "triton", "--stop-after", "fusion", "-o", "-"
    )
    assert fuse.startswith("tirc 0.1 stage=fusion") and "split = " not in fuse
    assert "split = " in fusion
    assert fusion.replace(", split = ", "").count("\n") == fuse.count("\n")  # the same plan, plus the factor


def test_o_writes_the_text_a_dump_of_the_stage_holds(program, cli, tmp_path, capsys):
    out = tmp_path / "fusion.tir"
    code, err = cli(
        "compile", program, "--stop-after", "fusion", "-o", out, "--dump-after", "fusion", "--dump-dir", "d"
    )
    assert code == 0, err
    assert out.read_text() == (tmp_path / "d" / "04-fusion.tir").read_text()


def test_a_steps_dump_refeeds_as_its_stage_and_matches(program, cli, tmp_path):
    code, err = cli(
        "compile", program, "--backend", "triton", "--dump-after", "fusion.fuse,fusion", "--dump-dir", "d"
    )
    assert code == 0, err
    step = tmp_path / "d" / "04-fusion.fuse.tir"
    text = step.read_text()
    assert parse(text, str(step)).stage == "fusion" and print_ir(parse(text, str(step))) == text
    assert "split = " not in text and "split = " in (tmp_path / "d" / "04-fusion.tir").read_text()
    code, err = cli("replay", step)  # the plan unsplit: runs and matches the reference
    assert code == 0, err


def test_a_partial_step_is_refused_with_the_step_that_completes_it(program, cli, tmp_path):
    for flag in ("--stop-after", "--dump-after"):
        code, err = cli("compile", program, flag, "schedule.inline")
        assert code == 2
        assert "step 'schedule.inline' leaves part of the schedule stage's work" in err
        assert "schedule.facts" in err and "Traceback" not in err
    code, err = cli("compile", program, "--stop-after", "fusion.nonesuch")
    assert code == 2 and "unknown stage or step 'fusion.nonesuch'" in err


@pytest.mark.parametrize(
    "step, backend, stage",
    [("fusion.split-reductions", "triton", "fusion"), ("schedule.dead-nodes", "cpp", "schedule")],
)
def test_a_crash_in_a_step_names_it_and_the_stage_reproducer_replays_to_it(
    program, cli, tmp_path, step, backend, stage
):
    code, err = cli("compile", program, "--backend", backend, "--option", f"inject_fault={step}:crash")
    assert code == 2
    first = next(line for line in err.splitlines() if "internal error" in line)
    assert (
        f"internal error in pass {stage} (step {step}): InjectedFault: injected crash in pass {step}" in first
    )
    assert f"the IR before pass {stage} (it crashed in step {step})" in err
    repro = tmp_path / f"repro-{stage}.tir"
    code, err = cli("replay", repro)
    assert code == 2 and next(line for line in err.splitlines() if "internal error" in line) == first


def test_an_unknown_step_in_a_fault_is_an_option_error(program, cli):
    code, err = cli("compile", program, "--option", "inject_fault=fusion.nonesuch:crash")
    assert code == 2 and "inject_fault takes PASS:crash" in err and "fusion.split-reductions" in err
