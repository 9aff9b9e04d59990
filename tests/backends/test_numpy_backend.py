"""A third backend is new files plus one table entry: the numpy backend
(numpy_backend.py, which no tirc module names) is registered here by one
`monkeypatch.setitem(codegen.BACKENDS, ...)` and then compiles the golden
programs and a few more through `tirc.compile` and the `tirc` command line,
matching eager PyTorch (or the reference interpreter, for a dump) on fresh
random inputs. Its body ops are checked one by one against the interpreter
with the harness of tests/codegen/test_body_ops.py.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
from pathlib import Path

import black
import pytest
import torch
import torch.nn.functional as F

import codegen
import lowering
import tirc
from codegen import random_input
from ir_text import BODY_OPS, TircError, parse, to_torch
from numpy_backend import NUMPY
from tirc.cli import main
from tirc.compiler import compile_module, options_of
from tests.codegen.matching import assert_matches, check_against_eager

TESTS = Path(__file__).resolve().parents[1]
GOLDEN_CASES = TESTS / "golden" / "cases"
PROGRAM_CASES = sorted(p.parent.name for p in GOLDEN_CASES.glob("*/source.py"))
DUMP_CASES = sorted(p.parent.name for p in GOLDEN_CASES.glob("*/source.tir"))


@pytest.fixture
def numpy_backend(monkeypatch):
    """The one table entry. The code cache is off: its key fingerprints the
    sources of tirc's packages, not this directory, so an edited
    numpy_backend.py would be served the code the old one generated."""
    monkeypatch.setitem(codegen.BACKENDS, "numpy", NUMPY)
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    return NUMPY


def assert_numpy_code(code: str):
    """The module is the numpy backend's: its kernels are NumPy functions."""
    assert "(backend numpy, device cpu)" in code
    assert "import numpy as np" in code and re.search(r"\n@np\.errstate\(.*\)\ndef k\w*\(", code)
    assert "CPP_SOURCE" not in code and "triton" not in code
    # Laid out as black (its default line length) lays it out, as the other backends' modules are.
    assert black.format_str(code, mode=black.Mode()) == code


