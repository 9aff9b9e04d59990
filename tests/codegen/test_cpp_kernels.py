"""The C++ backend's loop shapes (codegen/cpp.py) against eager, at odd sizes.

Each case is chosen to reach one shape of generated loop: pointwise with the
innermost loop split into chunks across threads (and a ragged last chunk),
rows (reductions along the contiguous dimension, simd reductions, values
kept between passes), lanes (reductions along a strided dimension, with a
ragged last block), scans, indirect indexing; each in float32 and in the
reduced-precision types computed in float32. The assertions on the source
check that each case really reached its shape.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tirc
from codegen import cpp
from matching import TOL


def assert_close(actual, expected):
    """As matching.assert_matches, with float32 at 1e-4: sums of 1000 terms
    in another order differ from eager by more than the pointwise 1e-5."""
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e)
        return
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    rtol, atol = (1e-4, 1e-4) if expected.dtype == torch.float32 else TOL.get(expected.dtype, (0.0, 0.0))
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def _with_nans(x):
    x = x.clone()
    x.view(-1)[:: max(1, x.numel() // 7)] = float("nan")
    return x


def _cross_entropy(x, t):
    return F.cross_entropy(x, t)


def _softmax_then_scale(x, w):
    return torch.softmax(x, -1) * w


def _softmax_to_bf16(x):
    return torch.softmax(x, -1).to(torch.bfloat16)


def _layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def _rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _column_stats(x):
    return x.sum(0), x.amax(0), x.amin(0), x.argmax(0), x.mean(0)


def _row_stats(x):
    return x.sum(-1), x.amax(-1), x.amin(-1), x.argmax(-1), x.argmin(-1), x.prod(-1)


def _bool_reductions(x):
    return (x > 0.5).any(-1), (x > -2).all(-1), (x > 0.5).any(0), (x > -2).all(0)


def _gelu_tanh(x, b):
    return F.gelu(x + b, approximate="tanh"), torch.sigmoid(x) * torch.log1p(x.abs()), torch.erf(x)


def _maximum(x, y):
    return torch.maximum(x, y), torch.minimum(x, y), torch.relu(x)


def _middle_sum(x):
    return x.sum(1), torch.softmax(x, 1)


def _gather_rows(table, index):
    return F.embedding(index, table) * 2


def _cumsum(x):
    return torch.cumsum(x, -1), torch.cumsum(x, 0)


def _int_reductions(x):
    return x.sum(-1), x.amax(0), x.amin(-1)


def _sums(x):
    return x.sum(-1), (x * 0.01 + 1).prod(-1), (x * x).mean(-1)


def _sum_and_mean(x):
    # No bf16 prod: eager's rounds more than tirc's float32 product (0.19 off
    # the float64 one at 258 terms, tirc's 0.08), whatever the loop shape.
    return x.sum(-1), (x * x).mean(-1)


def _two_dim_sums(x):
    return x.sum((1, 2)), (x * x).sum((1, 2))


def _whole(x):
    return x.sum(), (x * x).mean(), x.amax(), x.amin(), (x > 3).any(), (x > -5).all(), x.var()


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


# name -> (program, inputs builder, a string the C++ source must contain)
CASES = {
    "chunked pointwise 37000": (_gelu_tanh, lambda: [randn(37000), randn(37000)], "_chunk"),
    "chunked pointwise bf16": (
        _gelu_tanh,
        lambda: [randn(40001, dtype=torch.bfloat16), randn(40001, dtype=torch.bfloat16)],
        "tirc_from_bf16",
    ),
    "maximum with NaN": (_maximum, lambda: [_with_nans(randn(129, 37)), randn(129, 37)], "tirc_maximum"),
    "rows 37x1000": (_row_stats, lambda: [randn(37, 1000)], "omp simd reduction(+:"),
    "rows with NaN": (_row_stats, lambda: [_with_nans(randn(129, 37))], "_nan"),
    # Sum/prod passes of BLOCK (16) or more accumulate into lane arrays (a
    # partial last block when the row is not a multiple of 16); shorter
    # ones into an omp simd reduction.
    "sums 37x1001 with NaN": (_sums, lambda: [_with_nans(randn(37, 1001))], "lanes_acc_"),
    "sums 37x9": (_sums, lambda: [randn(37, 9)], "reduction(+:"),
    "sums bf16 37x258": (_sum_and_mean, lambda: [randn(37, 258, dtype=torch.bfloat16)], "tirc_from_bf16"),
    "sums f64 37x129": (_sums, lambda: [randn(37, 129, dtype=torch.float64)], "double acc_"),
    "sums over two dims": (_two_dim_sums, lambda: [randn(37, 5, 129)], "r1_block"),
    "rows int64 37x1001": (_int_reductions, lambda: [torch.randint(-50, 50, (37, 1001))], "reduction(+:"),
    # softmax's exp is kept for the last pass in the output's row when the
    # output holds its dtype, else in a row buffer; the IR's reciprocal of
    # the sum (ATen's CPU softmax multiplies by it) is computed once per row.
    "softmax kept in its output 129x1000": (
        _softmax_then_scale,
        lambda: [randn(129, 1000), randn(1000)],
        "= (1 / t",
    ),
    "softmax kept row 129x1000": (_softmax_to_bf16, lambda: [randn(129, 1000)], "row_"),
    "softmax f16": (_softmax_then_scale, lambda: [randn(37, 129, dtype=torch.float16)] * 2, "_Float16"),
    "softmax bf16": (_softmax_then_scale, lambda: [randn(37, 129, dtype=torch.bfloat16)] * 2, "tirc_to_bf16"),
    "layer norm 129x37": (_layer_norm, lambda: [randn(129, 37), randn(37), randn(37)], "lanes_acc_"),
    # Enough work to run in parallel: rows in chunks of 1000 // 32.
    "rms norm 1000x129": (_rms_norm, lambda: [randn(1000, 129), randn(129)], "schedule(dynamic, 31)"),
    "lanes 1000x129": (_column_stats, lambda: [randn(1000, 129)], "lanes"),
    "lanes with NaN": (_column_stats, lambda: [_with_nans(randn(37, 129))], "lanes"),
    "lanes bool": (_bool_reductions, lambda: [randn(129, 37)], "lanes"),
    "lanes middle dim": (_middle_sum, lambda: [randn(3, 129, 37)], "lanes"),
    "cross-entropy (indirect)": (
        _cross_entropy,
        lambda: [randn(129, 1000), torch.randint(0, 1000, (129,))],
        "ind0",
    ),
    "embedding (indirect)": (_gather_rows, lambda: [randn(1000, 37), torch.randint(0, 1000, (129,))], "ind0"),
    "scan": (_cumsum, lambda: [randn(37, 129)], "acc_"),
    # Few long rows: each pass in chunks across the threads, into partials
    # combined as a tree (cpp_rows._split).
    "split whole tensor": (_whole, lambda: [randn(333, 1001)], "part_acc_"),
    "split whole tensor with NaN": (_whole, lambda: [_with_nans(randn(333, 1001))], "part_acc_"),
    "split long rows": (_sums, lambda: [randn(3, 40001)], "r0_full"),
    "split long rows bf16": (_sum_and_mean, lambda: [randn(4, 33001, dtype=torch.bfloat16)], "part_acc_"),
    "split softmax of a long row": (
        _softmax_then_scale,
        lambda: [randn(2, 50001), randn(50001)],
        "omp parallel for schedule(dynamic",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loop_shape_matches_eager(name):
    program, make_inputs, marker = CASES[name]
    torch.manual_seed(sorted(CASES).index(name))
    compiled = tirc.compile(program, make_inputs())
    source = compiled.code
    assert marker in source, f"the generated C++ does not use {marker!r}"
    for _ in range(2):  # fresh inputs, not the example ones
        inputs = make_inputs()
        assert_close(compiled(*inputs), program(*inputs))


def test_a_long_float32_scan_is_each_prefix_rounded_once():
    """A float32 cumsum carries its running value in double, as eager's CPU
    kernel does: over 6001 elements every prefix is the exact sum rounded
    once (a float carry drifted by 7e-5, where prefixes cross zero)."""
    torch.manual_seed(5)
    x = randn(3, 6001)
    compiled = tirc.compile(lambda x: torch.cumsum(x, -1), [x])
    x = randn(3, 6001)
    exact = torch.cumsum(x.double(), -1).float()
    assert torch.equal(compiled(x), exact)
    torch.testing.assert_close(compiled(x), torch.cumsum(x, -1), rtol=1e-6, atol=1e-6)


def test_kept_value_lives_in_the_output_row_that_overwrites_it():
    """softmax's exp is written to the output's row and read back from it,
    not kept on the stack, when the output holds float32; two outputs that
    both reload it: only the one stored last in the pass could hold it, and
    results still match."""
    torch.manual_seed(3)
    x = randn(37, 1000)
    compiled = tirc.compile(lambda x: torch.softmax(x, -1), [x])
    assert "row_" not in compiled.code
    assert re.search(r"p_buf\d+\[1000\*i0 \+ r0\] = t\d+;\n\s+acc_", compiled.code)
    assert_close(compiled(x), torch.softmax(x, -1))

    def two(x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        s = e.sum(-1, keepdim=True)
        return e / s, e * s

    compiled = tirc.compile(two, [x])
    for _ in range(2):
        x = randn(37, 1000)
        assert_close(compiled(x), two(x))


def _add_mad_norm(x, r, w, b):
    """h over its mean absolute deviation: the mean, the deviations' sum
    (arithmetic on the row), then the output."""
    h = x + r
    d = h - h.mean(-1, keepdim=True)
    return h, d / d.abs().mean(-1, keepdim=True) * w + b


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_a_later_pass_prefetches_the_next_rows_inputs(dtype):
    """The pass over the deviations of a mean-absolute-deviation norm
    (arithmetic on a row in cache) prefetches the next row of each input the first pass read, once per
    cache line (float64: two per block of 16), the row index held at the
    last row; the weight, shared by the rows, is not prefetched. Rows that
    are collapsed loops take the innermost as the next; odd sizes and the
    last row still match eager."""
    torch.manual_seed(11)

    def make(shape):
        cols = shape[-1]
        return [
            randn(*shape).to(dtype),
            randn(*shape).to(dtype),
            randn(cols).to(dtype),
            randn(cols).to(dtype),
        ]

    cols = 1000 if dtype != torch.float64 else 500  # both inputs' rows in 8 KiB
    for shape, row in (((37, cols), "i0"), ((3, 5, 129), "i1")):
        compiled = tirc.compile(_add_mad_norm, make(shape))
        code = compiled.code
        prefetches = re.findall(r"__builtin_prefetch\(&p_(\w+)\[([^\]]*)\], 0, 3\);", code)
        per_line = 2 if dtype == torch.float64 else 1
        assert len(prefetches) == 2 * per_line, code
        assert {source for source, _ in prefetches} == {"x", "r"}
        assert all(f"{row}_next" in index and "r0_block" in index for _, index in prefetches)
        size = shape[-2]
        assert f"const int64_t {row}_next = {row} + 1 < {size} ? {row} + 1 : {row};" in code
        for _ in range(2):
            inputs = make(shape)
            assert_close(compiled(*inputs), _add_mad_norm(*inputs))


def test_passes_that_store_and_rows_past_8_kib_do_not_prefetch():
    """A pass that writes its output (rms norm's second, softmax's exp kept
    in the output row) does not prefetch: there it ran no faster, or
    slower. Nor do rows of more than 8 KiB (5-10% slower)."""
    x = randn(64, 1000)
    w = randn(1000)
    rms = tirc.compile(lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, [x, w])
    softmax = tirc.compile(lambda x: torch.softmax(x, -1), [x])
    assert "__builtin_prefetch" not in rms.code + softmax.code
    wide = tirc.compile(_layer_norm, [randn(16, 2049), randn(2049), randn(2049)])
    assert "r0_block" in wide.code and "__builtin_prefetch" not in wide.code


def test_values_of_a_row_are_const_in_split_passes():
    """A few long rows run each pass in chunks across the threads; the
    row's values (the exponent of pow, the scale) are shared with those
    threads and are `const`, so g++ keeps them in registers: a non-const
    exponent made rms norm 8x262144's vectorized powf (of x.pow(2), before
    squares became x * x) 14x slower."""
    torch.manual_seed(4)

    def rms(x, w):  # a power that stays a powf call (2 is x * x)
        return x * torch.rsqrt(x.abs().pow(2.5).mean(-1, keepdim=True) + 1e-6) * w

    x, w = randn(2, 40001), randn(40001)
    compiled = tirc.compile(rms, [x, w])
    code = compiled.code
    assert "part_acc_" in code  # the split shape
    assert re.search(r"const float t\d+ = float\(2\.5\);", code)
    assert not re.search(r"^\s*(float|double|int64_t) t\d+ =", code, re.M)
    x, w = randn(2, 40001), randn(40001)
    assert_close(compiled(x, w), rms(x, w))


@pytest.mark.parametrize(
    "shape, dtype, place",
    [
        ((5, 40001), torch.float32, "output"),  # few long rows: split passes
        ((37, 20000), torch.float32, "output"),  # rows past the stack's budget
        ((37, 20000), torch.bfloat16, "stack"),  # float32 exps: 80 KB a row
        ((37, 70001), torch.bfloat16, "again"),  # 280 KB a row and thread: computed again
        ((3, 70001), torch.bfloat16, "heap"),  # few long rows: one buffer for the rows in turn
    ],
)
def test_long_rows_keep_their_exps_where_they_fit(shape, dtype, place):
    """softmax keeps each exp for its last pass: in the output row at any
    length, on the stack up to 256 KiB a row, else computes it again; a
    split kernel (few long rows) keeps them in one buffer on the heap."""
    torch.manual_seed(7)
    x = randn(*shape).to(dtype)
    compiled = tirc.compile(lambda x: torch.softmax(x, -1), [x])
    code = compiled.code
    assert code.count("tirc_expf(") - code.count("float tirc_expf(") == (2 if place == "again" else 1)
    assert ("row_" in code) == (place in ("stack", "heap"))
    assert code.count("__builtin_malloc(") == code.count("__builtin_free(") == (place == "heap")
    for _ in range(2):
        x = randn(*shape).to(dtype)
        assert_close(compiled(x), torch.softmax(x, -1))


def _normalize(x):
    return x / x.sum(-1, keepdim=True)


@pytest.mark.parametrize("program", [_normalize, lambda x: torch.softmax(x, -1)], ids=["x/sum", "softmax"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_division_by_a_row_value_matches_eager_at_the_edges(program, dtype):
    """Rows whose sums are subnormal, huge, zero, inf or NaN: a division
    stays a division (1 / a subnormal sum would be inf), and softmax's
    reciprocal of its sum (at least 1) matches eager's there too."""
    torch.manual_seed(7)
    x = torch.rand(7, 37, dtype=dtype) + 0.5
    info = torch.finfo(dtype)
    x[1] *= info.tiny / 64 / 37
    x[2] *= info.max / 80
    x[3] = 0.0
    x[4, 3] = float("inf")
    x[5, 5] = float("nan")
    compiled = tirc.compile(program, [x])
    torch.testing.assert_close(compiled(x), program(x), equal_nan=True)


