"""Values at the edges of float and integer semantics, on both backends and
through the reference interpreter, against eager: Python's float floor
division and remainder (exact, from fmod), C's fmod with infinite divisors,
pow of -inf, atan2 at signed zeros and infinities, any() of halves, and
integer scalars outside the tensor's dtype (they wrap, as in eager), relu
and clamp of -0.0 and NaN. Zeros
must carry eager's sign; NaNs must sit where eager's do."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import lowering
import tirc
from ir_text import parse

INF, NAN = float("inf"), float("nan")


def _with_random(special: list[float], n: int = 129) -> torch.Tensor:
    """The special values, then random ones of both signs and several scales."""
    rest = (torch.rand(n - len(special)) - 0.5) * torch.logspace(-3, 9, n - len(special))
    return torch.cat([torch.tensor(special), rest])


def _dividends():
    return _with_random(
        [1.0, INF, 1.0, -7.5, 0.0, -0.0, 5.0, 3.0, 123456792.0, -2147483648.0, -0.5, 1.5, NAN]
    )


def _divisors():
    return _with_random([0.1, 2.0, -INF, 2.0, 3.0, 3.0, 0.0, -0.0, 2.5, 2.5, -INF, INF, 1.0])


def _signed():
    return _with_random([-0.0, 0.0, NAN, -NAN, INF, -INF, 1.0, -1.0, 2.5])


# name: (program, inputs builder)
CASES = {
    "floor_divide": (lambda a, b: a // b, lambda: [_dividends(), _divisors()]),
    "floor_divide_by_a_scalar": (lambda a: torch.div(a, 0.1, rounding_mode="floor"), lambda: [_dividends()]),
    "remainder": (lambda a, b: a % b, lambda: [_dividends(), _divisors()]),
    "remainder_by_a_scalar": (lambda a: a % 2.5, lambda: [_dividends()]),
    "fmod": (torch.fmod, lambda: [_dividends(), _divisors()]),
    "fmod_by_a_scalar": (lambda a: torch.fmod(a, 2.5), lambda: [_dividends()]),
    "pow_of_minus_inf": (
        torch.pow,
        lambda: [torch.full((6,), -INF), torch.tensor([0.5, -2.5, 2.5, 3.0, -3.0, 2.0])],
    ),
    # C's pow is 1 for a base of 1 to any power (NaN too), and for -1 to +-inf.
    "pow_of_ones": (
        torch.pow,
        lambda: [
            torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0, 2.0, 0.5, -1.0, NAN, -2.0]),
            torch.tensor([NAN, -INF, INF, INF, -INF, NAN, INF, 3.0, 0.0, -INF]),
        ],
    ),
    # Signs in bits: -0.0 and a negative NaN count as negative.
    "copysign_signbit": (
        lambda a, b: (torch.copysign(a, b), torch.signbit(b), torch.copysign(a, -0.0)),
        lambda: [_signed(), _signed().flip(0)],
    ),
    # A NaN operand gives the other one, NaN when both are.
    "fmax_fmin": (lambda a, b: (torch.fmax(a, b), torch.fmin(a, b)), lambda: [_signed(), _signed().flip(0)]),
    "atan2": (
        torch.atan2,
        lambda: [
            _with_random([-0.0, 0.0, -0.0, 0.0, INF, -INF, INF, -INF, 1.0, -1.0, 2.0, NAN, 1.0]),
            _with_random([-1.0, -1.0, 0.0, -0.0, INF, INF, -INF, -INF, 0.0, -INF, INF, 1.0, NAN]),
        ],
    ),
}


def _clamped():
    return [_with_random([-0.0, 0.0, -1.0, 1.0, 6.0, -INF, INF, NAN, 7.0, -7.0])]


CASES.update(
    {
        # Number bounds keep -0.0 and NaN as eager's clamp does.
        "relu": (torch.relu, _clamped),
        "relu6": (torch.nn.functional.relu6, _clamped),
        "clamp": (lambda x: torch.clamp(x, -1.0, 6.0), _clamped),
        "clamp_min": (lambda x: torch.clamp(x, min=0), _clamped),
        "hardtanh": (torch.nn.functional.hardtanh, _clamped),
    }
)
CASES.update(
    {
        "round": (
            torch.round,
            lambda: [_with_random([8388609.0, -8388609.0, 2.0**52 + 1, -0.4, -0.0, 2.5, 3.5, -2.5])],
        ),
        "sqrt_as_pow": (lambda x: (x**0.5, x**-0.5), lambda: [_with_random([-INF, -0.0, 0.0, 4.0, -4.0])]),
        # Eager multiplies for these exponents (x*x, x*x*x, 1/(x*x)) and
        # takes the reciprocal for -1; pow would be an ulp or more off.
        "small_integer_powers": (
            lambda x: (x**2, x**3, x**-2, x**-1, x.pow(2.0)),
            lambda: [_with_random([-0.0, 0.0, NAN, INF, -INF, 1e-30, -3e20, 1.0, -1.0])],
        ),
        "expm1_and_log1p_near_0": (
            lambda x: (torch.expm1(x * 1e-6), torch.log1p(x * 1e-6)),
            lambda: [_with_random([1e-1, -1e-1, 1e-4, 0.0, -0.0])],
        ),
    }
)
# Compared within 2e-6: atan2, expm1 and log1p are libm's in C++ (1 ulp
# from eager's vector ones) and formulas under the Triton interpreter
# (libdevice's on the GPU); rsqrt rounds twice in both backends.
APPROXIMATE = frozenset({"atan2", "expm1_and_log1p_near_0", "sqrt_as_pow"})
INT_CASES = {
    "u8_plus_300": (lambda u, i: u + 300, torch.uint8),
    "u8_minus_300": (lambda u, i: u - 300, torch.uint8),
    "u8_times_minus_1": (lambda u, i: u * -1, torch.uint8),
    "i8_gt_200": (lambda u, i: i > 200, torch.int8),
    "i8_floor_divide_200": (lambda u, i: i // 200, torch.int8),
    "i8_remainder_200": (lambda u, i: i % 200, torch.int8),
}


def _assert_same(got: torch.Tensor, want: torch.Tensor, exact: bool):
    assert got.dtype == want.dtype and got.shape == want.shape
    if not want.is_floating_point():
        assert torch.equal(got, want), (got, want)
        return
    torch.testing.assert_close(
        got, want, rtol=0 if exact else 2e-6, atol=0 if exact else 1e-6, equal_nan=True
    )
    zeros = want == 0
    assert torch.equal(got[zeros].signbit(), want[zeros].signbit()), "signs of zeros differ"


def _check(fn, inputs, backend, tmp_path, exact=True):
    compiled = tirc.compile(fn, inputs, backend=backend, dump_after="lower", dump_dir=tmp_path)
    want = fn(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = compiled(*inputs)
    module = parse((tmp_path / "02-lower.tir").read_text(), "02-lower.tir")
    assert not lowering.fallback_ops(module), "an ATen fallback would compare eager with itself"
    interpreted = lowering.interpret(module, inputs)
    for g, r, w in zip(got if isinstance(got, tuple) else (got,), interpreted, want, strict=True):
        _assert_same(g, w, exact)
        _assert_same(r, w, exact)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the Triton interpreter's NaN lanes
@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_float_edges_match_eager(name, dtype, backend, tmp_path):
    fn, make = CASES[name]
    _check(fn, [x.to(dtype) for x in make()], backend, tmp_path, name not in APPROXIMATE)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("name", sorted(INT_CASES))
def test_int_scalars_outside_the_dtype_wrap_as_in_eager(name, backend, tmp_path):
    fn, _ = INT_CASES[name]
    u = torch.randint(0, 256, (37,), dtype=torch.uint8)
    i = torch.randint(-128, 128, (37,), dtype=torch.int8)
    _check(fn, [u, i], backend, tmp_path)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_any_and_all_of_halves(dtype, backend, tmp_path):
    x = torch.randn(7, 37).to(dtype)
    x[0] = 0
    x[1, :-1] = 0
    x[2, 3] = NAN
    _check(lambda x: (x.any(1), x.all(1), x.any()), [x], backend, tmp_path)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_squares_and_reciprocals_of_halves_round_once(dtype, backend, tmp_path):
    """A half's square is exact in float32, so x*x rounds once, as eager's."""
    x = _with_random([-0.0, 0.0, NAN, INF, -INF, 300.0, -1e-3, 1.0]).to(dtype)
    _check(lambda x: (x**2, x**-1), [x], backend, tmp_path)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("n", [47, 129, 1000])
def test_narrowing_round_trip_rounds_every_element(n, backend, tmp_path):
    """double -> float -> double rounds each element to float (g++ 12.2's
    SLP vectorizer once dropped the conversions of a loop's epilogue)."""
    x = torch.rand(n, dtype=torch.float64) + 0.1
    _check(lambda x: x.float().double() * 1, [x], backend, tmp_path)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_tanh_near_0_and_signed_zeros(backend):
    """tanh within 2e-7 absolute (Triton's f32 tanh is 2 sigmoid(2x) - 1, for
    speed: docs/gpu.md), and -0.0 kept."""
    x = torch.cat([torch.tensor([1e-7, -1e-7, 1e-3, 0.3, -0.0, 0.0, 9.0, -9.0]), torch.randn(120)])
    got, want = tirc.compile(torch.tanh, [x], backend=backend)(x), torch.tanh(x)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=2e-7)
    assert torch.equal(got[want == 0].signbit(), want[want == 0].signbit())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_math_near_0_and_integer_powers_keep_their_relative_accuracy(backend):
    # The Triton interpreter's formulas (libdevice's functions on the GPU)
    # run in float64: in float32, sinh(1.3e-7) was 40% off, 3.0 ** 15 12 ulp.
    x = torch.tensor([1.109e-05, 1.278e-07, 1.2e-4, -3e-6, 0.5, -0.9, 3.0, 7.0])

    def fn(x):
        return torch.expm1(x), torch.log1p(x), torch.sinh(x), torch.atan(x), x**15, torch.pow(10.0, x)

    compiled = tirc.compile(fn, [x], backend=backend)
    for got, want in zip(compiled(x), fn(x), strict=True):
        torch.testing.assert_close(got, want, rtol=5e-7, atol=0)


