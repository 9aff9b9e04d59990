"""Injected faults and crash reproducers: a crash in any pass writes the IR
before it as repro-PASS.tir, which replays to the same exception; a
miscompile corrupts the generated code only, and every dump replays to it."""

from __future__ import annotations

import pytest

from ir_text import parse, print_ir
from tirc.cli import main
from tirc.options import FAULT_PASSES

SOURCE = """import torch


class Model(torch.nn.Module):
    def forward(self, x, b):
        y = torch.softmax(x * 2.0 + b, dim=-1)
        return torch.sigmoid(y) - x, y.sum(dim=0)


def get_inputs():
    return [torch.randn(7, 37), torch.randn(37)]
"""


@pytest.fixture
def source(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    return path


def run(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def error_line(err: str) -> str:
    return next(line for line in err.splitlines() if "internal error" in line)


@pytest.mark.parametrize("stage", FAULT_PASSES)
def test_a_crash_in_each_pass_leaves_a_reproducer_that_replays_to_it(stage, source, tmp_path, capsys):
    code, err = run(capsys, "compile", source, "--option", f"inject_fault={stage}:crash")
    assert code == 2
    first = error_line(err)
    assert f"internal error in pass {stage}: InjectedFault: injected crash in pass {stage}" in first
    repro = tmp_path / f"repro-{stage}.tir"  # no dump dir: the current directory
    assert f"wrote repro-{stage}.tir" in err and f"tirc replay repro-{stage}.tir" in err
    text = repro.read_text()
    assert print_ir(parse(text, str(repro))) == text  # byte-exact round trip
    module = parse(text, str(repro))
    before = {"lower": "capture", "schedule": "lower", "fusion": "schedule", "memplan": "fusion"}
    assert module.stage == before.get(stage, "memplan")
    assert ("inject_fault", f"{stage}:crash") in module.options
    code, err = run(capsys, "replay", repro)
    assert code == 2 and error_line(err) == first
    assert "wrote" not in err  # replaying the reproducer does not copy it


def test_the_reproducer_goes_into_the_dump_dir(source, tmp_path, capsys):
    code, err = run(
        capsys,
        "compile",
        source,
        "--dump-after=all",
        "--dump-dir",
        "out",
        "--option",
        "inject_fault=fusion:crash",
    )
    assert code == 2
    assert (tmp_path / "out" / "repro-fusion.tir").is_file() and not (tmp_path / "repro-fusion.tir").exists()
    # The stages before the crash are dumped as usual; the reproducer is the schedule dump.
    assert (tmp_path / "out" / "repro-fusion.tir").read_text() == (
        tmp_path / "out" / "03-schedule.tir"
    ).read_text()
    assert not (tmp_path / "out" / "04-fusion.tir").exists()


def test_replaying_an_earlier_dump_writes_a_reproducer(source, tmp_path, capsys):
    run(
        capsys,
        "compile",
        source,
        "--dump-after=lower",
        "--dump-dir",
        "out",
        "--option",
        "inject_fault=memplan:crash",
    )
    (tmp_path / "repro-memplan.tir").unlink(missing_ok=True)
    code, err = run(capsys, "replay", "out/02-lower.tir")
    assert code == 2 and "in pass memplan" in err
    # Beside the dump: replaying a dump writes nowhere but its directory.
    assert parse((tmp_path / "out" / "repro-memplan.tir").read_text(), "r").stage == "fusion"
    assert not (tmp_path / "repro-memplan.tir").exists()


def test_user_errors_are_not_crashes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.tir"
    bad.write_text('tirc 0.1 stage=lower source="x.py"\nthis is not IR\n')
    code, err = run(capsys, "replay", bad)
    assert code == 2 and "error:" in err and "internal error" not in err
    assert not list(tmp_path.glob("repro-*.tir"))


def test_a_miscompile_changes_only_the_generated_code(source, tmp_path, capsys):
    code, err = run(capsys, "compile", source, "--dump-after=all", "--dump-dir", "good", "--check")
    assert code == 0, err
    code, err = run(
        capsys,
        "compile",
        source,
        "--dump-after=all",
        "--dump-dir",
        "bad",
        "--check",
        "--option",
        "inject_fault=codegen:miscompile",
    )
    assert code == 1 and "mismatch against eager PyTorch" in err
    for name in ("02-lower.tir", "04-fusion.tir", "05-memplan.tir"):
        good, bad = (tmp_path / "good" / name).read_text(), (tmp_path / "bad" / name).read_text()
        assert 'inject_fault = "codegen:miscompile"' in bad.splitlines()[1]
        assert good.splitlines()[2:] == bad.splitlines()[2:]
    assert (tmp_path / "good" / "output_code.py").read_text() != (
        tmp_path / "bad" / "output_code.py"
    ).read_text()
    for name in ("01-capture.tir", "02-lower.tir", "05-memplan.tir"):
        code, err = run(capsys, "replay", tmp_path / "bad" / name)
        assert code == 1 and "mismatch" in err, name


def test_a_miscompile_can_name_its_op(source, capsys):
    code, err = run(capsys, "compile", source, "--check", "--option", "inject_fault=codegen:miscompile:exp")
    assert code == 1 and "mismatch" in err
    code, err = run(capsys, "compile", source, "--option", "inject_fault=codegen:miscompile:atan2")
    assert code == 2 and "no float 'atan2' op to corrupt" in err
    # The N-th op of a name (softmax's x - max is the first `sub`); past the last one, an error.
    code, err = run(capsys, "compile", source, "--check", "--option", "inject_fault=codegen:miscompile:sub:1")
    assert code == 1 and "mismatch" in err
    code, err = run(capsys, "compile", source, "--option", "inject_fault=codegen:miscompile:sub:9")
    assert code == 2 and "float 'sub' op(s), not 9, to corrupt" in err
    # A source line: `sigmoid(y) - x` is the only `sub` of line 7 (softmax's is on line 6).
    code, err = run(capsys, "compile", source, "--check", "--option", "inject_fault=codegen:miscompile:sub@7")
    assert code == 1 and "output 0" in err
    code, err = run(capsys, "compile", source, "--option", "inject_fault=codegen:miscompile:sub@5")
    assert code == 2 and "no float 'sub' op on line 5 to corrupt" in err


@pytest.mark.parametrize(
    "spec",
    [
        "fusion",
        "capture:crash",
        "codegen:miscompile:exp:0",
        "codegen:miscompile::2",
        "codegen:miscompile:exp@x",
        "lower:hang",
    ],
)
def test_a_bad_fault_is_a_clear_error(spec, source, capsys):
    code, err = run(capsys, "compile", source, "--option", f"inject_fault={spec}")
    assert code == 2 and "inject_fault takes PASS:crash" in err and "Traceback" not in err


def test_faults_are_not_in_ordinary_headers(source, tmp_path, capsys):
    run(capsys, "compile", source, "--dump-after=capture", "--dump-dir", "out")
    header = (tmp_path / "out" / "01-capture.tir").read_text().splitlines()[1]
    assert "inject_fault" not in header and "check_determinism" not in header
