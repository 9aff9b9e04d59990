"""`widened`: the float64 copy of a module that replay's reference runs, built
from the module's data. Its text is what editing the printed text with
`\\bf32\\b -> f64` gave, for every golden dump and for programs of every
stage; where that edit also changed a name or a string (a value `%f32`, a
source file `f32.py`), it was wrong and `widened` is right."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from ir_text import TircError, named_ops, parse, print_ir
from lowering import interpret, widened
from tirc.compiler import capture_program
from tirc.options import Options
from tirc.pipeline import Context, run_stages

GOLDEN = sorted((Path(__file__).resolve().parents[1] / "golden" / "cases").glob("*/0[1-5]-*.tir"))


def regex_widened(text: str) -> str:
    """How the float64 reference was made before: the printed text, edited."""
    return re.sub(r"\bf32\b", "f64", text)


def stage_modules(fn, inputs, source: str = "prog.py", path: str | None = None) -> dict:
    """Every stage's module (capture .. memplan) of `fn` on `inputs`, as read from its dump."""
    options = Options()
    module, text, _, _ = capture_program(fn, list(inputs), source, path, options)
    texts = {"capture": text}
    run_stages(module, Context(options), None, lambda name, _m, t: texts.__setitem__(name, t))
    trusted = named_ops(module)
    return {stage: parse(t, f"{stage}.tir", trusted_ops=trusted) for stage, t in texts.items()}


def mixed_dtypes(x, h, idx):
    """Half and integer inputs beside float32 ones: f16 stays f16, i64 stays i64."""
    table = x.t() @ x
    rows = F.embedding(idx, table)
    return rows.sum(-1, dtype=torch.float32) + h.float().mean(), idx.argmax(), (h * 2).half()


def dtype_literals(x):
    """Graph ops with dtype arguments (`{dtype = f32}`) and float constants."""
    ones = torch.ones(x.shape, dtype=torch.float32)
    steps = torch.arange(x.shape[-1], dtype=torch.float32)
    return (x.to(torch.int32).to(torch.float32) + ones * 2.5 + steps).softmax(-1)


def updates_its_input(x, buf):
    buf.mul_(0.5).add_(x.sum(0))
    return torch.where(x > 0, x, x.exp() - 1).cumsum(-1)


def conv_relu(x, w):
    return F.relu(F.conv2d(x, w, padding=1)).amax((2, 3))


PROGRAMS = {
    "mixed_dtypes": (
        mixed_dtypes,
        lambda: [torch.randn(7, 5), torch.randn(3, 5).half(), torch.randint(0, 5, (6,))],
    ),
    "dtype_literals": (dtype_literals, lambda: [torch.randn(4, 9)]),
    "updates_its_input": (updates_its_input, lambda: [torch.randn(6, 5), torch.randn(5)]),
    "conv_relu": (conv_relu, lambda: [torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)]),
}


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_golden_dump_widens_as_its_text_did(path):
    text = path.read_text()
    module = parse(text, str(path))
    assert "f32" in text
    assert print_ir(widened(module)) == regex_widened(text)
    assert print_ir(module) == text  # the module itself is left as it was


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_stage_of_a_program_widens_as_its_text_did(name):
    fn, inputs = PROGRAMS[name]
    for stage, module in stage_modules(fn, inputs()).items():
        text = print_ir(module)
        assert print_ir(widened(module)) == regex_widened(text), stage


def test_the_widened_program_runs_in_float64():
    """f32 values and dtype literals become f64; f16 and i64 ones stay."""
    torch.manual_seed(0)
    inputs = PROGRAMS["mixed_dtypes"][1]()
    wide = [x.double() if x.dtype == torch.float32 else x for x in inputs]
    for stage, module in stage_modules(mixed_dtypes, inputs).items():
        got = interpret(widened(module), wide)
        want = interpret(module, inputs)
        assert [t.dtype for t in got] == [torch.float64, torch.int64, torch.float16], stage
        torch.testing.assert_close(got[0].float(), want[0], rtol=1e-5, atol=1e-5)
        assert torch.equal(got[1], want[1]) and torch.equal(got[2], want[2]), stage


def named_like_dtypes(f32, f64):
    return f32 * 2 + f64.float()


@pytest.mark.parametrize("stage", ["capture", "lower", "memplan"])
def test_values_named_like_dtypes_keep_their_names(stage):
    """Inputs named `f32` and `f64`: the text edit renamed `%f32` to `%f64`,
    which then named two inputs and did not parse, so the program had no
    float64 reference. Names are no dtypes; `widened` leaves them."""
    inputs = [torch.randn(4), torch.randn(4, dtype=torch.float64)]
    module = stage_modules(named_like_dtypes, inputs)[stage]
    with pytest.raises(TircError, match="defined twice"):
        parse(regex_widened(print_ir(module)))
    text = print_ir(widened(module))
    assert "input %f32 : f64[4]" in text and "input %f64 : f64[4]" in text
    (got,) = interpret(widened(module), [inputs[0].double(), inputs[1]])
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, inputs[0].double() * 2 + inputs[1], rtol=0, atol=0)


F32_PY = """import torch


def scaled(x):
    return (x * 2.5).softmax(-1)
"""


def test_a_source_file_named_like_a_dtype_keeps_its_name(tmp_path):
    """A program in `f32.py`: the text edit moved its header and every op's
    location to `f64.py`, a file that is not the program (the reference's
    errors name an op's location). `widened` keeps them."""
    path = tmp_path / "f32.py"
    path.write_text(F32_PY)
    spec = importlib.util.spec_from_file_location("f32_program", path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    module = stage_modules(program.scaled, [torch.randn(4, 9)], "f32.py", str(path))["lower"]
    text = print_ir(module)
    assert 'source="f32.py"' in text and 'loc("f32.py":5)' in text
    wide = print_ir(widened(module))
    assert 'source="f32.py"' in wide and 'loc("f32.py":5)' in wide and "f64.py" not in wide
    assert 'source="f64.py"' in regex_widened(text) and 'loc("f64.py":5)' in regex_widened(text)
    assert wide == regex_widened(text).replace('"f64.py"', '"f32.py"')


def test_a_module_of_another_dtype_pair():
    module = stage_modules(mixed_dtypes, PROGRAMS["mixed_dtypes"][1]())["lower"]
    text = print_ir(module)
    assert print_ir(widened(module, "f16", "f32")) == re.sub(r"\bf16\b", "f32", text)
