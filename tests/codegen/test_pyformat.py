"""pyformat lays the wrapper out as black would: output_code.py is a fixed
point of black on crafted lines, on programs that stress the wrapper's long
lines (many inputs, high-rank shapes, extern calls with keyword arguments,
several results) and on random programs of both backends."""

from __future__ import annotations

import black
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from program_strategies import elementwise_programs

import tirc
from codegen.pyformat import layout, py_string


def _black(text: str) -> str:
    return black.format_str(text, mode=black.Mode())


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}_{k}" for k in range(count)]


LINES = [
    "    x = f(a, b)",
    f"    {', '.join(_names('argument', 12))} = args",
    f"    ({', '.join(_names('argument', 12))}) = args",
    f"    {', '.join(_names('argument', 3))} = args",
    "    buf3, _ = runtime.extern_call(torch.ops.aten.native_layer_norm.default, "
    "[a, [4], b, c, 1e-05], {}, [((2, 4), (4, 1)), ((2, 1), (1, 1)), ((2, 1), (1, 1))])",
    '    (buf3,) = runtime.extern_call(torch.ops.aten.sum.dim_IntList, [a], {"dim": 1, '
    f'"x": [{", ".join(_names("argument", 6))}]}}, [((2, 4), (4, 1))])',
    f"    k0({', '.join(f'buf{k}.data_ptr()' for k in range(30))})",
    '    runtime.assert_input(arg0_1, (2, 16, 64, 64), (65536, 4096, 64, 1), torch.float32, "arg0_1")',
    "    buf12 = torch.empty_strided((2, 16, 64, 64, 3, 3, 3), (65536, 4096, 64, 1, 1, 1, 1), "
    'dtype=torch.float32, device="cpu")',
    f"    k0[(triton.cdiv(1000, 128),)]({', '.join(_names('buf', 12))}, 1000, XBLOCK=128, num_warps=4)",
    f"    _launch(k0, (triton.cdiv(1000, 128),), ({', '.join(_names('buf', 12))}, 1000), XBLOCK=128, num_warps=4)",
    f"    inputs = [{', '.join(f'runtime.random_input((7, 37), (37, 1), {k})' for k in range(3))}]",
    f"    return ({', '.join(_names('buffer', 20))})",
    f"    return ({', '.join(_names('buffer', 9))})",
    f"    return ({', '.join(_names('b', 27))}, {', '.join(_names('a', 12))})",
    f'    f("{"),[" * 30}", {", ".join(_names("an_argument", 6))})',
    f"    g(h({', '.join(_names('an_argument', 9))}))",
    # Trailing comments (an extern call's source line): they count in the length.
    "    buf0 = x.as_strided([4], [1])  # model.py:3",
    f"    buf0 = {'x' * 40}.as_strided([32, 64], [1, 32])  # {'m' * 20}.py:10",
    "    (buf1,) = runtime.extern_call(torch.ops.aten.mm.default, [x, buf0], {}, [((16, 64), (64, 1))])"
    "  # mix.py:10",
    "    buf3, _ = runtime.extern_call(torch.ops.aten.native_layer_norm.default, "
    "[a, [4], b, c, 1e-05], {}, [((2, 4), (4, 1)), ((2, 1), (1, 1)), ((2, 1), (1, 1))])  # model.py:12",
    '    (buf3,) = runtime.extern_call(torch.ops.aten.sum.dim_IntList, [a], {"dim": "#1"}, '
    "[((2, 4), (4, 1))])  # model.py:7 #2",
]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_layout_matches_black(line):
    assert "def f():\n" + "\n".join(layout(line)) + "\n" == _black(f"def f():\n{line}\n")


@pytest.mark.parametrize("text", ["abc", "it's", 'say "hi"', "a\\b", "both ' and \"", '1\' and 2""', "tab\t"])
def test_string_literals_take_blacks_quotes(text):
    literal = py_string(text)
    assert eval(literal) == text
    assert _black(f"x = {literal}\n") == f"x = {literal}\n"


def _many_inputs(*xs):
    return tuple(x * 2 + 1 for x in xs)


def _high_rank(x, y):
    return torch.softmax(x, dim=-1) + y.sum(dim=(1, 3), keepdim=True)


def _externs(x, w, b, index):
    h = F.linear(x, w, b)
    values, indices = torch.max(h, dim=1)
    ordered = torch.sort(h, dim=1, descending=True)[0]
    above = torch.searchsorted(ordered.flip(1), h, side="right")
    peaks = torch.zeros_like(h).scatter_reduce(1, index, h, reduce="amax")
    return values, indices, torch.cumsum(h, dim=1), ordered, above, peaks


def _stress_programs():
    long_named = [torch.randn(5, 3) for _ in range(14)]
    yield _many_inputs, long_named
    yield _high_rank, [torch.randn(2, 3, 5, 7, 11), torch.randn(2, 3, 5, 7, 11)]
    yield _externs, [torch.randn(9, 12), torch.randn(7, 12), torch.randn(7), torch.randint(0, 7, (9, 7))]


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("index", range(3))
def test_stress_wrappers_are_black_fixed_points(backend, index):
    fn, inputs = list(_stress_programs())[index]
    code = tirc.compile(fn, inputs, backend=backend).code
    assert code == _black(code)
    got, want = tirc.compile(fn, inputs, backend=backend)(*inputs), fn(*inputs)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=elementwise_programs())
def test_random_programs_are_black_fixed_points(backend, program):
    _description, fn, inputs = program
    code = tirc.compile(fn, inputs, backend=backend).code
    assert code == _black(code)
