"""Capture corner cases: one tensor passed twice, tensors created inside the
program, contradictory API arguments."""

from __future__ import annotations

import pytest
import torch

import tirc


def test_same_tensor_passed_twice_traces_two_inputs():
    x = torch.randn(3, 4)
    compiled = tirc.compile(lambda a, b: a * b + a, [x, x])
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(compiled(a, b), a * b + a)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_program_creating_tensors_compiles(backend):
    def fn(x):
        return x + torch.ones(3, 4) * 2 - torch.full((4,), 0.5)

    compiled = tirc.compile(fn, [torch.randn(3, 4)], backend=backend)
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), fn(x))


def test_contradictory_backend_is_an_error():
    with pytest.raises(tirc.TircError, match="contradicts"):
        tirc.compile(torch.relu, [torch.randn(3)], backend="cpp", options={"backend": "triton"})


def test_dump_after_without_dump_dir_is_an_error():
    with pytest.raises(tirc.TircError, match="dump_dir"):
        tirc.compile(torch.relu, [torch.randn(3)], dump_after="all")
