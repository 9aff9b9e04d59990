"""`tirc reduce`: the result is a valid dump, much smaller, that replays to the
same failure; candidates that fail differently are refused."""

from __future__ import annotations

import re

import pytest

from ir_text import parse, print_ir
from repro import op_count
from tirc.cli import main
from tirc.reducing import message_pattern

SOURCE = """import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(37)
        self.proj = torch.nn.Linear(37, 37)

    def forward(self, x, mask):
        h = self.norm(x)
        a = torch.softmax(h * 0.5 + mask, dim=-1)
        g = torch.nn.functional.gelu(self.proj(a))
        return torch.tanh(g) * 2.0 + h, torch.cos(a).amax(dim=-1)


def get_inputs():
    return [torch.randn(5, 37), torch.randn(37)]
"""


def run(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


@pytest.fixture
def dumps(tmp_path, monkeypatch, capsys):
    """`dumps(fault, *extra)`: the dump dir of SOURCE compiled with that fault."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text(SOURCE)

    def make(fault: str, *extra) -> str:
        out = f"dumps-{fault.replace(':', '-')}"
        code, err = run(
            capsys,
            "compile",
            "model.py",
            "--dump-after=all",
            "--dump-dir",
            out,
            "--option",
            f"inject_fault={fault}",
            *extra,
        )
        assert code in (0, 2), err
        return out

    return make


def reduced_module(path):
    text = path.read_text()
    assert print_ir(parse(text, str(path))) == text  # byte-exact round trip
    return parse(text, str(path))


@pytest.mark.parametrize("stage", ["01-capture", "02-lower", "04-fusion", "05-memplan"])
def test_a_miscompile_reduces_to_a_few_ops_that_replay_to_the_same_mismatch(stage, dumps, tmp_path, capsys):
    out = dumps("codegen:miscompile:tanh")
    source = tmp_path / out / f"{stage}.tir"
    code, err = run(capsys, "replay", source)
    assert code == 1 and "output 0" in err
    code, err = run(capsys, "reduce", source, "--until", "mismatch", "-o", "min.tir")
    assert code == 0, err
    summary = re.search(r"reduced (\d+) -> (\d+) ops", err)
    assert summary, err
    module = reduced_module(tmp_path / "min.tir")
    assert int(summary.group(2)) == op_count(module) <= 5 < int(summary.group(1))
    assert module.stage == parse(source.read_text(), "s").stage
    assert len(module.outputs) == 1
    code, err = run(capsys, "replay", "min.tir")
    assert code == 1 and "mismatch" in err and "output 0" in err


def test_the_failing_output_is_the_one_kept(dumps, tmp_path, capsys):
    out = dumps("codegen:miscompile:cos")  # only the second output computes a cos
    code, err = run(capsys, "replay", f"{out}/02-lower.tir")
    assert code == 1 and "output 1" in err
    code, err = run(capsys, "reduce", f"{out}/02-lower.tir", "--until", "mismatch", "-o", "min.tir")
    assert code == 0, err
    module = reduced_module(tmp_path / "min.tir")
    assert any(op.op == "cos" for n in module.nodes for op in getattr(n, "body", ()))
    assert not any(op.op == "tanh" for n in module.nodes for op in getattr(n, "body", ()))
    assert len(module.outputs) == 1  # output 1 alone, now output 0
    code, err = run(capsys, "replay", "min.tir")
    assert code == 1 and "output 0" in err


@pytest.mark.parametrize("regex", ["injected crash", "InjectedFault", "^InjectedFault: injected"])
def test_a_crash_reduces_and_keeps_its_exception(dumps, tmp_path, capsys, regex):
    """REGEX is matched against the crash as tirc prints it: TYPE: message."""
    out = dumps("fusion:crash", "--stop-after", "lower")
    code, err = run(capsys, "reduce", f"{out}/02-lower.tir", "--until", f"crash:{regex}", "-o", "min.tir")
    assert code == 0, err
    assert op_count(reduced_module(tmp_path / "min.tir")) <= 5
    code, err = run(capsys, "replay", "min.tir")
    assert code == 2 and "InjectedFault: injected crash in pass fusion" in err


def test_a_crash_of_another_kind_is_refused(dumps, capsys):
    out = dumps("fusion:crash", "--stop-after", "lower")
    code, err = run(capsys, "reduce", f"{out}/02-lower.tir", "--until", "crash:segfault", "-o", "min.tir")
    assert code == 2 and "expected a crash whose 'TYPE: message' matches /segfault/" in err


def test_a_dump_that_does_not_fail_is_an_error(dumps, tmp_path, capsys):
    (tmp_path / "ok").mkdir()
    code, err = run(capsys, "compile", "model.py", "--dump-after=lower", "--dump-dir", "ok")
    code, err = run(capsys, "reduce", "ok/02-lower.tir", "--until", "mismatch")
    assert code == 2 and "expected a mismatch, but the dump gives no failure" in err
    assert not (tmp_path / "ok" / "02-lower.reduced.tir").exists()


def test_cmd_reduces_while_the_command_succeeds(dumps, tmp_path, capsys):
    (tmp_path / "ok").mkdir()
    run(capsys, "compile", "model.py", "--dump-after=lower", "--dump-dir", "ok")
    code, err = run(capsys, "reduce", "ok/02-lower.tir", "--until", "cmd:grep -q 'tanh(' {}")
    assert code == 0, err
    module = reduced_module(tmp_path / "ok" / "02-lower.reduced.tir")  # the default output name
    assert op_count(module) <= 5
    assert "tanh(" in (tmp_path / "ok" / "02-lower.reduced.tir").read_text()


def test_saved_inputs_travel_with_the_reduced_dump(dumps, tmp_path, capsys):
    out = dumps("codegen:miscompile:tanh", "--save-inputs")
    (tmp_path / "elsewhere").mkdir()
    code, err = run(capsys, "reduce", f"{out}/02-lower.tir", "--until", "mismatch", "-o", "elsewhere/min.tir")
    assert code == 0, err
    module = reduced_module(tmp_path / "elsewhere" / "min.tir")
    for inp in module.inputs:
        if inp.sha256:
            assert (tmp_path / "elsewhere" / "inputs" / f"{inp.sha256}.pt").is_file()
    code, err = run(capsys, "replay", "elsewhere/min.tir")
    assert code == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--until", "wrong"], "--until takes crash[:REGEX], mismatch or cmd:SHELL"),
        (["--until", "crash:("], "bad regular expression"),
        (["--until", "mismatch", "-o", "{source}"], "-o names the input file"),
    ],
)
def test_bad_requests_are_clear_errors(args, message, dumps, capsys):
    out = dumps("codegen:miscompile")
    source = f"{out}/02-lower.tir"
    code, err = run(capsys, "reduce", source, *[a.format(source=source) for a in args])
    assert code == 2 and message in err and "Traceback" not in err


def test_message_patterns_ignore_numbers_and_value_names():
    pattern = message_pattern("index 37 out of range for %buf3 (size 8)")
    assert re.search(pattern, "index 5 out of range for %buf12 (size 1024)")
    assert not re.search(pattern, "division by zero in %buf3")


def test_capture_dumps_shrink_their_shapes(dumps, tmp_path, capsys):
    out = dumps("codegen:miscompile:tanh")
    source = parse((tmp_path / out / "01-capture.tir").read_text(), "s")
    code, err = run(capsys, "reduce", f"{out}/01-capture.tir", "--until", "mismatch", "-o", "min.tir")
    assert code == 0, err
    module = reduced_module(tmp_path / "min.tir")
    elements = sum(inp.value.type.numel for inp in module.inputs)
    assert elements < min(inp.value.type.numel for inp in source.inputs if inp.value.type.numel > 1)
    assert "input elements" in err
    code, err = run(capsys, "replay", "min.tir")
    assert code == 1 and "mismatch" in err


INTEGER_SOURCE = """import torch


def affine(x):
    return x * 3 + 1


def get_inputs():
    return [torch.arange(12).reshape(3, 4)]
"""


def test_an_error_of_the_dump_is_reported_as_replay_reports_it(tmp_path, monkeypatch, capsys):
    """A user error of the dump itself (here: a fault that needs a float op,
    in an integer program) is the one line replay gives, not a crash."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "affine.py").write_text(INTEGER_SOURCE)
    code, err = run(
        capsys, "compile", "affine.py", "--entry", "affine", "--dump-after=lower", "--dump-dir", "d"
    )
    assert code == 0, err
    fault = ("--option", "inject_fault=codegen:miscompile")
    code, replayed = run(capsys, "replay", "d/02-lower.tir", *fault)
    assert code == 2 and replayed.startswith("d/02-lower.tir: error: inject_fault="), replayed
    code, err = run(capsys, "reduce", "d/02-lower.tir", "--until", "mismatch", "-o", "min.tir", *fault)
    assert (code, err) == (2, replayed)
    assert not (tmp_path / "min.tir").exists()