def test_math_functions_are_declared_vectorizable():
    """Every libm function kernels call has a simd declaration in the prelude."""
    for name in ("expf", "logf", "erff", "tanhf", "exp(double", "powf"):
        assert name in cpp.PRELUDE
    assert "TIRC_SIMD" in cpp.PRELUDE and "<cmath>" not in cpp.PRELUDE


def test_inlined_exp_is_within_one_ulp():
    """The prelude's tirc_expf (exp for floats, and sigmoid through it)
    against float64 exp: within 1.01 ulp over [-110, 90] and in the
    subnormal range, exact on 0, +-inf, NaN, overflow and underflow."""
    gen = torch.Generator().manual_seed(5)
    spread = torch.rand(200_003, generator=gen, dtype=torch.float64) * 200 - 110
    subnormal = torch.rand(10_007, generator=gen, dtype=torch.float64) * 17 - 104
    edges = [0.0, -0.0, 1.0, -1.0, 1e-30, 88.72, 88.73, 89.0, 100.0, -87.3, -103.9, -104.0, -200.0]
    specials = torch.tensor(edges + [float("inf"), float("-inf"), float("nan")], dtype=torch.float64)
    x = torch.cat([spread, subnormal, specials]).float()
    compiled = tirc.compile(torch.exp, [x])
    assert "tirc_expf(" in compiled.code
    got = compiled(x).double()
    exact = torch.exp(x.double())
    rounded = exact.float()
    finite = torch.isfinite(rounded) & (rounded != 0)
    ulp = torch.nextafter(rounded.abs(), torch.tensor(float("inf"))).double() - rounded.abs().double()
    assert ((got - exact).abs()[finite] / ulp[finite]).max() <= 1.01
    torch.testing.assert_close(got[~finite], rounded[~finite].double(), rtol=0, atol=0, equal_nan=True)
    sigmoid = tirc.compile(torch.sigmoid, [x])
    assert "tirc_expf(" in sigmoid.code
    torch.testing.assert_close(sigmoid(x), torch.sigmoid(x), equal_nan=True)


