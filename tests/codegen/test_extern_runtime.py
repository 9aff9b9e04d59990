"""The runtime's extern calls (codegen/runtime.py): an attention bias whose
rows are not aligned reaches the ATen kernel padded, as eager's sdpa pads it,
and an aligned or broadcast one as it is. The attention kernels themselves
run on the GPU only (tests/gpu/gpu_capture.py)."""

from __future__ import annotations

import pytest
import torch

from codegen import runtime


@pytest.mark.parametrize("shape", [(2, 3, 5, 297), (7, 33), (4, 1)])
def test_unaligned_rows_are_padded_and_keep_their_values(shape):
    bias = torch.randn(shape)
    got = runtime.aligned_rows(bias)
    assert got.data_ptr() != bias.data_ptr()
    assert got.stride(-1) == 1 and all(s % runtime.ALIGNMENT == 0 for s in got.stride()[:-1])
    assert torch.equal(got, bias)


@pytest.mark.parametrize(
    "bias",
    [torch.randn(2, 3, 5, 32), torch.randn(1, 1, 5, 16).expand(2, 3, 5, 16), torch.randn(3), None, 2.0],
    ids=["aligned", "broadcast", "one_dim", "none", "number"],
)
def test_aligned_broadcast_and_other_arguments_pass_as_they_are(bias):
    assert runtime.aligned_rows(bias) is bias


def test_the_extern_call_pads_only_the_tables_arguments(monkeypatch):
    seen = []

    class Op:
        def __str__(self):
            return "aten._scaled_dot_product_efficient_attention.default"

        def __call__(self, *args):
            seen.append(args)
            return args[3] + 0

    q = torch.randn(2, 3, 5, 8)
    bias = torch.randn(2, 3, 5, 7)
    (out,) = runtime.extern_call(Op(), [q, q, q, bias, False], {}, [((2, 3, 5, 7), (105, 35, 7, 1))])
    assert seen[0][0] is q and seen[0][3] is not bias and seen[0][3].stride(-2) == runtime.ALIGNMENT
    assert torch.equal(out, bias) and out.stride() == (105, 35, 7, 1)


def test_views_handed_to_extern_calls_are_taken_directly():
    """An `aten.as_strided` extern (a view the plan keeps in the layout it
    asks for) runs as `src.as_strided(...)` in the wrapper, with its
    storage offset, dense or not, of a computed buffer or of an input; the
    results are eager's."""
    import tirc

    def fn(x, w):
        y = x * 2
        return torch.mm(y[3:], w), torch.mm(y[:, 2:7], w[:5]), torch.nn.functional.linear(x, w.t())

    def make():
        return [torch.randn(37, 129), torch.randn(129, 16)]

    torch.manual_seed(0)
    compiled = tirc.compile(fn, make())
    code = compiled.code
    assert ".as_strided([34, 129], [129, 1], 387)" in code  # rows 3.. of y
    assert ".as_strided([37, 5], [129, 1], 2)" in code  # columns 2..6 of y: not dense
    assert "torch.ops.aten.as_strided" not in code
    torch.manual_seed(1)
    fresh = make()
    for got, want in zip(compiled(*fresh), fn(*fresh)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
