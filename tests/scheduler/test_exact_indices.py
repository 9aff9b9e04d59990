"""A nearest upsample's index, `(arange(out) * scale).to(int64)`, is an exact
function of the loop variables when every step is exact: after inlining the
load reads at `floordiv(i, 2)`, with no indirect op left (scheduler/
exact_indices.py). A scale that rounds (0.7) stays indirect. Both against
eager PyTorch on fresh inputs at odd sizes, on both backends (Triton
interpreted)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tirc


def _indirect_ops(program) -> int:
    return sum(op.op == "indirect" for n in program.compiled.module.nodes for op in getattr(n, "body", ()))


def _upsample(x):
    return F.interpolate(torch.relu(x), scale_factor=2, mode="nearest") * 2.0


def _upsample_3d(x):
    return F.interpolate(x, scale_factor=(2, 2, 2), mode="nearest") + 1.0


def _resize(x):
    return F.interpolate(x, size=(10, 9), mode="nearest") - 1.0


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize(
    "fn, shape, indirect",
    [(_upsample, (2, 3, 7, 5), 0), (_upsample_3d, (1, 2, 3, 5, 7), 0), (_resize, (2, 3, 7, 5), 1)],
    # nearest_resize on Triton also checks the bounds check of an index along one axis of a 2-D tile
    ids=["nearest_x2", "nearest_3d", "nearest_resize"],
)
def test_exact_upsample_indices_are_direct(backend, fn, shape, indirect):
    program = tirc.compile(fn, [torch.randn(shape)], backend=backend)
    if indirect:
        assert _indirect_ops(program) >= indirect  # 7 -> 10 scales by 0.7, which rounds
    else:
        assert _indirect_ops(program) == 0
    fresh = torch.randn(shape)
    torch.testing.assert_close(program(fresh), fn(fresh))


def test_an_index_that_may_leave_its_range_stays_checked():
    """arange(n) + 3 indexes a dimension of n: the last three are out of bounds (an error, as eager's)."""

    def fn(x):
        return x[:, torch.arange(x.shape[1]) + 3]

    x = torch.randn(2, 9)
    program = tirc.compile(lambda x: x[:, torch.arange(6) + 3], [x])
    assert _indirect_ops(program) == 0  # 3 .. 8 lies in [0, 9)
    torch.testing.assert_close(program(x), x[:, 3:9])
    program = tirc.compile(fn, [x])
    assert _indirect_ops(program) == 1
    with pytest.raises(IndexError, match="out of bounds"):
        program(x)
