"""The reference interpreter (`lowering.interpret`) on parsed dumps equals eager
PyTorch, and every loop-body op has an entry in the interpreter and in both
code generators."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import codegen.cpp
import codegen.triton
import lowering
import tirc
from ir_text import BODY_OPS, parse


class Gate(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features))

    def forward(self, x):
        return F.gelu(x * self.weight) + torch.sigmoid(x)


def _float_mix(x, y):
    z = torch.where(x > y, x - y, F.leaky_relu(y, 0.1))
    return torch.clamp(z, -0.5, 1.5) * F.elu(x), torch.tanh(y)


def _ints(a, b):
    return torch.div(a, b, rounding_mode="floor") - a % b + (a & 7), a < b


def _nonzero(shape, dtype):
    return torch.randint(1, 10, shape, dtype=dtype) * (torch.randint(0, 2, shape, dtype=dtype) * 2 - 1)


# name -> (callable or module factory, inputs factory)
PROGRAMS = {
    "gate_module": (lambda: Gate(37).eval(), lambda: [torch.randn(5, 37)]),
    "float_mix_broadcast": (lambda: _float_mix, lambda: [torch.randn(5, 37), torch.randn(37)]),
    "int_floordiv_remainder": (
        lambda: _ints,
        lambda: [torch.randint(-50, 50, (37,), dtype=torch.int32), _nonzero((37,), torch.int32)],
    ),
    "transposed_input": (lambda: (lambda x: x * 2 + torch.sigmoid(x)), lambda: [torch.randn(37, 5).t()]),
    "zero_dim_and_f64": (
        lambda: (lambda s, x: x * s + torch.exp(x)),
        lambda: [torch.randn((), dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)],
    ),
    "half_gelu": (lambda: (lambda x: F.gelu(x) * 2), lambda: [torch.randn(37).half()]),
    # Indirect indices that vary along a fused reduction (a roll, a gather),
    # and one per row kept for the epilogue (cross-entropy's target).
    "gathers_inside_reductions": (
        lambda: (
            lambda x, i: (
                torch.roll(x, 1, 1).sum(0),
                x[i].amax(0),
                x.index_select(0, i).sum(),
                F.cross_entropy(x, i[:37] % 5),
            )
        ),
        lambda: [torch.randn(37, 5), torch.randint(0, 37, (41,))],
    ),
}


def _inputs_by_name(module, program, inputs):
    """The tensors for a module's inputs (parameters first, then the arguments)."""
    named = dict(program.named_parameters()) if isinstance(program, torch.nn.Module) else {}
    args = iter(inputs)
    out = []
    for inp in module.inputs:
        name = inp.value.hint
        out.append(named[name].detach() if name in named else next(args))
    return out


@pytest.mark.parametrize("stage", ["capture", "lower", "fusion"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_interpreter_matches_eager(name, stage, tmp_path):
    make_program, make_inputs = PROGRAMS[name]
    torch.manual_seed(0)
    program = make_program()
    tirc.compile(program, make_inputs(), dump_after=stage, dump_dir=tmp_path)
    number = {"capture": "01", "lower": "02", "fusion": "04"}[stage]
    path = tmp_path / f"{number}-{stage}.tir"
    module = parse(path.read_text(), path.name)
    assert module.stage == stage
    torch.manual_seed(1)
    inputs = make_inputs()
    with torch.no_grad():
        expected = torch.utils._pytree.tree_leaves(program(*[x.clone() for x in inputs]))
        actual = lowering.interpret(module, _inputs_by_name(module, program, inputs))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        # the same ATen-level arithmetic: tight tolerances (f16: one rounding step)
        tol = 1e-3 if e.dtype == torch.float16 else 1e-6
        torch.testing.assert_close(a, e, rtol=tol, atol=tol)


def test_interpreter_reads_strided_inputs_through_their_layout(tmp_path):
    """A load index in a lower dump addresses the input's storage with its strides."""
    torch.manual_seed(0)
    x = torch.randn(37, 5).t()  # strides (1, 5)
    tirc.compile(lambda x: x + 1, [x], dump_after="lower", dump_dir=tmp_path)
    module = parse((tmp_path / "02-lower.tir").read_text(), "02-lower.tir")
    assert "strides = [1, 5]" in (tmp_path / "02-lower.tir").read_text()
    y = torch.randn(37, 5).t()
    (out,) = lowering.interpret(module, [y])
    torch.testing.assert_close(out, y + 1, rtol=0, atol=0)


def test_body_ops_have_an_interpreter_entry():
    missing = sorted(set(BODY_OPS) - set(lowering.INTERPRETED_OPS))
    assert not missing, f"no interpreter rule for {missing}"


def test_body_ops_have_a_cpp_entry():
    missing = sorted(set(BODY_OPS) - set(codegen.cpp.SUPPORTED_OPS))
    assert not missing, f"no C++ rule for {missing}"


def test_body_ops_have_a_triton_entry():
    missing = sorted(set(BODY_OPS) - set(codegen.triton.SUPPORTED_OPS))
    assert not missing, f"no Triton rule for {missing}"


def test_backend_tables_name_only_body_ops():
    for table in (lowering.INTERPRETED_OPS, codegen.cpp.SUPPORTED_OPS, codegen.triton.SUPPORTED_OPS):
        assert set(table) <= set(BODY_OPS), sorted(set(table) - set(BODY_OPS))