def _out_of_range() -> torch.Tensor:
    """Floats inside and outside every integer dtype's range, NaN and
    infinities, and random ones up to 1e20 of both signs."""
    special = [300.0, -1.5, -129.7, 65537.9, -40000.2, 2.0**31, -(2.0**31), 3e9, -3e9, 1e10]
    special += [2.0**63, -(2.0**63), 1e19, -1e19, INF, -INF, NAN, 0.5, -0.0]
    return _with_random(special, 129) * torch.logspace(0, 11, 129).flip(0).clamp(max=1e11) ** (
        torch.arange(129) >= len(special)
    )


INT_TARGETS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's casts of NaN under the interpreter
@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=["f32", "f64", "f16", "bf16"]
)
def test_float_to_int_conversions_out_of_range_match_eager(dtype, backend, tmp_path):
    """Out of range and NaN, a float converts as eager's CPU kernels do
    (through int32 or int64, the lowest value for what does not fit, then
    narrowed): undefined in C++, where g++ folded a constant -1.5 to uint8
    as 0 (eager: 255). Computed values and constants both."""
    x = _out_of_range().to(dtype)
    values = (-1.5, 300.5, -40000.5, INF, NAN) + (() if dtype == torch.float16 else (3e9,))

    def fn(x):
        computed = [x.to(t) for t in INT_TARGETS]
        constants = [torch.full((5,), v, dtype=dtype).to(t) for t in INT_TARGETS for v in values]
        return (*computed, *constants)

    _check(fn, [x], backend, tmp_path)


def _largest(x: torch.Tensor) -> torch.Tensor:
    """The dtype's maximum, a constant in the graph: g++ exploits undefined
    overflow where it knows the values."""
    return torch.full(x.shape, torch.iinfo(x.dtype).max, dtype=x.dtype)


WRAPPING = {
    "add": lambda x: x + (_largest(x) + torch.arange(x.shape[0], dtype=x.dtype)),
    "sub": lambda x: (-_largest(x) - 2) - x.abs(),
    "mul": lambda x: (x * _largest(x), _largest(x) * 3 + x),
    "neg_abs_of_lowest": lambda x: (-(-_largest(x) - 1) + x, (-_largest(x) - 1).abs() + x),
    "cumsum": lambda x: (
        torch.cumsum(x + _largest(x), 0, dtype=x.dtype),
        torch.cumsum(_largest(x), 0, dtype=x.dtype),
    ),
    "sum": lambda x: ((x * _largest(x)).sum(0, dtype=x.dtype), _largest(x).sum(0, dtype=x.dtype) + x),
}


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("name", sorted(WRAPPING))
def test_signed_overflow_wraps_as_in_eager(name, dtype, backend, tmp_path):
    """Signed integers wrap around past their range, as in eager (undefined
    in C++, where g++ pinned an int32 sum of constants to INT32_MAX)."""
    info = torch.iinfo(dtype)
    x = torch.randint(-1000, 1000, (37,), dtype=dtype)
    x[:3] = torch.tensor([info.max, info.min, -1])
    _check(WRAPPING[name], [x], backend, tmp_path)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("shape", [(1000, 37), (37, 129)], ids=["1000x37", "37x129"])