def load_source(case: str):
    """A golden's source.py, a benchmark-convention program (class Model,
    get_inputs, get_init_inputs), imported as a user's file would be."""
    path = GOLDEN_CASES / case / "source.py"
    spec = importlib.util.spec_from_file_location(f"numpy_golden_{case}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_dtype(tensors, dtype):
    return [x.to(dtype) if x.is_floating_point() else x for x in tensors]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", PROGRAM_CASES)
def test_golden_program_matches_eager(numpy_backend, case, dtype):
    source = load_source(case)
    torch.manual_seed(0)
    model = source.Model(*source.get_init_inputs()).eval().to(dtype)
    compiled = tirc.compile(model, in_dtype(source.get_inputs(), dtype), backend="numpy")
    assert_numpy_code(compiled.code)
    torch.manual_seed(1)
    fresh = in_dtype(source.get_inputs(), dtype)
    with torch.no_grad():
        expected = model(*fresh)
    assert_matches(compiled(*fresh), expected)


@pytest.mark.parametrize("case", PROGRAM_CASES + DUMP_CASES)
def test_golden_compiles_through_the_cli(numpy_backend, case, tmp_path, capsys):
    """`tirc compile SOURCE --backend numpy --check`: the CLI's choices come
    from the table, and --check runs the code against eager PyTorch (a
    program) or the reference interpreter (a dump)."""
    source = next((GOLDEN_CASES / case).glob("source.*"))
    shutil.copy(source, tmp_path / source.name)
    out = tmp_path / "out"
    code = main(
        ["compile", str(tmp_path / source.name), "--backend", "numpy", "--check", "--dump-dir", str(out)]
        + ["--dump-after=memplan"]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert "backend numpy" in err and "match" in err, err
    assert_numpy_code((out / "output_code.py").read_text())


@pytest.mark.parametrize("case", DUMP_CASES)
def test_golden_dump_matches_interpreter_on_fresh_inputs(numpy_backend, case):
    path = GOLDEN_CASES / case / "source.tir"
    module = parse(path.read_text(), str(path))
    compiled = compile_module(module, options_of(module, backend="numpy"))
    assert_numpy_code(compiled.code)
    inputs = [
        random_input(t.shape, t.strides, to_torch(t.dtype), "cpu", seed=100 + k)
        for k, t in enumerate(i.value.type for i in module.inputs)
    ]
    # A fresh parse: compile_module wrote the numpy options into `module`.
    expected = lowering.interpret(parse(path.read_text(), str(path)), [x.clone() for x in inputs])
    assert_matches(list(compiled.load().call(inputs)), list(expected))


def ints(low, high, shape, dtype=torch.int64):
    return torch.randint(low, high, shape, dtype=dtype)


def nonzero_ints(shape, dtype):
    """Divisors of both signs, never zero."""
    return torch.randint(1, 10, shape, dtype=dtype) * (torch.randint(0, 2, shape, dtype=dtype) * 2 - 1)


def _floor_mod_fmod(a, b):
    return torch.div(a, b, rounding_mode="floor") * 3 + a % b - torch.fmod(a, b) * a


# name -> (function, make_inputs); make_inputs is called for the example
# inputs and again for the fresh ones the result is checked on.
PROGRAMS = {
    "reductions": (
        lambda x, y: (x.sum(-1), x.amax(0), y.mean(1)),
        lambda: [torch.randn(7, 37), torch.randn(3, 37, 5)],
    ),
    "softmax_dim0": (lambda x: torch.softmax(x, 0), lambda: [torch.randn(37, 13)]),
    "log_softmax_bf16": (lambda x: F.log_softmax(x, -1), lambda: [torch.randn(5, 37).bfloat16()]),
    "var_mean": (lambda x: torch.var_mean(x, -1), lambda: [torch.randn(7, 37)]),
    "argmax_argmin": (lambda x: (x.argmax(-1), x.argmin(0)), lambda: [torch.randn(7, 37)]),
    "sum_of_nothing": (lambda x: x.sum(-1) + 1, lambda: [torch.randn(3, 0)]),
    "matmul_epilogue": (
        lambda x, w, b: torch.relu(x @ w + b) * 2,
        lambda: [torch.randn(7, 37), torch.randn(37, 13), torch.randn(13)],
    ),
    "attention_scores": (
        lambda q, k: torch.softmax(q @ k.transpose(-1, -2) / 4, -1),
        lambda: [torch.randn(2, 7, 16), torch.randn(2, 11, 16)],
    ),
    "embedding": (
        lambda w, i: F.embedding(i, w) * 2 + 1,
        lambda: [torch.randn(17, 8), torch.randint(0, 17, (3, 5))],
    ),
    "gather_and_negative_index": (
        lambda x, i, j: (torch.gather(x, 1, i), x[j] - 1),
        lambda: [torch.randn(7, 13), torch.randint(0, 13, (7, 4)), torch.randint(-7, 7, (9,))],
    ),
    "scans": (
        lambda x, a: (x.cumsum(1), a.cumsum(0), (x * 0.5 + 1).cumprod(-1)),
        lambda: [torch.randn(7, 37), ints(-50, 50, (37, 5))],
    ),
    "transposes": (
        lambda x, y, z: (x.t() * 2, y.permute(2, 0, 1).contiguous() + 1, torch.tanh(z) * z),
        lambda: [torch.randn(7, 37), torch.randn(3, 7, 5), torch.randn(37, 7).t()],
    ),
    "cat_and_pad": (
        lambda x, y: F.pad(torch.cat([x, y], 1), (2, 1)),
        lambda: [torch.randn(7, 5), torch.randn(7, 3)],
    ),
    "int_floordiv_remainder_fmod": (
        lambda a, b, c, d: (_floor_mod_fmod(a, b), _floor_mod_fmod(c, d)),
        lambda: [
            ints(-100, 100, (37,), torch.int32),
            nonzero_ints((37,), torch.int32),
            ints(-(10**12), 10**12, (37,)),
            nonzero_ints((37,), torch.int64),
        ],
    ),
    "int_pow_bitwise": (
        lambda a, b: (a**2 - a) ^ (a & ~b) | (b >> 1),
        lambda: [ints(-50, 50, (37,)), ints(-50, 50, (37,))],
    ),
    "narrow_ints_wrap": (
        lambda a, b: (a * 3 + 100, b - 7),
        lambda: [ints(-100, 100, (37,), torch.int8), ints(0, 255, (37,), torch.uint8)],
    ),
    "int_compare_and_sum": (
        lambda a, b: ((a > b).sum(-1), torch.where(a == b, a, b * 2).amax(-1)),
        lambda: [ints(-3, 3, (7, 13), torch.int32), ints(-3, 3, (7, 13), torch.int32)],
    ),
    "int_true_div_and_cast": (
        lambda a, b: a / b + (a * 1.5).to(torch.int32),
        lambda: [ints(-100, 100, (37,)), nonzero_ints((37,), torch.int64)],
    ),
    "bool_any_all": (
        lambda x: ((x > 0).any(-1), (x > -1).all(0), (x > 0) ^ (x < 1)),
        lambda: [torch.randn(7, 13)],
    ),
    "gelu_f16": (lambda x: F.gelu(x) * torch.sigmoid(x), lambda: [torch.randn(7, 37).half()]),
    "zero_dim": (lambda s, x: x * s + torch.relu(s), lambda: [torch.randn(()), torch.randn(5)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_eager(numpy_backend, name):
    fn, make_inputs = PROGRAMS[name]
    torch.manual_seed(0)
    compiled = tirc.compile(fn, make_inputs(), backend="numpy")
    assert_numpy_code(compiled.code)
    check_against_eager(compiled, fn, make_inputs)


def _cancellation(x, y):
    # Sums of products that cancel: a value rounded once instead of per op shows.
    return (x * y + x) * y - x / y - y * y


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_reduced_precision_rounds_as_eager(numpy_backend, dtype):
    """f16/bf16 values are computed in f32 and rounded to nearest even after
    each op (the lowering's casts): the same bits as eager, not merely close."""
    torch.manual_seed(0)
    compiled = tirc.compile(
        _cancellation, [torch.randn(1000).to(dtype), torch.randn(1000).to(dtype)], backend="numpy"
    )
    torch.manual_seed(1)
    x, y = torch.randn(1000).to(dtype), torch.randn(1000).to(dtype)
    assert torch.equal(compiled(x, y), _cancellation(x, y))


@pytest.mark.parametrize("dim", [0, 1])
def test_float32_scans_carry_double_as_eager(numpy_backend, dim):
    """Eager's CPU cumsum carries a float32 prefix in double: each element is
    the prefix summed exactly and rounded once, which a float carry misses
    (by 1e-4 over 3001 elements)."""
    fn = lambda x: x.cumsum(dim)  # noqa: E731
    shape = (5, 3001) if dim == 1 else (3001, 5)
    compiled = tirc.compile(fn, [torch.randn(shape)], backend="numpy")
    x = torch.randn(shape)
    assert torch.equal(compiled(x), fn(x))


def test_special_values(numpy_backend):
    """NaN, infinities and signed zeros through the ops whose NumPy spelling
    differs from torch's there (torch.sign(nan) is 0)."""

    def fn(x):
        return (
            torch.sign(x),
            torch.relu(x),
            torch.clamp(x, -1.0, 1.0),
            torch.sigmoid(x),
            x.isnan(),
            x.signbit(),
        )

    x = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 2.5, -2.5, 1e30, -1e30])
    compiled = tirc.compile(fn, [x], backend="numpy")
    assert_matches(compiled(x), fn(x))


def test_index_out_of_range_raises_as_eager(numpy_backend):
    """The error names the index, the size and the op, as the C++ kernels' does."""
    w = torch.randn(17, 8)
    compiled = tirc.compile(lambda w, i: F.embedding(i, w) * 2, [w, torch.tensor([0, 3])], backend="numpy")
    with pytest.raises(IndexError, match=r"index 20 is out of bounds for a dimension of size 17 \(in aten\."):
        compiled(w, torch.tensor([1, 20]))


def test_integer_division_by_zero_raises_as_eager(numpy_backend):
    def fn(a, b):
        return a // b

    compiled = tirc.compile(fn, [ints(1, 9, (5,)), ints(1, 9, (5,))], backend="numpy")
    with pytest.raises(ZeroDivisionError, match=r"integer division by zero \(in aten\."):
        compiled(ints(1, 9, (5,)), torch.tensor([1, 2, 0, 4, 5]))


SUMS = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.sum(1), x.sum(0)


def get_inputs():
    return [torch.randn(7, 37)]
"""


def test_the_target_runs_one_loop_nest_per_kernel(numpy_backend, tmp_path, capsys):
    """A row sum and a column sum: one kernel of two loop nests for cpp, whose
    target runs several; two kernels for numpy, and a cpp fusion dump's
    kernel of two nests re-fed for numpy is refused by the plan check."""
    source = tmp_path / "sums.py"
    source.write_text(SUMS)
    out = tmp_path / "cpp"
    assert (
        main(["compile", str(source), "--dump-after=fusion", "--stop-after=fusion", "--dump-dir", str(out)])
        == 0
    )
    (fusion,) = out.glob("*fusion.tir")
    assert "fuse(%buf0; %buf1)" in fusion.read_text()
    capsys.readouterr()
    assert main(["compile", str(fusion), "--backend", "numpy"]) == 2
    assert "[nests] a kernel of the numpy backend runs one loop nest" in capsys.readouterr().err
    assert main(["compile", str(source), "--backend", "numpy", "--check"]) == 0
    assert "(2 kernel(s), backend numpy)" in capsys.readouterr().err


def test_the_record_renders_every_body_op():
    assert NUMPY.ops == set(BODY_OPS)


def _body_op_harness():
    """tests/codegen/test_body_ops.py, whose helpers build one loop node per
    body op (on every dtype the verifier takes it on) and compare a
    backend's code with the reference interpreter, for any backend name."""
    spec = importlib.util.spec_from_file_location("numpy_body_ops", TESTS / "codegen" / "test_body_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A float, an integer, bool and the storage-only bf16: the dtypes whose ops
# the backend spells differently (all nine of the harness take about four
# times as long, past this file's budget; PROGRAMS has u8, i8, i64, f64, f16).
@pytest.mark.parametrize("dtype", ["f32", "i32", "b8", "bf16"])
def test_body_ops_match_interpreter(numpy_backend, dtype, tmp_path, capsys):
    harness = _body_op_harness()
    cases = harness.defined_cases(dtype)
    problems = harness.compile_and_compare("numpy", dtype, cases, tmp_path, capsys)
    assert not problems, "\n".join(problems)


def test_an_op_the_backend_does_not_render_is_one_clear_error(monkeypatch):
    """A record whose `ops` lacks erf: compiling GELU (erf) fails in codegen
    with one TircError that names the backend and the op."""
    monkeypatch.setitem(codegen.BACKENDS, "numpy", dataclasses.replace(NUMPY, ops=NUMPY.ops - {"erf"}))
    # A cached entry of the full record's code would skip the check (see the numpy_backend fixture).
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    with pytest.raises(TircError) as info:
        tirc.compile(lambda x: F.gelu(x), [torch.randn(5)], backend="numpy")
    message = str(info.value)
    assert "the numpy backend cannot render the body op(s) erf" in message
    assert len(message.splitlines()) == 1, message


def test_without_the_table_entry_numpy_is_an_unknown_backend(tmp_path, capsys):
    assert "numpy" not in codegen.BACKENDS
    with pytest.raises(TircError, match=r"unknown backend 'numpy' \(expected "):
        tirc.compile(lambda x: x + 1, [torch.randn(5)], backend="numpy")
    source = shutil.copy(GOLDEN_CASES / PROGRAM_CASES[0] / "source.py", tmp_path / "source.py")
    with pytest.raises(SystemExit) as info:
        main(["compile", str(source), "--backend", "numpy"])
    assert info.value.code == 2
    assert "invalid choice: 'numpy'" in capsys.readouterr().err
