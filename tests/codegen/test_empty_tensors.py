"""Tensors with no elements, on both backends, against eager.

A size of 0 leaves nothing to iterate: index unflattening would divide by
it (scheduler/iteration.py, scheduler/inline.py), and a reduction over no
elements must give its start value without reading its input, which may
have no storage (codegen/kernel_plan.py::_empty_reduction; before it, the
Triton kernel loaded the input at a per-row index and crashed the
interpreter).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from matching import assert_matches, compiled

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

PROGRAMS = {
    "pointwise_no_rows": (lambda x: torch.relu(x) * 2, lambda: [torch.randn(0, 37)]),
    "softmax_no_rows": (lambda x: x.softmax(-1), lambda: [torch.randn(0, 37)]),
    "layer_norm_no_rows": (lambda x: F.layer_norm(x, (37,)), lambda: [torch.randn(0, 37)]),
    "sum_over_nothing": (lambda x: x.sum(-1) + 1, lambda: [torch.randn(5, 0)]),
    "mean_over_nothing": (lambda x: x.mean(-1), lambda: [torch.randn(5, 0)]),
    "softmax_over_nothing": (lambda x: x.softmax(-1), lambda: [torch.randn(5, 0)]),
    "centered_over_nothing": (lambda x: (x - x.sum(-1, keepdim=True)) * 2, lambda: [torch.randn(5, 0)]),
    "row_input_and_empty_sum": (
        lambda x, y: x.sum(-1) * y + x.prod(-1),
        lambda: [torch.randn(5, 0), torch.randn(5)],
    ),
    "any_all_over_nothing": (lambda x: (x > 0).any(-1) | (x > 0).all(-1), lambda: [torch.randn(5, 0)]),
    "int_sum_over_nothing": (lambda x: x.sum(-1), lambda: [torch.randint(0, 5, (5, 0))]),
    "sum_of_no_rows": (lambda x: x.sum(0, keepdim=True) * x.sum(), lambda: [torch.randn(0, 7)]),
    "empty_middle_dim": (lambda x, y: (x * y).sum(1), lambda: [torch.randn(3, 0, 5), torch.randn(3, 0, 5)]),
    "broadcast_to_empty": (lambda x, y: x + y, lambda: [torch.randn(0, 1), torch.randn(1, 5)]),
    "cat_with_empty": (lambda x, y: torch.cat([x, y]).exp(), lambda: [torch.randn(0, 5), torch.randn(3, 5)]),
    # An op whose results are all empty gets no body (lower.py): take's
    # index into an empty input had no extent and failed the verifier.
    "take_from_empty": (
        lambda x, i: torch.take(x, i) + 1,
        lambda: [torch.randn(0), torch.zeros(0, dtype=torch.long)],
    ),
    "index_select_from_empty": (
        lambda x, i: x.index_select(0, i).sum(0),
        lambda: [torch.randn(0, 3), torch.zeros(0, dtype=torch.long)],
    ),
    # Views of an empty buffer at an offset (slices) are copies of nothing;
    # as views they failed the verifier's bounds check.
    "unravel_index_of_nothing": (
        lambda i: torch.unravel_index(i, (10, 3, 5)),
        lambda: [torch.zeros(0, dtype=torch.long)],
    ),
    "matmul_over_nothing": (lambda a, b: a @ b + 1, lambda: [torch.randn(3, 0), torch.randn(0, 4)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_empty_tensor_program_matches_eager(backend, name):
    fn, make_inputs = PROGRAMS[name]
    _, actual, expected = compiled(fn, make_inputs, backend)
    assert_matches(actual, expected)
