"""The text every generated C++ file starts with: types and helpers.

It includes nothing but <stdint.h>: <cmath> and <algorithm> cost g++ more
parsing than the kernels themselves (measured: docs/design-notes.md, "C++
kernels"), and cold compile time is part of tirc's contract. Math
functions are declared here (with C linkage, as libm defines them); with
glibc's libmvec (2.35 or newer, x86-64) they carry `simd` attributes, so
g++ vectorizes loops that call them into calls of libmvec's AVX2/AVX-512
variants (`_ZGVeN16v_expf`, ...).
"""

from __future__ import annotations

# (name, arity): the libm functions kernels call; each has a float (`expf`)
# and a double (`exp`) version, and each has a libmvec variant.
MATH_FUNCTIONS = (
    ("exp", 1),
    ("exp2", 1),
    ("expm1", 1),
    ("log", 1),
    ("log2", 1),
    ("log10", 1),
    ("log1p", 1),
    ("sin", 1),
    ("cos", 1),
    ("tan", 1),
    ("asin", 1),
    ("acos", 1),
    ("atan", 1),
    ("sinh", 1),
    ("cosh", 1),
    ("tanh", 1),
    ("erf", 1),
    ("atan2", 2),
    ("pow", 2),
)


def _declarations() -> str:
    lines = []
    for name, arity in MATH_FUNCTIONS:
        for ctype, suffix in (("float", "f"), ("double", "")):
            params = ", ".join([ctype] * arity)
            lines.append(f"{ctype} {name}{suffix}({params}) TIRC_NOEXCEPT TIRC_SIMD;")
    return "\n".join(lines)


