"""The loop-body op set: each op's arity and dtype rule, as one table.

Backends (interpreter, C++, Triton) keep their own tables keyed by the same
names; tests check that every op here has an entry in each of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .dtypes import FLOAT_DTYPES, INT_DTYPES, is_float, to_torch


@dataclass(frozen=True)
class BodyOpDef:
    name: str
    arity: int
    rule: str  # see _RULES in verifier: same, numeric, float, compare, logical, where, cast, ...


def _defs(rule: str, arity: int, names: str) -> dict[str, BodyOpDef]:
    return {n: BodyOpDef(n, arity, rule) for n in names.split()}


BODY_OPS: dict[str, BodyOpDef] = {
    "load": BodyOpDef("load", 1, "load"),
    "store": BodyOpDef("store", 1, "store"),
    "constant": BodyOpDef("constant", 0, "constant"),
    "to_dtype": BodyOpDef("to_dtype", 1, "cast"),
    "where": BodyOpDef("where", 3, "where"),
    # `index [expr]`: the value of an index expression (i64), e.g. for masks.
    "index": BodyOpDef("index", 0, "index"),
    # `%ind0 = indirect(%v) {size = N}`: a loaded integer as an index
    # variable `ind0` in [0, N) (negative values wrap by N, as Python's).
    "indirect": BodyOpDef("indirect", 1, "indirect"),
    # The reduction of a loop.reduction node over its r-variables; ops after
    # it form the epilogue (per output element).
    "reduce": BodyOpDef("reduce", 1, "reduce"),
    # The inclusive scan of a loop.scan node along one of its loop variables.
    "scan": BodyOpDef("scan", 1, "scan"),
    # ATen refuses these on bool (neg, sub: "use ~ or logical_not"; abs,
    # floor, pow, ...: "not implemented for 'Bool'"): rule `numeric`.
    **_defs("numeric", 1, "neg abs floor ceil round trunc"),
    **_defs("same", 1, "sign"),
    **_defs("float", 1, "reciprocal exp exp2 expm1 log log2 log10 log1p sqrt rsqrt"),
    **_defs("float", 1, "sin cos tan asin acos atan sinh cosh tanh sigmoid erf"),
    **_defs("same", 2, "add mul maximum minimum"),
    **_defs("numeric", 2, "sub"),
    **_defs("float", 2, "truediv atan2 copysign"),
    **_defs("numeric", 2, "pow"),
    **_defs("numeric", 2, "floor_divide remainder fmod"),
    **_defs("bitwise", 2, "bitwise_and bitwise_or bitwise_xor"),
    **_defs("bitwise", 1, "bitwise_not"),
    **_defs("compare", 2, "eq ne lt le gt ge"),
    **_defs("logical", 2, "logical_and logical_or logical_xor"),
    **_defs("logical", 1, "logical_not isnan signbit"),
}

# Which operand dtypes a rule accepts (None: any).
ACCEPTS = {
    "same": None,
    "numeric": INT_DTYPES | FLOAT_DTYPES,
    "float": FLOAT_DTYPES,
    "bitwise": INT_DTYPES | {"b8"},
    "compare": None,
    "logical": None,
}


def body_op_takes(name: str, dtype: str) -> bool:
    """Whether body op `name` takes operands of `dtype` (by its rule's ACCEPTS)."""
    accepts = ACCEPTS.get(BODY_OPS[name].rule)
    return accepts is None or dtype in accepts


REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")
SCANS = ("sum", "prod")
# The result dtype of a reduction, from its operand's (None: the same).
REDUCTION_RESULT = {"argmax": "i64", "argmin": "i64", "any": "b8", "all": "b8"}
# Which operand dtypes a reduction takes (absent: any); ATen's argmax and
# argmin refuse bool.
REDUCTION_ACCEPTS = {
    "argmax": INT_DTYPES | FLOAT_DTYPES,
    "argmin": INT_DTYPES | FLOAT_DTYPES,
    "any": frozenset({"b8"}),
    "all": frozenset({"b8"}),
}


def empty_reduction(kind: str, dtype: str):
    """What a reduction over no elements gives: its start value (0 for
    argmax/argmin), as a Python value of `dtype`, the operand's or the
    result's (they differ only where the value does not depend on it)."""
    if kind in ("sum", "any", "argmax", "argmin"):
        value = 0
    elif kind in ("prod", "all"):
        value = 1
    elif is_float(dtype):
        value = -math.inf if kind == "max" else math.inf
    else:
        info = torch.iinfo(to_torch(dtype))
        value = info.min if kind == "max" else info.max
    return bool(value) if dtype == "b8" else float(value) if is_float(dtype) else int(value)
