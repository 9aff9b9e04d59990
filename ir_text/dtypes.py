"""The dtypes of the IR: short names in the text, torch dtypes in memory."""

from __future__ import annotations

import torch

from .dtype_names import FLOAT_DTYPES, INT_DTYPES, IR_DTYPES, is_float  # noqa: F401 (re-exported)

TORCH_DTYPES: dict[str, torch.dtype] = {
    "b8": torch.bool,
    "u8": torch.uint8,
    "i8": torch.int8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
}

DTYPE_NAMES: dict[torch.dtype, str] = {v: k for k, v in TORCH_DTYPES.items()}


def int_range(dtype: str) -> tuple[int, int]:
    """The least and greatest value of an integer dtype."""
    info = torch.iinfo(to_torch(dtype))
    return info.min, info.max


def wrapped_int(value: int, dtype: str) -> int:
    """`value` wrapped into the integer dtype's range, as a C cast (and
    PyTorch's conversion of a Python int operand) wraps it: 300 as u8 is 44."""
    low, high = int_range(dtype)
    return (value - low) % (high - low + 1) + low


def to_torch(dtype: str) -> torch.dtype:
    return TORCH_DTYPES[dtype]


def from_torch(dtype: torch.dtype) -> str | None:
    """The IR name of a torch dtype, or None when the IR has no such dtype."""
    return DTYPE_NAMES.get(dtype)