def test_inlined_erf_is_within_one_and_a_half_ulp():
    """The prelude's tirc_erff (erf for floats, and gelu through it) against
    float64 erf: within 1.4 ulp over [-4.5, 4.5] and for tiny values, exact
    on 0, -0, +-inf, NaN and where erf rounds to +-1."""
    gen = torch.Generator().manual_seed(6)
    spread = torch.rand(400_003, generator=gen, dtype=torch.float64) * 9 - 4.5
    tiny = torch.pow(10.0, -45 * torch.rand(10_007, generator=gen, dtype=torch.float64))
    edges = [0.0, -0.0, 1.0, -1.0, 0.99999994, 3.92, 3.9200001, 10.0, -1e30]
    specials = torch.tensor(edges + [float("inf"), float("-inf"), float("nan")], dtype=torch.float64)
    x = torch.cat([spread, tiny, -tiny, specials]).float()
    compiled = tirc.compile(torch.erf, [x])
    assert "tirc_erff(" in compiled.code
    got = compiled(x).double()
    exact = torch.tensor([math.erf(v) for v in x.double().tolist()], dtype=torch.float64)
    rounded = exact.float()
    finite = torch.isfinite(rounded) & (rounded != 0) & (rounded.abs() != 1)
    ulp = torch.nextafter(rounded.abs(), torch.tensor(float("inf"))).double() - rounded.abs().double()
    assert ((got - exact).abs()[finite] / ulp[finite]).max() <= 1.4
    torch.testing.assert_close(got[~finite], rounded[~finite].double(), rtol=0, atol=0, equal_nan=True)
    assert torch.signbit(got[len(x) - len(specials) + 1]).item()  # erf(-0) is -0
    x = x[torch.isfinite(x)]  # eager's gelu(inf) is NaN (tirc's: inf)
    gelu = tirc.compile(torch.nn.functional.gelu, [x])
    torch.testing.assert_close(gelu(x), torch.nn.functional.gelu(x), equal_nan=True)