PRELUDE = (
    r"""#include <stdint.h>

#if defined(TIRC_LIBMVEC)
#define TIRC_SIMD __attribute__((simd("notinbranch")))
#else
#define TIRC_SIMD
#endif
#define TIRC_NOEXCEPT throw()
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))

extern "C" {
"""
    + _declarations()
    + r"""
}

// bfloat16 values are their bits (uint16_t), so loads and stores vectorize;
// ops convert through float. Rounding to nearest even, as PyTorch does.
typedef uint16_t tirc_bf16;
static inline float tirc_from_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t tirc_to_bf16(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  uint16_t rounded = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return f != f ? (uint16_t)0x7fc0 : rounded;
}

// exp for float, inlined so that g++ vectorizes it in place: 2^k * e^r
// with k = round(x / ln 2) (by adding 1.5 * 2^23, whose low mantissa bits
// then hold k), r = x - k ln 2 in two parts, and e^r - 1 as a degree-6
// polynomial on |r| <= ln(2)/2 (relative error 4e-9, fitted for tirc). The
// scale 2^k is applied as two powers of two, so results in the subnormal
// range round once there instead of flushing to 0; x is clamped to
// [-104, 89], where the result is 0 or inf already, and a NaN is put back
// at the end. The clamp compares x's bits as integers (one unsigned min for
// the lower bound, one signed min for the upper: IEEE order, as any float
// but a NaN has its bits in that order among those of its sign): g++
// vectorizes float compares against constants as mask compares and blends,
// and softmax 2048x2048 bfloat16 took 0.93 of the time with these (fastest
// of 300 single-thread runs on a 2-core Xeon; 0.83 with no clamp at all,
// 0.85-0.87 with no NaN check). The same for erf's clamps was 2% slower. At most
// 1.005 ulp from the exact value (libmvec's expf: 0.502) over 28M points in
// [-110, 90]. In the benchmark's rounds on a 2-core AMD EPYC, against the
// same kernels calling libmvec's expf: softmax 2048x2048 0.96-0.97 of the
// time, cross-entropy 0.96, swiglu (sigmoid) 0.94. On a 2-core Xeon
// (AVX-512) libmvec's took 0.84-0.88 of the time in softmax but is 2.4 ulp
// off across the range there (its AVX-512 variant), so it is not used.
static inline float tirc_expf(float x) {
  uint32_t low;
  __builtin_memcpy(&low, &x, 4);
  low = low < 0xc2d00000u ? low : 0xc2d00000u;  // -104.0f
  int32_t high = (int32_t)low < 0x42b20000 ? (int32_t)low : 0x42b20000;  // 89.0f
  float c;
  __builtin_memcpy(&c, &high, 4);
  const float shift = 0x1.8p23f;
  float z = __builtin_fmaf(c, 0x1.715476p+0f, shift);
  float k = z - shift;
  float r = __builtin_fmaf(k, -0x1.62e4p-1f, c);
  r = __builtin_fmaf(k, -0x1.7f7d1cp-20f, r);
  float q = __builtin_fmaf(0x1.6a244cp-10f, r, 0x1.1239d4p-7f);
  q = __builtin_fmaf(q, r, 0x1.5558f2p-5f);
  q = __builtin_fmaf(q, r, 0x1.555492p-3f);
  q = __builtin_fmaf(q, r, 0x1.fffffcp-2f);
  float p = __builtin_fmaf(q, r * r, r);
  int32_t bits;
  __builtin_memcpy(&bits, &z, 4);
  // n = k, and the biased exponents of 2^(n/2) and 2^(n - n/2); the
  // constants come folded, as kernels build with -fwrapv (no reassociation).
  int32_t n = bits - 0x4b400000, half = n >> 1;
  int32_t b1 = (half + 127) << 23, b2 = (bits - (0x4b400000 - 127) - half) << 23;
  float s1, s2;
  __builtin_memcpy(&s1, &b1, 4);
  __builtin_memcpy(&s2, &b2, 4);
  float result = __builtin_fmaf(s1, p, s1) * s2;
  return x != x ? x : result;
}
static inline double tirc_exp(double x) { return exp(x); }

// erf for float, inlined so that g++ vectorizes it in place: libmvec's
// erff cost twice the memory traffic of gelu(x + b) 2048x2048 on a 2-core
// Xeon, and eager's vectorized erf was faster. |x| < 1: x + x * A(x^2), A
// of degree 7; 1 <= |x|: 1 - Q(|x| - 2), Q of degree 14 approximating
// erfc (|x| - 2 is exact there; |x| is clamped at 3.92, where erf rounds
// to 1). Coefficients fitted for tirc (least squares on Chebyshev nodes in
// float64, rounded to float). At most 1.33 ulp from the exact value over
// [-4.5, 4.5] (tests/codegen/test_cpp_kernels.py); a NaN takes the first
// branch and passes through; -0 stays -0.
static inline float tirc_erff(float x) {
  float t = __builtin_fabsf(x);
  float s = t * t;
  float a = __builtin_fmaf(-0x1.44978ap-17f, s, 0x1.d8ap-14f);
  a = __builtin_fmaf(a, s, -0x1.bcd3a8p-11f);
  a = __builtin_fmaf(a, s, 0x1.562abep-8f);
  a = __builtin_fmaf(a, s, -0x1.b829dp-6f);
  a = __builtin_fmaf(a, s, 0x1.ce2f0ap-4f);
  a = __builtin_fmaf(a, s, -0x1.812746p-2f);
  a = __builtin_fmaf(a, s, 0x1.06eba8p-3f);
  a = __builtin_fmaf(t, a, t);
  float u = (t < 3.92f ? t : 3.92f) - 2.0f;
  float q = __builtin_fmaf(-0x1.25c8ecp-20f, u, 0x1.d2a276p-18f);
  q = __builtin_fmaf(q, u, -0x1.aa2decp-19f);
  q = __builtin_fmaf(q, u, -0x1.5cd456p-14f);
  q = __builtin_fmaf(q, u, 0x1.00b81p-12f);
  q = __builtin_fmaf(q, u, 0x1.0b11f8p-15f);
  q = __builtin_fmaf(q, u, -0x1.9a8708p-10f);
  q = __builtin_fmaf(q, u, 0x1.bbbde8p-9f);
  q = __builtin_fmaf(q, u, -0x1.f13706p-12f);
  q = __builtin_fmaf(q, u, -0x1.aceb82p-7f);
  q = __builtin_fmaf(q, u, 0x1.1a34cep-5f);
  q = __builtin_fmaf(q, u, -0x1.8b0b2ap-5f);
  q = __builtin_fmaf(q, u, 0x1.529ac4p-5f);
  q = __builtin_fmaf(q, u, -0x1.529b94p-6f);
  q = __builtin_fmaf(q, u, 0x1.328f7cp-8f);
  float b = 1.0f - (q > 0.0f ? q : 0.0f);
  return __builtin_copysignf(t >= 1.0f ? b : a, x);
}
static inline double tirc_erf(double x) { return erf(x); }

// NaN-propagating max/min, as torch.maximum/minimum; one select each, so
// loops that use them vectorize.
template <typename T> static inline T tirc_maximum(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> static inline T tirc_minimum(T a, T b) { return (a < b || a != a) ? a : b; }
static inline int64_t tirc_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
// The sign bit, read in bits: set on -0.0 and on a NaN with its sign set.
// (g++ 12.2's vectorizer fails with an internal error on __builtin_signbit
// of a float converted from bfloat16.) An integer's is its sign. Halves
// reach neither function: body ops take them converted to float.
static inline bool tirc_signbit(float x) {
  int32_t b;
  __builtin_memcpy(&b, &x, 4);
  return b < 0;
}
static inline bool tirc_signbit(double x) {
  int64_t b;
  __builtin_memcpy(&b, &x, 8);
  return b < 0;
}
template <typename T> static inline bool tirc_signbit(T x) { return x < 0; }
// |a| with b's sign bit (a NaN's too).
static inline float tirc_copysign(float a, float b) { return __builtin_copysignf(a, b); }
static inline double tirc_copysign(double a, double b) { return __builtin_copysign(a, b); }
// Values eager PyTorch raises on, recorded in the kernel's error slot for
// the wrapper to raise after it (runtime.check_values): error[0] is 1 for an
// index out of range (error[1] the index, error[2] the size) and 2 for an
// integer division by zero; error[3] is the site of the op (its number in
// the kernel's plan.sites), which the wrapper names. The first error claims
// the slot (a compare-and-swap on the code, on the error path only), so
// that its values come from one thread's check; the wrapper reads them once
// the kernel's threads have joined.
static inline void tirc_error(int64_t* error, int64_t code, int64_t a, int64_t b, int64_t site) {
  int64_t none = 0;
  if (__atomic_compare_exchange_n(&error[0], &none, code, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    __atomic_store_n(&error[1], a, __ATOMIC_RELAXED);
    __atomic_store_n(&error[2], b, __ATOMIC_RELAXED);
    __atomic_store_n(&error[3], site, __ATOMIC_RELAXED);
  }
}
// An indirect index (a loaded integer) into a dimension of n: negatives
// count from the end, as in Python, when `wrap` (a constant: the branch
// folds). One still outside [0, n) is an error, read as 0 so that no load
// leaves its buffer.
static inline int64_t tirc_index(int64_t i, int64_t n, int wrap, int64_t* error, int64_t site) {
  int64_t w = wrap && i < 0 ? i + n : i;
  if (__builtin_expect((uint64_t)w >= (uint64_t)n, 0)) {
    tirc_error(error, 1, i, n, site);
    return 0;
  }
  return w;
}
static inline int64_t tirc_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

// A float converted to an integer as ATen's on x86 (cvttss2si and kin):
// truncated toward zero, and a value outside the range of int32 (NaN too)
// gives INT32_MIN, then narrowed to an 8- or 16-bit type (0 there); to
// int64 likewise with INT64_MIN. A plain static_cast is undefined outside
// the range, and g++ folds constants to values of its own (-1.5 to uint8
// gave 0, eager 255). Both bounds are powers of two, exact in any float.
template <typename F> static inline int32_t tirc_to_i32(F x) {
  return x >= F(-2147483648.0) && x < F(2147483648.0) ? (int32_t)x : INT32_MIN;
}
template <typename F> static inline int64_t tirc_to_i64(F x) {
  return x >= F(-9223372036854775808.0) && x < F(9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}

// Rounding and absolute values: builtins for floats (inlined as vector
// instructions), the identity or a select for integers.
static inline float tirc_abs(float a) { return __builtin_fabsf(a); }
static inline double tirc_abs(double a) { return __builtin_fabs(a); }
template <typename T> static inline T tirc_abs(T a) { return a < 0 ? (T)-a : a; }
static inline float tirc_floor(float a) { return __builtin_floorf(a); }
static inline double tirc_floor(double a) { return __builtin_floor(a); }
template <typename T> static inline T tirc_floor(T a) { return a; }
static inline float tirc_ceil(float a) { return __builtin_ceilf(a); }
static inline double tirc_ceil(double a) { return __builtin_ceil(a); }
template <typename T> static inline T tirc_ceil(T a) { return a; }
static inline float tirc_trunc(float a) { return __builtin_truncf(a); }
static inline double tirc_trunc(double a) { return __builtin_trunc(a); }
template <typename T> static inline T tirc_trunc(T a) { return a; }
static inline float tirc_round(float a) { return __builtin_nearbyintf(a); }
static inline double tirc_round(double a) { return __builtin_nearbyint(a); }
template <typename T> static inline T tirc_round(T a) { return a; }
static inline float tirc_sqrt(float a) { return __builtin_sqrtf(a); }
static inline double tirc_sqrt(double a) { return __builtin_sqrt(a); }
template <typename T> static inline T tirc_sign(T a) { return (T)((T(0) < a) - (a < T(0))); }

// Python's floor division and modulo (the sign of the divisor). For floats
// as ATen's div_floor_floating: from the exact fmod, not floor(a / b), whose
// rounding makes 1.0 // 0.1 10 instead of 9.
template <typename F> static inline F tirc_floordiv_float(F a, F b) {
  if (b == 0) return a / b;
  F mod = __builtin_fmod(a, b);
  F div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return __builtin_copysign(F(0), a / b);
  F floored = __builtin_floor(div);
  return div - floored > F(0.5) ? floored + 1 : floored;
}
static inline float tirc_floordiv(float a, float b) { return tirc_floordiv_float<float>(a, b); }
static inline double tirc_floordiv(double a, double b) { return tirc_floordiv_float<double>(a, b); }
// Integers in index math, whose divisors are positive (an IR rule).
template <typename T> static inline T tirc_floordiv(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> static inline T tirc_remainder(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Integers in a body: a divisor of 0 is an error (0 is the result), and -1 negates
// with wrap-around (the minimum stays itself, as in PyTorch): neither traps.
template <typename T> static inline T tirc_floordiv(T a, T b, int64_t* error, int64_t site) {
  if (__builtin_expect(b == 0, 0)) {
    tirc_error(error, 2, 0, 0, site);
    return 0;
  }
  return b == -1 ? (T)(0 - (uint64_t)a) : tirc_floordiv(a, b);
}
static inline float tirc_remainder(float a, float b) {
  float r = __builtin_fmodf(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline double tirc_remainder(double a, double b) {
  double r = __builtin_fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> static inline T tirc_remainder(T a, T b, int64_t* error, int64_t site) {
  if (__builtin_expect(b == 0, 0)) {
    tirc_error(error, 2, 0, 0, site);
    return 0;
  }
  return b == -1 ? T(0) : tirc_remainder(a, b);
}
// C's fmod (the sign of the dividend): exact for floats.
static inline float tirc_fmod(float a, float b) { return __builtin_fmodf(a, b); }
static inline double tirc_fmod(double a, double b) { return __builtin_fmod(a, b); }
template <typename T> static inline T tirc_fmod(T a, T b, int64_t* error, int64_t site) {
  if (__builtin_expect(b == 0, 0)) {
    tirc_error(error, 2, 0, 0, site);
    return 0;
  }
  return b == -1 ? T(0) : T(a % b);
}
// pow: integers by squaring with wrap-around (as PyTorch); a negative exponent
// gives 0 except for bases 1 and -1.
static inline float tirc_pow(float a, float b) { return powf(a, b); }
static inline double tirc_pow(double a, double b) { return pow(a, b); }
template <typename T> static inline T tirc_pow(T a, T b) {
  if (b < 0) return a == 1 ? T(1) : (a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0));
  uint64_t result = 1, base = (uint64_t)a;
  for (uint64_t e = (uint64_t)b; e; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return (T)result;
}
// The comparisons of argmax/argmin: the first NaN wins, then the first
// extreme value (as ATen).
template <typename T> static inline bool tirc_better_max(T v, T best) {
  return v > best || (v != v && best == best);
}
template <typename T> static inline bool tirc_better_min(T v, T best) {
  return v < best || (v != v && best == best);
}
"""
)
