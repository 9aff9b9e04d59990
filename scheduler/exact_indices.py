"""Indirect indices that are exact functions of the loop variables become
direct ones, as Inductor's indexing sees `x[..., i // 2]` in a nearest
upsample.

A decomposed `interpolate(mode="nearest")` or `upsample_nearest2d` indexes
its input with `(arange(out) * scale).to(int64)`: after inlining, a body
computes `to_dtype(mul(to_dtype(index [i2], f32), 0.5), i64)` and loads at
an `indirect` symbol of it. The symbol hides from tiling and fusion that
the load runs along i2 at half its pace, and each element checks its
bounds. Where every step of the chain is exact (every float is a dyadic
rational, so a value p / 2^k stays exact while p fits the mantissa) and
the result is provably in [0, size), the symbol is replaced by the integer
expression (`floordiv(i2, 2)`), the indirect op dropped, and the ops that
fed only it with it. Anything else (a data-dependent index, a scale that
rounds, a value that may leave the range) stays indirect.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import sympy

from ir_text import INT_DTYPES, BodyOp, FloorDiv, index_bounds, index_var

from .iteration import affine_strides

# Integers a float dtype holds exactly: its mantissa's bits, the implicit one
# included (torch.finfo's nmant + 1; the scheduler does not import torch).
_MANTISSA = {"f64": 53, "f32": 24, "bf16": 8, "f16": 11}


@dataclasses.dataclass(frozen=True)
class _Exact:
    """A value that is exactly `numerator / denominator`: numerator an
    integer expression of loop variables between `low` and `high`,
    denominator a power of two."""

    numerator: sympy.Expr
    denominator: int
    low: int
    high: int

    def scaled(self, factor: int) -> "_Exact":
        """numerator * factor / (denominator * factor): the same value."""
        return _Exact(
            sympy.expand(self.numerator * factor),
            self.denominator * factor,
            self.low * factor,
            self.high * factor,
        )


def _indexed(expr, scope: dict[str, int]) -> _Exact | None:
    """An integer expression of the loop variables, with its bounds."""
    if any(v.name not in scope for v in expr.free_symbols):
        return None
    return _Exact(expr, 1, *index_bounds(expr, scope))


def fold_indirect(body: list[BodyOp], scope: dict[str, int]) -> list[BodyOp]:
    """The body with each provably exact, in-range indirect index replaced by
    its expression over `scope`'s loop variables ({name: extent}); the body
    itself where there is none."""
    exact: dict[int, _Exact] = {}
    folded: dict = {}  # indirect symbol -> its expression
    dropped: set[int] = set()
    for op in body:
        if op.op == "indirect":
            value = exact.get(id(op.operands[0]))
            if (
                value is not None
                and value.denominator == 1
                and 0 <= value.low
                and value.high < op.attr("size")
            ):
                folded[index_var(op.result.hint)] = value.numerator
                dropped.add(id(op))
            continue
        if op.result is not None:
            value = _evaluate(op, exact, scope)
            if value is not None:
                exact[id(op.result)] = value
    if not folded:
        return body
    out = []
    for op in body:
        if id(op) in dropped:
            continue
        if op.op in ("load", "index"):
            index = sympy.sympify(op.attr("index")).xreplace(folded)
            op = dataclasses.replace(op, attrs=tuple((k, index if k == "index" else v) for k, v in op.attrs))
        out.append(op)
    return _live(out)


def _evaluate(op: BodyOp, exact: dict[int, _Exact], scope) -> _Exact | None:
    dtype = op.result.type
    if op.op == "index" and dtype in INT_DTYPES:
        value = _indexed(sympy.sympify(op.attr("index")), scope)
        return None if value is None else _checked(value, dtype)
    if op.op == "constant":
        value = op.attr("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        fraction = Fraction(value)
        if fraction.denominator & (fraction.denominator - 1):
            return None
        n = fraction.numerator
        return _Exact(sympy.Integer(n), fraction.denominator, n, n)
    args = [exact.get(id(v)) for v in op.operands]
    if not args or any(a is None for a in args):
        return None
    if op.op == "to_dtype":
        (a,) = args
        if dtype not in INT_DTYPES:
            return _checked(a, dtype)
        if a.low < 0:
            return None  # conversion truncates toward zero: the floor only of a value never negative
        if a.denominator == 1:
            return _checked(a, dtype)
        d = a.denominator
        return _checked(_Exact(FloorDiv(a.numerator, d), 1, a.low // d, a.high // d), dtype)
    if op.op in ("add", "sub") and len(args) == 2:
        common = max(a.denominator for a in args)
        x, y = (a.scaled(common // a.denominator) for a in args)
        if op.op == "add":
            return _checked(
                _Exact(sympy.expand(x.numerator + y.numerator), common, x.low + y.low, x.high + y.high), dtype
            )
        return _checked(
            _Exact(sympy.expand(x.numerator - y.numerator), common, x.low - y.high, x.high - y.low), dtype
        )
    if op.op == "mul" and len(args) == 2:
        constant = next((x for x in args if x.numerator.is_Integer), None)
        if constant is None:
            return None
        other = args[1] if constant is args[0] else args[0]
        c = int(constant.numerator)
        low, high = sorted((other.low * c, other.high * c))
        product = _Exact(
            sympy.expand(other.numerator * c), other.denominator * constant.denominator, low, high
        )
        return _checked(_reduced(product), dtype)
    return None


def _reduced(value: _Exact) -> _Exact:
    """The value with the powers of two its numerator's terms and its
    denominator share cancelled (an affine numerator only)."""
    strides = affine_strides(value.numerator)
    if strides is None:
        return value
    terms = list(strides.values()) + [int(value.numerator.subs({index_var(v): 0 for v in strides}))]
    numerator, denominator, low, high = value.numerator, value.denominator, value.low, value.high
    while denominator > 1 and all(t % 2 == 0 for t in terms):
        terms = [t // 2 for t in terms]
        numerator, denominator, low, high = sympy.expand(numerator / 2), denominator // 2, low // 2, high // 2
    return _Exact(numerator, denominator, low, high)


def _checked(value: _Exact, dtype: str) -> _Exact | None:
    """The value if `dtype` holds each of its values exactly: an integer
    within an integer dtype's range, a numerator within a float dtype's
    mantissa (its bits, the implicit one included)."""
    if dtype in INT_DTYPES:
        bits = int(dtype[1:])
        least, bound = (0, 2**bits) if dtype.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1))
        return value if value.denominator == 1 and least <= value.low and value.high < bound else None
    bits = _MANTISSA.get(dtype)
    return value if bits is not None and max(abs(value.low), abs(value.high)) < 2**bits else None


def _live(body: list[BodyOp]) -> list[BodyOp]:
    """The body less the ops whose results nothing live uses (the chain that
    computed a folded index); stores, reductions' results and indirect ops
    (which check their bounds) stay."""
    used: set[int] = set()
    keep = []
    for op in reversed(body):
        live = op.result is None or op.op == "indirect" or id(op.result) in used
        if live:
            used.update(id(v) for v in op.operands)
            keep.append(op)
    return list(reversed(keep))