@pytest.mark.parametrize("shape", [(1000, 1000), (149797,)])
def test_whole_tensor_sums_are_as_accurate_as_eager(shape):
    """A sum or mean over every element: no farther from the float64 result
    than a few times eager's error (eager sums in a cascade). One
    accumulator per lane over the whole tensor was 470x eager's error on
    the mean of x*x at 1000x1000, past float32's tolerance against eager."""
    torch.manual_seed(0)
    x = randn(*shape)

    def stats(x):
        return x.sum(), (x * x).mean()

    ours = tirc.compile(stats, [x], backend="cpp")(x)
    exact = stats(x.double())
    for got, theirs, want in zip(ours, stats(x), exact):
        error, eager_error = (got.double() - want).abs().item(), (theirs.double() - want).abs().item()
        assert error <= 4 * eager_error + 1e-7 * want.abs().item(), (error, eager_error)


VECTOR_MATH = {
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "exp": torch.exp,
    "tanh": torch.tanh,
    "gelu": F.gelu,
    "log1p": lambda x: torch.log1p(x.abs()),
    "bn_silu_gate": lambda x: F.silu(x * 1.5 - 0.25) * torch.sigmoid(x.mean((2, 3), keepdim=True)),
}


def _channel_shuffle(x, y, mean, var):
    """ShuffleNet's unit: a half passed through beside a branch's BN + ReLU,
    then the channels interleaved."""
    bn = F.batch_norm(y, mean, var.abs() + 0.5, mean * 3, var, training=False)
    both = torch.cat([x, torch.relu(bn)], 1)
    return both.view(4, 2, 40, 16, 32).transpose(1, 2).reshape(4, 80, 16, 32)


