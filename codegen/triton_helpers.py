"""Triton helper functions that generated kernels call, for what
triton.language lacks or spells differently; a generated module holds the ones
its kernels use (`render_kernels` in triton.py).
"""

from __future__ import annotations

import re

# Helpers for ops triton.language lacks; emitted once per module, when used.
# A dtype branch is an if/else with one return: compiled Triton (unlike the
# interpreter) still builds the code after an early return in a constexpr if.
HELPERS = {
    # libdevice's rint on the GPU. Interpreted: values of 2**23 (f32) or
    # 2**52 (f64) and more are integers already (x + 0.5 would round), and
    # the result keeps x's sign (round(-0.4) is -0.0).
    "_round_half_even": """
@triton.jit
def _round_half_even(x):
    if _INTERPRETED:
        if x.dtype == tl.float64:
            bits = tl.int64
            big = 4503599627370496.0
        else:
            bits = tl.int32
            big = 8388608.0
        r = tl.floor(x + 0.5)
        tie = (r - x) == 0.5
        odd = (r - 2.0 * tl.floor(r * 0.5)) != 0
        r = tl.where(tl.abs(x) >= big, x, tl.where(tie & odd, r - 1.0, r)).to(x.dtype)
        shift = x.dtype.primitive_bitwidth - 1
        sign = (x.to(bits, bitcast=True) >> shift) << shift
        y = (r.to(bits, bitcast=True) | sign).to(x.dtype, bitcast=True)
    else:
        y = libdevice.rint(x)
    return y
""",
    # Floats as ATen's div_floor_floating: from the exact fmod, not
    # floor(a / b), whose rounding makes 1.0 // 0.1 10 instead of 9. The
    # zero quotient takes the sign of a / b in bits (see _pow).
    "_floordiv": """
@triton.jit
def _floordiv(a, b):
    if a.dtype.is_floating():
        mod = _fmod(a, b)
        div = (a - mod) / b
        div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
        floored = tl.floor(div)
        floored = tl.where(div - floored > 0.5, floored + 1.0, floored)
        if a.dtype == tl.float64:
            bits = tl.int64
        else:
            bits = tl.int32
        shift = a.dtype.primitive_bitwidth - 1
        quotient = a / b
        zero = ((quotient.to(bits, bitcast=True) >> shift) << shift).to(a.dtype, bitcast=True)
        q = tl.where(b == 0, quotient, tl.where(div != 0, floored, zero))
    else:
        q = a // b
        q = tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)
    return q
""",
    "_remainder": """
@triton.jit
def _remainder(a, b):
    if a.dtype.is_floating():
        r = _fmod(a, b)
    else:
        r = a % b
    r = tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return r
""",
    # C's fmod, exact: libdevice's on the GPU (Triton's float % is
    # a - b * trunc(a / b) there), numpy's under the interpreter, whose
    # float % is numpy.fmod. Integer % truncates already; -1 gives 0 (the
    # minimum over -1 overflows in the GPU's remainder).
    "_fmod": """
@triton.jit
def _fmod(a, b):
    if a.dtype.is_floating():
        if _INTERPRETED:
            r = a % b
        else:
            r = libdevice.fmod(a, b)
    elif a.dtype.is_int_signed():
        r = tl.where(b == -1, 0, a % tl.where(b == -1, 1, b)).to(a.dtype)
    else:
        r = a % b
    return r
""",
    "_pow": """
@triton.jit
def _pow(a, b):
    if a.dtype.is_floating() and not _INTERPRETED:
        acc = libdevice.pow(a, b)
    elif a.dtype.is_floating():
        # In float64, so that a float32 power rounds as libdevice's does
        # (3.0 ** 15 exactly; exp(b log a) in float32 is off by ~1e-6).
        mag = tl.exp(b.to(tl.float64) * tl.log(tl.abs(a).to(tl.float64))).to(a.dtype)
        b_odd = (b - 2.0 * tl.floor(b * 0.5)) == 1.0
        b_int = tl.floor(b) == b
        # A negative base (-0.0 included) to an odd integer power flips the
        # sign. In bits: the GPU compiler may treat the sign of a zero as
        # insignificant (a select of -0.0 and 0.0 folded to 0.0, -mag to
        # mag where mag is 0), not an integer's bit.
        if a.dtype == tl.float64:
            bits = tl.int64
        else:
            bits = tl.int32
        sign = a.to(bits, bitcast=True) < 0
        flip = tl.where(b_int & b_odd & sign, 1, 0).to(bits) << (a.dtype.primitive_bitwidth - 1)
        signed = (mag.to(bits, bitcast=True) ^ flip).to(a.dtype, bitcast=True)
        # A negative base to a non-integer power is NaN, but -inf's is inf or 0.
        neg = tl.where(b_int, signed, tl.where(a == float("-inf"), mag, float("nan")))
        zero = tl.where(b == 0, 1.0, tl.where(b > 0, 0.0, float("inf")))
        zero = (zero.to(a.dtype).to(bits, bitcast=True) ^ flip).to(a.dtype, bitcast=True)
        out = tl.where(a > 0, mag, tl.where(a == 0, zero, neg))
        # C's pow is 1 for 1 to any power (NaN included) and for -1 to +-inf.
        one = (b == 0) | (a == 1.0) | ((a == -1.0) & (tl.abs(b) == float("inf")))
        acc = tl.where(one, 1.0, out)
    else:
        # Integers: square and multiply, wrapping as PyTorch does; a negative
        # exponent gives 0 except for bases 1 and -1.
        acc = tl.full(a.shape, 1, a.dtype)
        base = a
        e = tl.where(b < 0, 0, b)
        for _ in tl.static_range(63):
            acc = tl.where((e & 1) != 0, acc * base, acc)
            base = base * base
            e = e >> 1
        if a.dtype.is_int_signed():
            odd = (b & 1) != 0
            negative = tl.where(a == 1, 1, tl.where(a == -1, tl.where(odd, -1, 1), 0)).to(a.dtype)
            acc = tl.where(b < 0, negative, acc)
    return acc
""",
    "_atan_series": """
@triton.jit
def _atan_series(x):
    # atan by range reduction to |t| <= tan(pi/12) and a short series.
    ax = tl.abs(x)
    inv = ax > 1.0
    t = tl.where(inv, 1.0 / ax, ax)
    shift = t > 0.2679491924311227
    t = tl.where(shift, (t - 0.5773502691896257) / (1.0 + 0.5773502691896257 * t), t)
    t2 = t * t
    p = t * (1.0 - t2 * (0.3333333333333333 - t2 * (0.2 - t2 * (0.14285714285714285 - t2 * 0.1111111111111111))))
    p = tl.where(shift, p + 0.5235987755982988, p)
    p = tl.where(inv, 1.5707963267948966 - p, p)
    return tl.where(x < 0, -p, p)
""",
    "_asin_series": """
@triton.jit
def _asin_series(x):
    return _atan_series(x / tl.sqrt((1.0 - x) * (1.0 + x)))
""",
    # libdevice's atan2 on the GPU. Under the interpreter, which has no
    # atan2: the angle of (|y|, x), in [0, pi], with C's values at zeros
    # and infinities, then the sign of y put on in bits (atan2(-0.0, -1) is -pi).
    "_atan2": """
@triton.jit
def _atan2(y, x):
    if _INTERPRETED:
        pi = 3.141592653589793
        if y.dtype == tl.float64:
            bits = tl.int64
        else:
            bits = tl.int32
        shift = y.dtype.primitive_bitwidth - 1
        x_negative = x.to(bits, bitcast=True) < 0
        ay = tl.abs(y)
        inf = float("inf")
        t = _atan_series(ay / x)
        m = tl.where(x_negative, t + pi, t)
        m = tl.where(x == 0, pi / 2, m)
        m = tl.where(ay == inf, tl.where(x == inf, pi / 4, tl.where(x == -inf, 3 * pi / 4, pi / 2)), m)
        m = tl.where(ay == 0, tl.where(x_negative, pi, 0.0), m)
        m = tl.where((y != y) | (x != x), float("nan"), m).to(y.dtype)
        sign = (y.to(bits, bitcast=True) >> shift) << shift
        a = (m.to(bits, bitcast=True) | sign).to(y.dtype, bitcast=True)
    else:
        a = libdevice.atan2(y, x)
    return a
""",
}
# Math functions: libdevice's on the GPU (accurate near 0 and at the ends of
# the range: expm1(1e-7), sinh(710.0) in f64, f64 atan); under the
# interpreter, which cannot run libdevice, formulas from triton.language,
# evaluated in float64 (float32's sinh(1.3e-7) by the formula was 40% off).
_LIBDEVICE_OR = {
    "expm1": "tl.where(tl.abs(x) < 1e-5, x * (1.0 + 0.5 * x), tl.exp(x) - 1.0)",
    "log1p": "tl.where(tl.abs(x) < 1e-4, x * (1.0 - x * (0.5 - x / 3.0)), tl.log(1.0 + x))",
    "sinh": "(tl.exp(x) - tl.exp(-x)) * 0.5",
    "cosh": "(tl.exp(x) + tl.exp(-x)) * 0.5",
    "atan": "_atan_series(x)",
    "asin": "_asin_series(x)",
    "acos": "1.5707963267948966 - _asin_series(x)",
}
for _name, _formula in _LIBDEVICE_OR.items():
    HELPERS[f"_{_name}"] = f"""
@triton.jit
def _{_name}(x):
    if _INTERPRETED:
        dtype = x.dtype
        x = x.to(tl.float64)
        y = ({_formula}).to(dtype)
    else:
        y = libdevice.{_name}(x)
    return y
"""
# tanh in f32: 2 sigmoid(2x) - 1, absolute error about 1e-7 (so relative
# accuracy is lost near 0: tanh(1e-7) is 1.2e-7), with 0.0 and -0.0 kept:
# libdevice's tanh, or an odd series near 0 beside it, slowed GELU-tanh
# (measured: docs/design-notes.md, "Triton kernels"). libdevice's in f64,
# on the GPU.
HELPERS["_tanh"] = """
@triton.jit
def _tanh(x):
    if x.dtype == tl.float64 and not _INTERPRETED:
        y = libdevice.tanh(x)
    else:
        y = tl.where(x == 0, x, 2.0 * tl.sigmoid(2.0 * x) - 1.0)
    return y
"""
# Round to nearest even: the GPU's cast does; the interpreter's truncates, so
# under it the rounding is spelled out (_INTERPRETED: wrapper header).
HELPERS["_to_bf16"] = """
@triton.jit
def _to_bf16(x):
    if _INTERPRETED:
        x = x.to(tl.float32)
        u = x.to(tl.uint32, bitcast=True)
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        rounded = u.to(tl.float32, bitcast=True)
        y = tl.where(x != x, x, rounded).to(tl.bfloat16)
    else:
        y = x.to(tl.bfloat16)
    return y
"""
# Row reductions of a 2-D tile (along axis 1), for the end of a reduction loop.
HELPERS["_mul"] = """
@triton.jit
def _mul(a, b):
    return a * b
"""
# tl.max and tl.min drop NaNs (the interpreter's nanmax, the GPU's maxnum);
# torch.amax keeps them. Compiled, one reduction whose combine keeps NaNs;
# interpreted, where tl.reduce runs element by element, two plain ones.
HELPERS["_max_rows"] = """
@triton.jit
def _max_rows(x):
    if x.dtype.is_floating() and not _INTERPRETED:
        m = tl.reduce(x, 1, _maximum_nan)
    else:
        m = tl.max(x, 1)
        if x.dtype.is_floating():
            m = tl.where(tl.max((x != x).to(tl.int8), 1) != 0, float("nan"), m)
    return m
"""
HELPERS["_min_rows"] = """
@triton.jit
def _min_rows(x):
    if x.dtype.is_floating() and not _INTERPRETED:
        m = tl.reduce(x, 1, _minimum_nan)
    else:
        m = tl.min(x, 1)
        if x.dtype.is_floating():
            m = tl.where(tl.max((x != x).to(tl.int8), 1) != 0, float("nan"), m)
    return m
"""
HELPERS["_maximum_nan"] = """
@triton.jit
def _maximum_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
"""
HELPERS["_minimum_nan"] = """
@triton.jit
def _minimum_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
"""
# Each lane holds its best value and the first index holding it; a row's
# result is the smallest index among the lanes that hold the row's best value
# (a NaN above all), so ties and NaNs resolve to the first, as in ATen. Two
# plain reductions rather than a tuple tl.reduce, which the interpreter runs
# element by element.
HELPERS["_argmax_rows"] = """
@triton.jit
def _argmax_rows(value, index):
    best = _max_rows(value)[:, None]
    hit = (value == best) | ((value != value) & (best != best))
    return tl.min(tl.where(hit, index, 9223372036854775807), 1)
"""
HELPERS["_argmin_rows"] = """
@triton.jit
def _argmin_rows(value, index):
    best = _min_rows(value)[:, None]
    hit = (value == best) | ((value != value) & (best != best))
    return tl.min(tl.where(hit, index, 9223372036854775807), 1)
"""
HELPERS["_signbit"] = """
@triton.jit
def _signbit(x):
    # In bits: -0.0 and NaNs carry a sign that comparisons do not see.
    # Halves never come here: body ops take them converted to float32.
    if x.dtype == tl.float64:
        neg = x.to(tl.int64, bitcast=True) < 0
    elif x.dtype == tl.float32:
        neg = x.to(tl.int32, bitcast=True) < 0
    else:
        neg = x < 0
    return neg
"""
HELPERS["_copysign"] = """
@triton.jit
def _copysign(a, b):
    # In bits: the GPU compiler folded a select of -|a| and |a| on b's sign
    # bit into an instruction that lost the sign of zeros and of NaNs.
    # float32 or float64: the op takes floats, halves converted to float32.
    if a.dtype == tl.float64:
        bits = tl.int64
    else:
        bits = tl.int32
    sign = tl.full(a.shape, 1, bits) << (a.dtype.primitive_bitwidth - 1)
    ua = a.to(bits, bitcast=True)
    ub = b.to(bits, bitcast=True)
    return ((ua & ~sign) | (ub & sign)).to(a.dtype, bitcast=True)
"""
# An indirect index (a loaded integer) into a dimension of n: negatives count
# from the end when `wrap`. One still outside [0, n) in a live lane is
# eager's "index out of bounds". Compiled, a device assert (the launch
# compiles with debug=True, as Inductor's do), which stops the kernel before
# the load as eager's CUDA kernels stop; interpreted, it is recorded in the
# error slot for the wrapper's IndexError (runtime.check_values, as the C++
# kernels record it), with `site`, the op's number in KernelPlan.sites, and
# read as 0, so that no load leaves its buffer. As in the C++ prelude's
# tirc_error, the first error claims the slot: the op named is the first one
# found out of range. The assert's `message` names the op too.
HELPERS["_index"] = """
@triton.jit
def _index(raw, n, wrap: tl.constexpr, mask, p_error, site: tl.constexpr, message: tl.constexpr):
    i = raw.to(tl.int64)
    if wrap:
        i = tl.where(i < 0, i + n, i)
    bad = ((i < 0) | (i >= n)) & mask
    if _INTERPRETED:
        zero = tl.zeros(bad.shape, tl.int64)  # the mask's shape: an index of one axis may broadcast
        first = bad & (tl.load(p_error + zero) == 0)
        tl.store(p_error + 1 + zero, raw.to(tl.int64) + zero, first)
        tl.store(p_error + 2 + zero, zero + n, first)
        tl.store(p_error + 3 + zero, zero + site, first)
        tl.store(p_error + zero, zero + 1, first)
        i = tl.where(bad, 0, i)
    else:
        tl.device_assert(~bad, message)
    return i
"""
HELPERS["_last_column"] = """
@triton.jit
def _last_column(x):
    last = tl.arange(0, x.shape[1])[None, :] == x.shape[1] - 1
    return tl.sum(tl.where(last, x, 0), 1)[:, None]
"""
_WORD = re.compile(r"\w+")


def helpers_named(source: str) -> set[str]:
    """The helpers whose names occur in `source` as whole words: those a
    kernel's (or a helper's) source calls."""
    return set(_WORD.findall(source)) & HELPERS.keys()


def _called(name: str) -> frozenset[str]:
    """The helpers that helper `name` calls, directly or through another."""
    found: set[str] = set()
    todo = list(helpers_named(HELPERS[name]) - {name})
    while todo:
        helper = todo.pop()
        if helper not in found:
            found.add(helper)
            todo.extend(helpers_named(HELPERS[helper]) - {helper})
    return frozenset(found)


# What a helper needs emitted beside it, as a kernel names only the helpers
# it calls itself. Read off the helpers' sources, so that no list of calls
# can fall out of step with them.
HELPER_DEPS = {name: _called(name) for name in HELPERS}
