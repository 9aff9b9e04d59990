"""Comparing a compiled program's results with eager PyTorch, as the codegen
tests do: same structure, dtype and shape, values within a per-dtype tolerance
(integers and bools exactly)."""

from __future__ import annotations

import torch

import tirc

# (rtol, atol) per dtype; integers and bools must match exactly.
TOL = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


def assert_matches(actual, expected):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, type(expected)), f"{type(actual).__name__} != {type(expected).__name__}"
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_matches(a, e)
        return
    assert isinstance(actual, torch.Tensor), f"got {type(actual).__name__}, expected a tensor"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    rtol, atol = TOL.get(expected.dtype, (0.0, 0.0))
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def compiled(fn, make_inputs, backend: str = "triton"):
    """The program compiled on one set of inputs; its and eager's results on a fresh set."""
    torch.manual_seed(0)
    program = tirc.compile(fn, make_inputs(), backend=backend)
    torch.manual_seed(1)
    fresh = make_inputs()
    return program, program(*[x.clone() for x in fresh]), fn(*fresh)


def check_against_eager(program, fn, make_inputs):
    """`program` (compiled on make_inputs() under seed 0) against eager on a
    fresh set (seed 1); its inputs must come back unchanged."""
    torch.manual_seed(1)
    fresh = make_inputs()
    expected = fn(*[x.clone() for x in fresh])
    assert_matches(program(*fresh), expected)
    torch.manual_seed(1)
    for before, after in zip(make_inputs(), fresh):
        assert torch.equal(before, after), "the compiled code wrote into an input"
