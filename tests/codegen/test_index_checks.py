"""Indirect indices out of range: eager PyTorch raises on the CPU, and so do
tirc's C++ kernels (an IndexError after the kernel, which read 0 in the bad
index's place instead of memory outside the buffer) and the reference
interpreter. The Triton backend does not check (docs/design-notes.md)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import lowering
import tirc
from ir_text import parse

W = torch.randn(17, 8)

# name: (program of (w, index), an index tensor with one bad entry, its value)
CASES = {
    "index_past_the_end": (lambda w, i: w[i] * 2, [1, 20, 3], 20),
    "index_before_minus_size": (lambda w, i: w[i] * 2, [1, -18, 3], -18),
    "index_of_the_inner_dim": (lambda w, i: w[:, i] + 1, [1, 8], 8),
    "gather": (lambda w, i: torch.gather(w, 1, i.expand(17, -1)), [0, 9], 9),
    "embedding": (lambda w, i: F.embedding(i, w).sum(1), [0, 17, 4], 17),
    "index_select_then_sum": (lambda w, i: w.index_select(0, i).sum(1), [0, 170], 170),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpp_kernel_raises_on_an_index_out_of_range(name, tmp_path):
    fn, bad, value = CASES[name]
    bad = torch.tensor(bad)
    good = bad.clamp(0, 7)
    compiled = tirc.compile(fn, [W, good], backend="cpp", dump_after="lower", dump_dir=tmp_path)
    torch.testing.assert_close(compiled(W, good), fn(W, good))
    with pytest.raises((IndexError, RuntimeError)):
        fn(W, bad)
    with pytest.raises(IndexError, match=f"index {value} is out of bounds for a dimension of size") as info:
        compiled(W, bad)
    assert "test_index_checks.py:" in str(info.value), info.value
    # The same inputs through the reference interpreter.
    module = parse((tmp_path / "02-lower.tir").read_text(), "02-lower.tir")
    torch.testing.assert_close(lowering.interpret(module, [W, good])[0], fn(W, good))
    with pytest.raises(IndexError, match=f"index {value} is out of bounds"):
        lowering.interpret(module, [W, bad])


def test_wrapped_negative_indices_still_match_eager():
    i = torch.tensor([[-17, 16], [-1, 0]])
    compiled = tirc.compile(lambda w, i: w[i] * 2, [W, i], backend="cpp")
    torch.testing.assert_close(compiled(W, i), W[i] * 2)
