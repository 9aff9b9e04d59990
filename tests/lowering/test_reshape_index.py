"""A reshape of a buffer indexes its storage directly (lowering/tensors.py):
dimensions laid out as one run merge into their flat index times the run's
stride, with no division or modulo; other blocks keep them. Checked against
eager, with a size-1 dimension of any stride inside a run."""

from __future__ import annotations

import pytest
import torch

import tirc


def test_a_contiguous_flatten_loads_without_division():
    fn = lambda x: torch.logsumexp(x.flatten(), 0)  # noqa: E731
    x = torch.randn(3, 37, 5, 7)
    program = tirc.compile(fn, [x], backend="cpp")
    assert "p_x[r0]" in program.code and "tirc_floordiv<int64_t>(r0" not in program.code
    torch.testing.assert_close(program(x), fn(x))


@pytest.mark.parametrize("unit_stride", [0, 1, 999])
def test_a_size_one_dimension_inside_a_run_adds_nothing(unit_stride):
    """The run's stride is its innermost dimension of more than one element,
    not a size-1 dimension's (which may be anything)."""
    x = torch.as_strided(torch.randn(1000), (5, 7, 1), (7, 1, unit_stride))
    fn = lambda a: a.reshape(35) * 2  # noqa: E731
    program = tirc.compile(fn, [x], backend="cpp")
    torch.testing.assert_close(program(x), fn(x))


def test_a_transposed_buffer_keeps_division_where_it_is_no_run():
    fn = lambda a: a.t().reshape(-1) + 1  # noqa: E731
    x = torch.randn(37, 129).t()
    program = tirc.compile(fn, [x], backend="cpp")
    torch.testing.assert_close(program(x), fn(x))