def test_sums_and_products_of_bools_are_bools(shape, backend, tmp_path):
    """A sum of bools kept as bool is true where any value is (g++ added a
    bool accumulator's bytes in a simd reduction and stored trues of 2)."""
    x = torch.randn(*shape)

    def fn(x):
        b = x > 1.5
        return (
            b.sum(0, dtype=torch.bool),
            b.sum(1, dtype=torch.bool),
            b.sum(dtype=torch.bool),
            b.prod(1, dtype=torch.bool),
            b.amax(1),
            b.amin(0),
        )

    _check(fn, [x], backend, tmp_path)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_division_by_a_row_value_is_exact(backend, tmp_path):
    """A division stays a division, rounded once: x / max is exactly 1 at
    the maximum and (41 k) / 41 exactly k, so floor() agrees with eager (a
    multiplication by the per-row reciprocal gave 0.99999994, floor 0)."""
    x = torch.rand(64, 37) + 0.1
    k = torch.randint(1, 300, (64, 37)).float() * 41.0

    def fn(x, k):
        return torch.floor(x / x.amax(dim=1, keepdim=True)), torch.floor(
            (k - k.amin(dim=1, keepdim=True)) / 41.0
        )

    _check(fn, [x, k], backend, tmp_path)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_softmax_on_the_cpu_multiplies_by_the_sums_reciprocal(dtype, backend, tmp_path):
    """ATen's CPU softmax multiplies by the sum's reciprocal; the CPU
    program's IR says so, and the kernels round as it does."""
    x = (torch.randn(37, 129) * 4).to(dtype)

    def fn(x):
        return torch.softmax(x, -1)

    compiled = tirc.compile(fn, [x], backend=backend, dump_after="lower", dump_dir=tmp_path)
    lowered = (tmp_path / "02-lower.tir").read_text()
    assert "reciprocal(" in lowered and "truediv(" not in lowered
    tolerance = 2e-6 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(compiled(x), fn(x), rtol=tolerance, atol=1e-7)


# Pooling configurations: the C++ backend takes all, the Triton interpreter
# (40 s for one at the C++ size) the first, on a smaller input.
POOLS = [(3, 1, 1, 1, False), (3, 2, 1, 2, True), (4, 3, 2, 1, True), (2, 1, 1, 2, False)]


@pytest.mark.parametrize(
    "backend, pool", [("cpp", p) for p in POOLS] + [("triton", POOLS[0])], ids=lambda v: str(v)
)
def test_max_pool_indices_where_the_window_is_minus_inf(backend, pool, tmp_path):
    """A window whose in-bounds values are all -inf gives eager's index, its
    first in-bounds element (-inf padding tied and came first: index -6);
    ties (no signed zeros: which of two equal zeros max keeps is not
    eager's order) and a NaN keep eager's choice too."""
    kernel, stride, padding, dilation, ceil_mode = pool
    x = torch.randn(2, 2, 9, 11) if backend == "cpp" else torch.randn(2, 2, 6, 7)
    x[0, 0, :3, :4] = -INF
    x[0, 1, :, :2] = -INF
    x[1, 1] = x[1, 1].round() + 0.0
    x[1, 0, 5, 5] = NAN

    def fn(x):
        return torch.nn.functional.max_pool2d(
            x, kernel, stride, padding, dilation, ceil_mode, return_indices=True
        )

    _check(fn, [x], backend, tmp_path)


