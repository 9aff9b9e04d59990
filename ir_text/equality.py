"""Structural equality of modules: the same IR up to value names.

`parse(print_ir(m))` must be structurally equal to `m` (DESIGN.md, principle
2): printing loses nothing. Values are matched one to one as they are met
(a bijection), so two modules that differ only in naming compare equal.
Source positions are ignored.
"""

from __future__ import annotations

import dataclasses
import math

import sympy

from .model import Value


class _Matcher:
    def __init__(self):
        self.forward: dict[int, Value] = {}
        self.backward: dict[int, Value] = {}

    def values(self, a: Value, b: Value) -> bool:
        if id(a) in self.forward or id(b) in self.backward:
            return self.forward.get(id(a)) is b and self.backward.get(id(b)) is a
        self.forward[id(a)] = b
        self.backward[id(b)] = a
        return self.equal(a.type, b.type)

    def equal(self, a, b) -> bool:
        if isinstance(a, Value) or isinstance(b, Value):
            return isinstance(a, Value) and isinstance(b, Value) and self.values(a, b)
        if type(a) is not type(b):
            return False
        if isinstance(a, float):
            return (math.isnan(a) and math.isnan(b)) or a == b
        if isinstance(a, sympy.Basic):
            return a == b
        if dataclasses.is_dataclass(a):
            return all(
                self.equal(getattr(a, f.name), getattr(b, f.name))
                for f in dataclasses.fields(a)
                if f.name != "pos" and not f.name.endswith("_pos")
            )
        if isinstance(a, (list, tuple)):
            return len(a) == len(b) and all(self.equal(x, y) for x, y in zip(a, b))
        return a == b


def structurally_equal(a, b) -> bool:
    """Whether two modules (or any IR objects) are the same up to value names."""
    return _Matcher().equal(a, b)
