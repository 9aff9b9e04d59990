"""Index expressions: sympy with integer floor division and modulo, one canonical printer.

The printer defines the canonical text: terms of a sum are ordered by their
variables (naturally sorted, so i2 comes before i10), constants last; the
coefficient of a product comes first. Parsing builds the sympy expression back,
and sympy's own normalisation plus this printer make `print(parse(t)) == t` for
every printed `t`. Backends render the same structure through `render_index`.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import sympy

from .index_functions import FloorDiv, IndexMax, IndexMin, Mod


@functools.lru_cache(maxsize=1024)
def index_var(name: str) -> sympy.Symbol:
    """The loop variable `name` (i0, i1, ... for iteration, r0, ... for reduction).
    Cached: building a Symbol with assumptions is slow, and the fusion pass
    and its check ask for the same few thousands of times (measured:
    docs/design-notes.md, "Pipeline")."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


# Dumps repeat the same few clamps hundreds of times (a GRU of 24 steps:
# 450 in each dump), and the parser builds each again, so the results are
# memoized; both are pure functions of hashable, immutable expressions.
@functools.lru_cache(maxsize=4096)
def index_min(a, b):
    """`min(a, b)` of two index expressions (index_functions.IndexMin)."""
    return IndexMin(a, b)


@functools.lru_cache(maxsize=4096)
def index_max(a, b):
    """`max(a, b)` of two index expressions (index_functions.IndexMax)."""
    return IndexMax(a, b)


@functools.lru_cache(maxsize=256)
def loop_vars(count: int, prefix: str = "i") -> tuple[sympy.Symbol, ...]:
    return tuple(index_var(f"{prefix}{k}") for k in range(count))