def test_an_integer_to_a_negative_power_raises_as_in_eager():
    """Eager refuses an integer tensor to a negative integer power; the
    compiled program raises the same error (the op runs as an ATen call)."""
    a = torch.randint(2, 9, (5,))
    compiled = tirc.compile(lambda a: a**-2, [a])
    with pytest.raises(RuntimeError, match="negative integer powers"):
        compiled(a)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_constant_rows_normalize_to_exact_zeros(backend, tmp_path):
    """A row of one repeated value has mean that value and variance 0, as
    eager's Welford gets them: layer norm gives exact zeros, std exact 0
    (sum / n was an ulp off for 3.7 x 29, and rsqrt(eps) scaled it to 4e-5)."""
    x = torch.randn(37, 29)
    x[:32] = (torch.randn(32) * torch.logspace(-2, 4, 32))[:, None]

    def fn(x):
        return F.layer_norm(x, (29,)), x.std(1), torch.var_mean(x, 1, correction=0)

    compiled = tirc.compile(fn, [x], backend=backend)
    got, want = compiled(x), fn(x)
    assert torch.equal(got[0][:32], torch.zeros(32, 29)) and torch.equal(got[1][:32], torch.zeros(32))
    assert torch.equal(got[2][1][:32], x[:32, 0])
    torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got[1], want[1])


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_variance_far_from_zero_and_after_an_outlier(backend, dtype):
    """The variance's one pass (deviations from the row's first element, in
    float64; float64 data: from a first mean) keeps eager's accuracy for data
    whose mean is 1e5 of its standard deviation, and for rows whose first
    element is an outlier (a zero pad before values near 1000); raw moments
    (no center) lost 3e-5 of the first's variance."""
    torch.manual_seed(3)
    far = torch.randn(5, 1000, dtype=torch.float64) + 1e5
    padded = torch.randn(5, 1000, dtype=torch.float64) + 1000
    padded[:, :3] = 0
    for x in (far.to(dtype), padded.to(dtype)):

        def fn(x):
            return torch.var_mean(x, 1), x.std()

        compiled = tirc.compile(fn, [x], backend=backend)
        got = compiled(x)
        exact = fn(x.double())
        want = fn(x)
        for g, w, e in zip((*got[0], got[1]), (*want[0], want[1]), (*exact[0], exact[1])):
            # At most twice eager's error against the float64 result, plus the
            # dtype's last bit (float64, its own reference: a first mean a few
            # ulps off at 1e5 leaves 1e-12, far inside torch's 1e-7).
            floor = {torch.float32: 1e-7, torch.bfloat16: 8e-3, torch.float64: 1e-11}[dtype]
            limit = 2 * (w.double() - e).abs() + floor * e.abs()
            assert ((g.double() - e).abs() <= limit).all(), (g, e)


def test_a_norm_of_a_returned_sum_is_one_kernel():
    """The variance reads each row's first element of `x + r`, which is
    also returned: the scheduler recomputes `x + r` for that one read, so
    the sum still fuses into the norm's kernel (scheduler/inline.py)."""

    def fn(x, r, w, b):
        h = x + r
        return h, F.layer_norm(h, (h.shape[-1],), w, b)

    torch.manual_seed(5)
    inputs = [torch.randn(37, 129), torch.randn(37, 129), torch.randn(129), torch.randn(129)]
    for backend in ("cpp", "triton"):
        compiled = tirc.compile(fn, inputs, backend=backend)
        (kernel,) = compiled.compiled.module.kernels
        assert kernel.nests is None, "one loop nest, not the sum's loops and then the norm's"
        for g, w in zip(compiled(*inputs), fn(*inputs)):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
