"""The IR's dtype names and their kinds, without torch (the parser and the
printer need only these; dtypes.py maps them to torch dtypes)."""

from __future__ import annotations

IR_DTYPES = ("b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")
FLOAT_DTYPES = frozenset({"f16", "bf16", "f32", "f64"})
INT_DTYPES = frozenset({"u8", "i8", "i16", "i32", "i64"})


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES
