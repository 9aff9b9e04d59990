"""How a fused node's loop variables map onto its kernel's (scheduler/iteration.py's _match): by the
strides of two accesses of the same element, one to one, a dimension split over several kernel
variables, or several dimensions folded into one; never a mapping that is not a bijection. Each
mapping found is checked by enumerating both iteration spaces."""

from __future__ import annotations

import itertools

import sympy

from ir_text import index_var, simplify_index
from scheduler.iteration import _match


def _v(name):
    return index_var(name)


def _enumerate(mapping, sizes, variables):
    """The node's points (tuples) reached from every kernel point under `mapping`."""
    names = [name for name, _ in variables]
    seen = []
    for point in itertools.product(*(range(n) for _, n in variables)):
        env = {_v(name): value for name, value in zip(names, point)}
        seen.append(tuple(int(sympy.sympify(expr).xreplace(env)) for _, expr in mapping))
    return seen


def _check_bijection(mapping, sizes, variables):
    seen = _enumerate(mapping, sizes, variables)
    assert sorted(seen) == sorted(itertools.product(*(range(n) for n in sizes)))


def test_one_to_one_in_another_order():
    # node (c, p) at strides (1, 5) against kernel (i0 over p at 5, r0 over c at 1)
    variables = (("i0", 4), ("r0", 5))
    mapping = _match(_v("i0") + 5 * _v("i1"), 5 * _v("i0") + _v("r0"), (5, 4), variables)
    assert mapping == ((_v("i0"), _v("r0")), (_v("i1"), _v("i0")))


def test_dimensions_folded_into_one_kernel_variable():
    # a map's (n, c, h, w), NCHW, against a kernel over (n, pixel; channel)
    mine = 6 * 35 * _v("i0") + 35 * _v("i1") + 7 * _v("i2") + _v("i3")
    theirs = 6 * 35 * _v("i0") + _v("i1") + 35 * _v("r0")
    variables = (("i0", 2), ("i1", 35), ("r0", 6))
    mapping = _match(mine, theirs, (2, 6, 5, 7), variables)
    assert mapping is not None
    _check_bijection(mapping, (2, 6, 5, 7), variables)
    env = dict(mapping)
    assert simplify_index(mine.xreplace(env), dict(variables)) == theirs


def test_one_dimension_split_over_kernel_variables():
    # node (n, pixel) against a kernel over (n, h, w)
    mine = 35 * _v("i0") + _v("i1")
    theirs = 35 * _v("i0") + 7 * _v("i1") + _v("i2")
    variables = (("i0", 3), ("i1", 5), ("i2", 7))
    mapping = _match(mine, theirs, (3, 35), variables)
    assert mapping is not None
    _check_bijection(mapping, (3, 35), variables)


def test_overlapping_or_partial_strides_have_no_mapping():
    variables = (("i0", 4), ("i1", 4))
    # the node's two dimensions overlap (a sliding window): not a bijection
    assert _match(_v("i0") + _v("i1"), 4 * _v("i0") + _v("i1"), (4, 4), variables) is None
    # strides that do not divide: 3 is not a digit boundary of 4 x 4
    assert _match(3 * _v("i0") + _v("i1"), 4 * _v("i0") + _v("i1"), (4, 3), variables) is None
    # a kernel variable the access does not move along (a broadcast) cannot be covered
    assert _match(_v("i0"), _v("i1"), (4,), variables) is None
    # a kernel variable outside the level's variables (an r-variable for a row node)
    assert _match(_v("i0"), _v("r0"), (4,), (("i0", 4),)) is None
