"""Ops on f16 and bf16 tensors with arguments of other dtypes, on both
backends, bit for bit against eager. Eager rounds such an argument to the
half dtype before computing in float32 (`f16 0.1 == 0.1` is true, `i32 2049 *
f16 1.5` is 3072); only mul and div read a scalar at its own precision
(lowering.body.Operands). Values are chosen so that the two readings differ
on many elements: tolerances would hide one f16 step, so results must be equal.
"""

from __future__ import annotations

import pytest
import torch

import tirc

# A scalar that f16 and bf16 cannot hold exactly, and whose rounding shows.
S = 1.3330078125 + 2**-13


def _halves(dtype):
    return (torch.rand(129) * 4 + 0.5).to(dtype)


def _near_s(dtype):
    """Halves of which every other one is S rounded to the dtype."""
    x = _halves(dtype)
    x[::2] = torch.tensor(S).to(dtype)
    return x


def _ints():
    return torch.randint(2040, 2060, (129,), dtype=torch.int32)


# name: (program, inputs builder taking the half dtype)
CASES = {
    "add_scalar": (lambda x: x + S, lambda d: [_halves(d)]),
    "sub_scalar": (lambda x: x - S, lambda d: [_halves(d)]),
    "rsub_scalar": (lambda x: S - x, lambda d: [_halves(d)]),
    "mul_scalar": (lambda x: x * S, lambda d: [_halves(d)]),
    "div_scalar": (lambda x: x / S, lambda d: [_halves(d)]),
    "mul_0d_f32": (lambda x, s: x * s, lambda d: [_halves(d), torch.tensor(S)]),
    "add_0d_f32": (lambda x, s: x + s, lambda d: [_halves(d), torch.tensor(S)]),
    "pow_scalar": (lambda x: x**S, lambda d: [_halves(d)]),
    "remainder_scalar": (lambda x: x % S, lambda d: [_halves(d)]),
    "eq_scalar": (lambda x: x == S, lambda d: [_near_s(d)]),
    "ge_scalar": (lambda x: x >= S, lambda d: [_near_s(d)]),
    "ne_0d_f32": (lambda x, s: x != s, lambda d: [_near_s(d), torch.tensor(S)]),
    "where_scalar": (lambda x: torch.where(x > 2, x, S) * 1, lambda d: [_halves(d)]),
    "int_tensor_mul": (lambda i, x: i * x, lambda d: [_ints(), _halves(d)]),
    "int_tensor_add": (lambda i, x: i + x, lambda d: [_ints(), _halves(d)]),
    "int_tensor_eq": (lambda i, x: i == x, lambda d: [_ints(), _ints().to(d)]),
    "int_tensor_with_0d_half": (lambda i, s: i + s, lambda d: [_ints(), torch.tensor(0.5, dtype=d)]),
}


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_half_ops_with_other_dtypes_match_eager_exactly(name, dtype, backend):
    fn, make = CASES[name]
    compiled = tirc.compile(fn, make(dtype), backend=backend)
    inputs = make(dtype)
    got, want = compiled(*inputs), fn(*inputs)
    assert got.dtype == want.dtype
    assert torch.equal(got, want), (got, want)
