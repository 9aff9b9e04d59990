"""Elementwise programs through `tirc.compile` on both backends, against eager.

Each program is compiled on one set of example inputs and run on fresh random
inputs of the same shapes, dtypes and layouts; the result must equal eager
PyTorch within a tolerance that suits the dtype (exact for integers and bools).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tirc
from matching import assert_matches, check_against_eager

# The Triton interpreter warns about lanes that are masked off or hold NaN on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BACKENDS = ("cpp", "triton")


def ints(low, high, shape, dtype=torch.int64):
    return torch.randint(low, high, shape, dtype=dtype)


def nonzero_ints(shape, dtype):
    """Divisors of both signs, never zero."""
    mag = torch.randint(1, 10, shape, dtype=dtype)
    sign = torch.randint(0, 2, shape, dtype=dtype) * 2 - 1
    return mag * sign


def _floor_mod(a, b):
    return torch.div(a, b, rounding_mode="floor") * 3 + a % b - a * b


# name -> (function, make_inputs). make_inputs is called twice: for the example
# inputs given to tirc.compile and for the fresh inputs the result is checked on.
PROGRAMS = {
    "relu": (lambda x: torch.relu(x), lambda: [torch.randn(37, 129)]),
    "gelu_exact": (lambda x: F.gelu(x), lambda: [torch.randn(129) * 3]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda: [torch.randn(129) * 3]),
    "swish": (lambda x: x * torch.sigmoid(x), lambda: [torch.randn(37, 129) * 4]),
    "silu": (lambda x: F.silu(x), lambda: [torch.randn(129) * 4]),
    "hardtanh": (lambda x: F.hardtanh(x * 2, -0.75, 1.25), lambda: [torch.randn(129)]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda: [torch.randn(129)]),
    "elu": (lambda x: F.elu(x, alpha=1.5), lambda: [torch.randn(129) * 3]),
    "bias_row": (lambda x, b: x + b, lambda: [torch.randn(37, 129), torch.randn(129)]),
    "bias_col": (lambda x, b: x * 2 - b, lambda: [torch.randn(37, 129), torch.randn(37, 1)]),
    "bias_3d": (lambda x, b: torch.relu(x + b), lambda: [torch.randn(3, 37, 5), torch.randn(37, 1)]),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.75), lambda: [torch.randn(129)]),
    "clamp_min_only": (lambda x: torch.clamp(x, min=-0.25), lambda: [torch.randn(129)]),
    "clamp_tensor_bounds": (
        lambda x, lo, hi: torch.clamp(x, lo, hi),
        lambda: [torch.randn(37, 129), torch.randn(129) - 1, torch.randn(129) + 1],
    ),
    "where_compare": (
        lambda x, y: torch.where(x > y, x - y, torch.where(x <= -0.5, y * 2, x + 1)),
        lambda: [torch.randn(37, 129), torch.randn(129)],
    ),
    "where_eq_ne": (
        lambda a, b: torch.where((a == b) | (a != 3), a * 2, b),
        lambda: [ints(-4, 5, (129,)), ints(-4, 5, (129,))],
    ),
    "where_scalar_branch": (lambda x: torch.where(x >= 0, x, 0.0), lambda: [torch.randn(129)]),
    "int32_floordiv_remainder": (
        _floor_mod,
        lambda: [ints(-100, 100, (129,), torch.int32), nonzero_ints((129,), torch.int32)],
    ),
    "int64_floordiv_remainder": (
        _floor_mod,
        lambda: [ints(-(10**12), 10**12, (129,)), nonzero_ints((129,), torch.int64)],
    ),
    "int_scalar_floordiv_remainder": (
        lambda a: a // 7 + a % -4 + torch.div(a, -3, rounding_mode="floor"),
        lambda: [ints(-100, 100, (129,))],
    ),
    "int_trunc_div": (
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        lambda: [ints(-100, 100, (129,)), nonzero_ints((129,), torch.int64)],
    ),
    "float_trunc_and_floor_div": (
        lambda x, y: torch.div(x, y, rounding_mode="trunc") + torch.div(x, y, rounding_mode="floor"),
        lambda: [torch.randn(37, 5) * 10, torch.randn(37, 5)],
    ),
    "int_true_div": (
        lambda a, b: a / b,
        lambda: [ints(-100, 100, (129,)), nonzero_ints((129,), torch.int64)],
    ),
    "int_abs_neg_sign": (
        lambda a: torch.abs(a) * 2 - torch.sign(a) + (-a),
        lambda: [ints(-50, 50, (129,), torch.int32)],
    ),
    "int_clamp_max_min": (
        lambda a, b: torch.clamp(torch.maximum(a, b) - torch.minimum(a, b), max=40),
        lambda: [ints(-50, 50, (129,)), ints(-50, 50, (129,))],
    ),
    "int_square_pow": (lambda a: a**2 - a, lambda: [ints(-50, 50, (129,))]),
    "bitwise_int": (
        lambda a, b: (a & b) ^ (a | ~b),
        lambda: [ints(-1000, 1000, (129,)), ints(-1000, 1000, (129,))],
    ),
    "bool_logic": (
        lambda p, q: (p & ~q) | (p ^ q),
        lambda: [torch.randn(129) > 0, torch.randn(129) > 0],
    ),
    "logical_ops": (
        lambda x, y: torch.logical_or(
            torch.logical_and(x > 0, torch.logical_not(y > 0)), torch.logical_xor(x < y, y > 1)
        ),
        lambda: [torch.randn(129), torch.randn(129)],
    ),
    "bool_to_float": (lambda x: (x > 0).float() * x + (x < -1).to(torch.int64), lambda: [torch.randn(129)]),
    "promote_int_times_float_scalar": (
        lambda a: a * 1.5 - 0.25,
        lambda: [ints(-100, 100, (129,), torch.int32)],
    ),
    "promote_int_times_float_tensor": (
        lambda a, x: a * x,
        lambda: [ints(-100, 100, (37, 129), torch.int32), torch.randn(129)],
    ),
    "promote_int32_int64": (
        lambda a, b: a * b + 1,
        lambda: [ints(-1000, 1000, (129,), torch.int32), ints(-1000, 1000, (129,))],
    ),
    "promote_f16_f32": (lambda h, x: h * x + h, lambda: [torch.randn(129).half(), torch.randn(129)]),
    "to_dtype_casts": (
        lambda x: ((x * 10).to(torch.int32) + 1).to(torch.float64) + (x * 3).half().float(),
        lambda: [torch.randn(129)],
    ),
    "f64": (
        lambda x, y: torch.sigmoid(x) * x + torch.exp(y) - F.gelu(x),
        lambda: [torch.randn(129, dtype=torch.float64), torch.randn(129, dtype=torch.float64)],
    ),
    "f16": (lambda x: F.gelu(x) + torch.sigmoid(x) * 2, lambda: [torch.randn(37, 129).half()]),
    "bf16": (lambda x: F.gelu(x) + torch.sigmoid(x) * 2, lambda: [torch.randn(37, 129).bfloat16()]),
    "zero_dim": (lambda x: torch.relu(x) * 3 + 1, lambda: [torch.randn(())]),
    "zero_dim_broadcast": (lambda s, x: x * s + s, lambda: [torch.randn(()), torch.randn(37, 129)]),
    "noncontiguous_transposed": (lambda x: torch.relu(x) * 2 + 1, lambda: [torch.randn(129, 37).t()]),
    "noncontiguous_with_bias": (
        lambda x, b: F.gelu(x + b),
        lambda: [torch.randn(129, 37).t(), torch.randn(129)],
    ),
    "noncontiguous_mixed": (
        lambda x, y: x * y - y,
        lambda: [torch.randn(129, 37).t(), torch.randn(37, 129)],
    ),
    "noncontiguous_3d_permuted": (
        lambda x: torch.tanh(x) * x,
        lambda: [torch.randn(5, 37, 3).permute(2, 1, 0)],
    ),
    "sliced_storage_offset": (lambda x: x * x + 1, lambda: [torch.randn(40, 129)[3:]]),
    "expanded_stride0": (lambda x: x * 2 + 1, lambda: [torch.randn(37, 1).expand(37, 129)]),
}


def _run(backend, fn, make_inputs):
    torch.manual_seed(0)
    check_against_eager(tirc.compile(fn, make_inputs(), backend=backend), fn, make_inputs)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_program_matches_eager(backend, name):
    fn, make_inputs = PROGRAMS[name]
    _run(backend, fn, make_inputs)


@pytest.mark.parametrize("shape", [(1,), (37,), (129,), (1000,), (1, 1), (37, 129), (1000, 1)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_odd_sizes(backend, shape):
    _run(
        backend,
        lambda x, y: F.gelu(x) * torch.sigmoid(y) - y,
        lambda: [torch.randn(shape), torch.randn(shape)],
    )


def _cancellation(x, y):
    # Sums of products that cancel: a value rounded once instead of per op shows.
    return (x * y + x) * y - x / y - y * y


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_reduced_precision_rounds_after_every_op(backend, dtype):
    """f16/bf16 are computed in f32 and rounded after each op, as eager does;
    for + - * / of f16/bf16 values that gives the same bits as eager."""
    torch.manual_seed(0)
    x, y = torch.randn(1000).to(dtype), torch.randn(1000).to(dtype)
    compiled = tirc.compile(_cancellation, [x, y], backend=backend)
    torch.manual_seed(1)
    x, y = torch.randn(1000).to(dtype), torch.randn(1000).to(dtype)
    actual, expected = compiled(x, y), _cancellation(x, y)
    differ = (actual != expected).nonzero().flatten().tolist()
    assert not differ, (
        f"{len(differ)} of 1000 elements differ from eager, e.g. at {differ[0]}: "
        f"{actual[differ[0]].item()} vs {expected[differ[0]].item()}"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_special_values(backend):
    """NaN propagates through relu/maximum/clamp and infinities survive, as in eager."""

    def fn(x):
        return torch.relu(x), torch.clamp(x, -1.0, 1.0), torch.maximum(x, x * 0.5), torch.sigmoid(x)

    x = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 2.5, -2.5, 1e30, -1e30])
    compiled = tirc.compile(fn, [x], backend=backend)
    assert_matches(compiled(x), fn(x))
