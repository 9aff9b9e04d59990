"""The OpInfo sweep's bounded CI subset: common ops, two samples each, must compile on
the cpp backend and match eager (lowered, or through an ATen fallback).

The full sweep is `make opinfo` (tests/opinfo/sweep.py, report in docs/ops.md).
"""

from __future__ import annotations

import functools

import pytest

from .sweep import float32_ops, run_op

SAMPLES = 2

# OpInfo names (name.variant where the OpInfo has variants).
COMMON_OPS = (
    "add",
    "mul",
    "sub",
    "div.no_rounding_mode",
    "neg",
    "exp",
    "log",
    "sigmoid",
    "tanh",
    "nn.functional.relu",
    "nn.functional.gelu",
    "where",
    "clamp",
    "sum",
    "mean",
    "amax",
    "argmax",
    "var",
    "cumsum",
    "softmax",
    "log_softmax",
    "nn.functional.layer_norm",
    "cat",
    "transpose",
    "permute",
    "reshape",
    "gather",
    "index_select",
    "nn.functional.max_pool2d",
    "mm",
    "matmul",
)


@functools.cache
def _ops():
    return float32_ops()


@pytest.mark.parametrize("name", COMMON_OPS)
def test_common_op_matches_eager(name):
    result = run_op(_ops()[name], samples=SAMPLES)
    assert result.status in ("lowered", "fallback"), f"{name} is {result.status}: {result.reason}"
    assert result.samples > 0