def _focal_terms(logits, draw):
    """A mask made a float inside the loop, counted and weighting a loss
    (RetinaNet's focal loss): g++ 12 reported such a loop vectorized and
    emitted it scalar, 5x slower, while the bool was converted with a cast."""
    targets = (draw > 1.0).to(logits.dtype)
    loss = F.binary_cross_entropy_with_logits(logits, targets, reduction="none") * (0.25 + 0.5 * targets)
    return loss.sum() / targets.sum().clamp(min=1)


def _hierarchical_fusion(d1, d2, d3, d4, d5, x, mean, var, weight):
    """ESPNet's module tail: the dilated branches' running sums concatenated,
    the input added, batch norm and PReLU. Run whole, g++ sank each part's
    load under its select and left the loop scalar (it reported nothing
    wrong); in pieces (codegen/plan_pieces.py) each part's loop vectorizes."""
    fused = [d2, d2 + d3, d2 + d3 + d4, d2 + d3 + d4 + d5]
    y = x + torch.cat([d1, *fused], 1)
    y = F.batch_norm(y, mean, var.abs() + 0.5, weight, mean * 0.5, training=False, eps=1e-3)
    return F.prelu(y, weight * 0.1)


VECTOR_CASES = {name: (fn, [(4, 40, 16, 32)]) for name, fn in VECTOR_MATH.items()}
VECTOR_CASES["hierarchical_fusion"] = (
    _hierarchical_fusion,
    [(2, 28, 16, 32), *[(2, 25, 16, 32)] * 4, (2, 128, 16, 32), (128,), (128,), (128,)],
)
VECTOR_CASES["channel_shuffle"] = (_channel_shuffle, [(4, 40, 16, 32), (4, 40, 16, 32), (40,), (40,)])
VECTOR_CASES["mask_as_float"] = (lambda x: x * (x > 0.3).double().to(x.dtype) + (x < 0).float(), [(37, 129)])
VECTOR_CASES["focal_terms"] = (_focal_terms, [(3, 1000, 37), (3, 1000, 37)])


@pytest.mark.parametrize("name", sorted(VECTOR_CASES))
def test_pointwise_loops_vectorize(name):
    """g++, with the flags kernels build with, vectorizes every `omp simd`
    loop of a pointwise kernel calling the prelude's math, or selecting
    between the inputs of a concatenation (its own -fopt-info report): a
    select kept as a branch once left every sigmoid and SiLU loop scalar,
    9x slower, with correct results, and a channel shuffle's select by
    channel was made masked loads, 15x slower."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    from vectorization import cpp_source, report

    fn, shapes = VECTOR_CASES[name]
    xs = [torch.randn(s) for s in shapes]
    compiled = tirc.compile(fn, xs)
    assert_close(compiled(*xs), fn(*xs))
    found = report(cpp_source(compiled.code))
    assert found.loops > 0 and not found.missed, found.missed


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_a_mask_made_a_float_is_one_or_zero(dtype):
    """A bool converted to each floating type is written as a select (so
    that its loop vectorizes); the values are eager's."""
    x = randn(37, 129)

    def fn(x):
        mask = x > 0.25
        return mask.to(dtype) * 3 - (~mask).to(dtype), mask.to(dtype).sum(1)

    compiled = tirc.compile(fn, [x], backend="cpp")
    for got, want in zip(compiled(x), fn(x)):
        assert got.dtype == dtype and torch.equal(got, want)
    assert re.search(r"\(t\d+ \? (1\.0f?|\(_Float16\)1) : ", compiled.code)