def _natural_key(text: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


@dataclass(frozen=True)
class IndexStyle:
    """How one target spells the index operators."""

    floordiv: str = "floordiv({}, {})"
    mod: str = "mod({}, {})"
    min: str = "min({}, {})"
    max: str = "max({}, {})"
    symbol: str = "{}"


IR_STYLE = IndexStyle()


def render_index(expr, style: IndexStyle = IR_STYLE) -> str:
    """Canonical text of an index expression in the given style."""
    return _rendered(sympy.sympify(expr), style)


# Memoized: a dump prints the same few index expressions thousands of times
# (every load of a long graph's repeated cells), each a walk over sympy terms.
@functools.lru_cache(maxsize=65536)
def _rendered(expr, style: IndexStyle) -> str:
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Symbol:
        return style.symbol.format(expr.name)
    if isinstance(expr, sympy.Add):
        return _render_sum(expr, style)
    if isinstance(expr, sympy.Mul):
        coeff, rest = expr.as_coeff_Mul()
        body = _render_product(rest, style)
        if coeff == 1:
            return body
        if coeff == -1:
            return "-" + body
        return f"{int(coeff)}*{body}"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        base = _render_factor(expr.base, style)
        return "*".join([base] * int(expr.exp))
    if isinstance(expr, FloorDiv):
        return style.floordiv.format(*(render_index(a, style) for a in expr.args))
    if isinstance(expr, Mod):
        return style.mod.format(*(render_index(a, style) for a in expr.args))
    if isinstance(expr, (sympy.Min, sympy.Max)):
        # sympy keeps Min/Max arguments in a canonical order and flattened;
        # nested pairs print back to the same flattened expression.
        template = style.min if isinstance(expr, sympy.Min) else style.max
        args = [render_index(a, style) for a in expr.args]
        text = args[-1]
        for a in reversed(args[:-1]):
            text = template.format(a, text)
        return text
    raise ValueError(f"not an index expression: {expr}")


def _term_key(term):
    coeff, rest = term.as_coeff_Mul()
    if rest == 1:
        return (1, [], int(coeff))
    return (0, _natural_key(render_index(rest)), int(coeff))


def _render_sum(expr, style) -> str:
    out = ""
    for k, term in enumerate(sorted(expr.args, key=_term_key)):
        text = render_index(term, style)
        if k == 0:
            out = text
        elif text.startswith("-"):
            out += " - " + text[1:]
        else:
            out += " + " + text
    return out


def _render_factor(expr, style) -> str:
    text = render_index(expr, style)
    return f"({text})" if isinstance(expr, sympy.Add) else text


def _render_product(expr, style) -> str:
    if not isinstance(expr, sympy.Mul):
        return _render_factor(expr, style)
    factors = sorted(expr.args, key=lambda f: _natural_key(render_index(f)))
    return "*".join(_render_factor(f, style) for f in factors)


def index_symbols(expr) -> set[str]:
    return {s.name for s in sympy.sympify(expr).free_symbols}


def index_magnitude(expr, ranges: dict[str, int]) -> int:
    """A bound on the magnitude of every value computed on the way to `expr`
    (each partial sum and product, each operand of a division): kernels
    compute indices in int64, so an index is only safe when this is below
    2**63. Variables range over `0 <= v < ranges[v]`."""
    expr = sympy.sympify(expr)
    if expr.is_Integer:
        return abs(int(expr))
    if expr.is_Symbol:
        return max(ranges.get(expr.name, 1) - 1, 0)
    parts = [index_magnitude(a, ranges) for a in expr.args]
    if isinstance(expr, sympy.Add):
        return sum(parts)
    if isinstance(expr, sympy.Mul):
        return math.prod(parts)
    if isinstance(expr, sympy.Pow):
        return parts[0] ** int(expr.exp)
    return max(parts)  # floordiv, mod, min, max


def index_bounds(expr, ranges: dict[str, int]) -> tuple[int, int]:
    """Inclusive (low, high) of an index expression over `0 <= var < range`."""
    expr = sympy.sympify(expr)
    if expr.is_Integer:
        return int(expr), int(expr)
    if expr.is_Symbol:
        return 0, max(ranges[expr.name] - 1, 0)
    if isinstance(expr, sympy.Add):
        parts = [index_bounds(a, ranges) for a in expr.args]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(expr, (sympy.Mul, sympy.Pow)):
        factors = expr.args if isinstance(expr, sympy.Mul) else [expr.base] * int(expr.exp)
        lo, hi = 1, 1
        for f in factors:
            flo, fhi = index_bounds(f, ranges)
            corners = [lo * flo, lo * fhi, hi * flo, hi * fhi]
            lo, hi = min(corners), max(corners)
        return lo, hi
    if isinstance(expr, FloorDiv):
        (alo, ahi), (blo, bhi) = (index_bounds(a, ranges) for a in expr.args)
        if blo <= 0:
            raise ValueError("floordiv by a value that is not positive")
        return min(alo // blo, alo // bhi), max(ahi // blo, ahi // bhi)
    if isinstance(expr, Mod):
        (_, _), (blo, bhi) = (index_bounds(a, ranges) for a in expr.args)
        if blo <= 0:
            raise ValueError("mod by a value that is not positive")
        return 0, bhi - 1
    if isinstance(expr, (sympy.Min, sympy.Max)):
        parts = [index_bounds(a, ranges) for a in expr.args]
        pick = min if isinstance(expr, sympy.Min) else max
        return pick(p[0] for p in parts), pick(p[1] for p in parts)
    raise ValueError(f"not an index expression: {expr}")


def non_overlapping(shape, strides) -> bool:
    """Whether distinct indices always map to distinct storage offsets (each
    dimension, by increasing stride, steps past all the ones inside it)."""
    dims = sorted((st, size) for size, st in zip(shape, strides) if size > 1)
    reach = 0  # the largest offset reachable with the dimensions seen so far
    for st, size in dims:
        if st <= reach:
            return False
        reach += st * (size - 1)
    return True


def contiguous_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for size in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(int(size), 1)
    return tuple(reversed(strides))


def storage_span(shape, strides) -> int:
    """The elements a strided layout spans, from its first to its last (0
    for a tensor with no elements)."""
    return 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0


def strided_index(variables, strides, offset: int = 0):
    """The storage offset of element `variables` under `strides`."""
    return _strided_index(tuple(variables), tuple(strides), offset)


@functools.lru_cache(maxsize=65536)
def _strided_index(variables: tuple, strides: tuple, offset: int):
    """strided_index, remembered: sympy's arithmetic is slow, and the
    fusion pass and its checks ask for each node's write index many times
    (measured: docs/design-notes.md, "Pipeline")."""
    return sympy.Integer(offset) + sum(
        (sympy.Integer(s) * v for v, s in zip(variables, strides)), sympy.Integer(0)
    )


def simplify_index(expr, ranges: dict[str, int]):
    """Drop the floor divisions and modulos that the variables' ranges make
    trivial, as Inductor's range-aware simplification of indexing does:
    `floordiv(37*i0 + i1, 37)` is `i0` and `mod(37*i0 + i1, 37)` is `i1` when
    `i1 < 37`. Variables range over `0 <= v < ranges[v]`; a size-1 variable
    is 0. Expressions with variables outside `ranges` keep their divisions."""
    expr = sympy.sympify(expr)
    names = sorted(s.name for s in expr.free_symbols if s.name in ranges)
    return _simplified(expr, tuple((name, ranges[name]) for name in names))


# Memoized on the expression and the ranges of its own variables (nothing
# else affects the result): inlining re-simplifies the same few indices of
# each node once per consumer, and long graphs repeat whole cells.
@functools.lru_cache(maxsize=65536)
def _simplified(expr, ranges: tuple[tuple[str, int], ...]):
    sizes = dict(ranges)
    zero = {s: sympy.Integer(0) for s in expr.free_symbols if sizes.get(s.name) == 1}
    return _simplify(expr.xreplace(zero) if zero else expr, sizes)


def _simplify(expr, ranges):
    if not expr.args:
        return expr
    args = [_simplify(a, ranges) for a in expr.args]
    if isinstance(expr, (FloorDiv, Mod)) and args[1].is_Integer and args[1] > 0:
        divisor = int(args[1])
        # floordiv(d*q + r, d) = q + floordiv(r, d) and mod(d*q + r, d) = mod(r, d)
        # for integer q; both vanish into q and r when 0 <= r < d.
        quotient, rest = _split_multiples(args[0], divisor)
        try:
            lo, hi = index_bounds(rest, ranges)
        except (KeyError, ValueError):
            lo, hi = -1, -1
        in_range = 0 <= lo and hi < divisor
        if in_range:
            return quotient if isinstance(expr, FloorDiv) else rest
        scaled = _common_factor(rest, divisor, ranges)
        if scaled is not None:
            # floordiv(g*x + r, g*b) = floordiv(x, b) and mod(g*x + r, g*b) =
            # g*mod(x, b) + r for integer x and 0 <= r < g (a view that splits
            # a dimension of a reshaped buffer: floordiv(1024*i0 + i1, 131072)
            # with i1 < 1024 is floordiv(i0, 128)).
            g, x, r = scaled
            inner = _simplify(type(expr)(x, divisor // g), ranges)
            return quotient + inner if isinstance(expr, FloorDiv) else _recombine([g * inner, r])
        if isinstance(expr, FloorDiv):
            return quotient + FloorDiv(rest, divisor)
        return Mod(rest, divisor)
    if isinstance(expr, sympy.Add):
        return _recombine(args)
    return expr.func(*args)


def _common_factor(expr, divisor: int, ranges):
    """(g, x, r) with expr == g*x + r, g > 1 dividing `divisor`, x an integer
    expression and 0 <= r < g over the ranges; the largest such g; else None."""
    terms = sympy.Add.make_args(expr)
    coeffs = [term.as_coeff_Mul()[0] for term in terms]
    if not all(c.is_Integer for c in coeffs):
        return None
    for g in sorted({math.gcd(divisor, int(c)) for c in coeffs}, reverse=True):
        if g <= 1:
            continue
        multiples = [t for t, c in zip(terms, coeffs) if int(c) % g == 0]
        rest = sympy.Add(*(t for t, c in zip(terms, coeffs) if int(c) % g != 0))
        try:
            lo, hi = index_bounds(rest, ranges)
        except (KeyError, ValueError):
            continue
        if multiples and 0 <= lo and hi < g:
            return g, sympy.expand(sympy.Add(*multiples) / g), rest
    return None


def _recombine(terms):
    """k*d*floordiv(a, d) + k*mod(a, d) is k*a: a reshape's split index
    joined again (as Inductor's simplify_loops merges dimensions)."""
    terms = list(terms)
    for j, term in enumerate(terms):
        k_mod, mod = term.as_coeff_Mul()
        if not isinstance(mod, Mod) or not mod.args[1].is_Integer:
            continue
        a, d = mod.args
        for k, other in enumerate(terms):
            k_div, div = other.as_coeff_Mul()
            if k != j and isinstance(div, FloorDiv) and div.args == (a, d) and k_div == k_mod * d:
                rest = [t for n, t in enumerate(terms) if n not in (j, k)]
                return _recombine(rest + [k_mod * a])
    return sympy.Add(*terms)


def _split_multiples(expr, divisor: int):
    """(q, r) with expr == divisor*q + r: terms whose coefficient `divisor`
    divides go to q, the constant splits as Python's divmod, the rest to r."""
    quotient, rest = sympy.Integer(0), sympy.Integer(0)
    for term in sympy.Add.make_args(expr):
        coeff, body = term.as_coeff_Mul()
        if coeff.is_Integer and int(coeff) % divisor == 0:
            quotient += sympy.Integer(int(coeff) // divisor) * body
        elif body == 1 and coeff.is_Integer:
            q, r = divmod(int(coeff), divisor)
            quotient += q
            rest += r
        else:
            rest += term
    return quotient, rest


def eval_index(expr, env: dict):
    """An index expression as an int64 tensor (broadcast over the loop grid):
    `env` maps each loop variable's name to its tensor."""
    import torch  # here, not at the top: the parser and printer need no torch

    if expr.is_Integer:
        return torch.tensor(int(expr), dtype=torch.int64)
    if expr.is_Symbol:
        return env[expr.name]
    if expr.is_Add:
        out = eval_index(expr.args[0], env)
        for a in expr.args[1:]:
            out = out + eval_index(a, env)
        return out
    if expr.is_Mul:
        out = eval_index(expr.args[0], env)
        for a in expr.args[1:]:
            out = out * eval_index(a, env)
        return out
    if expr.is_Pow:
        return eval_index(expr.base, env) ** int(expr.exp)
    if isinstance(expr, FloorDiv):
        a, b = (eval_index(x, env) for x in expr.args)
        return torch.div(a, b, rounding_mode="floor")
    if isinstance(expr, Mod):
        a, b = (eval_index(x, env) for x in expr.args)
        return torch.remainder(a, b)
    if isinstance(expr, (sympy.Min, sympy.Max)):
        pick = torch.minimum if isinstance(expr, sympy.Min) else torch.maximum
        out = eval_index(expr.args[0], env)
        for a in expr.args[1:]:
            out = pick(out, eval_index(a, env))
        return out
    raise ValueError(f"cannot evaluate index {expr}")
