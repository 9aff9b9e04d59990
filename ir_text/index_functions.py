"""The functions of index arithmetic: floor division, modulo, and the
clamps min and max.

`IndexMin` and `IndexMax` are sympy's Min and Max (so `isinstance(e,
sympy.Min)` holds and sympy's assumptions on them work), built by tirc's own
rules instead of sympy's. sympy's constructor compares every pair of
arguments through its assumption system (factoring each difference) and
took 2-20 ms for a pooling window's clamp such as `min(1, min(r0, max(0,
-2*i2 + 27)))`, which the compiler and every read-back build again. Here a
pair is compared only when the sign of its difference is plain from the
terms: a constant, or a sum whose terms are all of one sign because index
variables, floor divisions and remainders by positive constants, and clamps
of such things are never negative. That finds every simplification the
lowering relies on (`max(0, i1)` is `i1`, `min(3, 5)` is 3, `min(i0, i0 +
2)` is `i0`) for a few microseconds. The printed form is whatever these
rules build, and the parser builds it with the same rules, so the round
trip is exact by construction.
"""

from __future__ import annotations

import sympy


class FloorDiv(sympy.Function):
    """Integer floor division of non-negative index arithmetic."""

    nargs = 2
    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return a
        if a == 0:
            return sympy.Integer(0)
        if a.is_Integer and b.is_Integer and b != 0:  # by zero: left for the verifier to refuse
            return sympy.Integer(int(a) // int(b))
        return None


class Mod(sympy.Function):
    """Integer modulo (the sign of the divisor, as Python's `%`)."""

    nargs = 2
    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1 or a == 0:
            return sympy.Integer(0)
        if a.is_Integer and b.is_Integer and b != 0:  # by zero: left for the verifier to refuse
            return sympy.Integer(int(a) % int(b))
        return None


def never_negative(expr) -> bool:
    """Whether `expr` is >= 0 for every value of its index variables (which
    are non-negative integers), as far as its terms show: False means
    "not shown", not "negative"."""
    if expr.is_Integer:
        return expr >= 0
    if expr.is_Symbol:
        return expr.is_nonnegative is True
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        return all(never_negative(a) for a in expr.args)
    if isinstance(expr, sympy.Pow):
        return expr.exp.is_Integer and expr.exp > 0 and never_negative(expr.base)
    if isinstance(expr, (FloorDiv, Mod)):
        a, b = expr.args
        positive = b.is_Integer and b > 0
        return positive and (isinstance(expr, Mod) or never_negative(a))
    if isinstance(expr, sympy.Min):
        return all(never_negative(a) for a in expr.args)
    if isinstance(expr, sympy.Max):
        return any(never_negative(a) for a in expr.args)
    return False


class _Clamp:
    """The construction shared by IndexMin and IndexMax: nested clamps of
    the same kind flattened, duplicates dropped, constants folded into
    one, an argument of the other kind that repeats one of ours absorbed
    (`min(x, max(x, y))` is x), and an argument dropped where its
    difference from another one shows which is kept."""

    # The sign of `kept - dropped` for the kept one: -1 for min (the smaller stays).
    keeps: int
    other: type

    def __new__(cls, *args, **_):
        # Keyword arguments (sympy's `evaluate`) are ignored: these rules are
        # cheap and exact, so every construction applies them.
        args = _flattened(cls, [sympy.sympify(a) for a in args])
        ints = [a for a in args if a.is_Integer]
        if len(ints) > 1:
            pick = min if cls.keeps < 0 else max
            extreme = pick(ints, key=int)
            args = [a for a in args if not a.is_Integer or a is extreme]
        args = [a for a in args if not _absorbed(cls, a, args)]
        kept: list = []
        for a in args:
            if any(_covers(cls, k, a) for k in kept):
                continue
            kept = [k for k in kept if not _covers(cls, a, k)] + [a]
        if len(kept) == 1:
            return kept[0]
        return super().__new__(cls, *kept, evaluate=False)


def _flattened(cls, args: list) -> list:
    out: list = []
    for a in args:
        for part in a.args if isinstance(a, cls) else (a,):
            if part not in out:
                out.append(part)
    return out


def _absorbed(cls, arg, args) -> bool:
    """`min(x, max(x, y))` is x: a clamp of the other kind is dropped when
    one of its arguments is also one of ours."""
    return isinstance(arg, cls.other) and any(a in args for a in arg.args)


def _covers(cls, kept, dropped) -> bool:
    """Whether `kept` makes `dropped` redundant: kept <= dropped for min,
    kept >= dropped for max."""
    return never_negative(dropped - kept if cls.keeps < 0 else kept - dropped)


class IndexMin(_Clamp, sympy.Min):
    """`min(a, b, ...)` of index expressions."""

    keeps = -1


class IndexMax(_Clamp, sympy.Max):
    """`max(a, b, ...)` of index expressions."""

    keeps = 1


IndexMin.other, IndexMax.other = IndexMax, IndexMin
