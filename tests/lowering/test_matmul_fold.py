"""bmm of a matrix broadcast over the batch runs as one mm over the batch's
rows (lowering/matmul.py), as eager's matmul folds it, instead of copying
the matrix once per batch element: the lower dump shows `aten.mm` and no
copy of the matrix, and the result matches eager and the reference
interpreter, at odd sizes, in several dtypes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import tirc
from ir_text import parse
from lowering import interpret

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.bfloat16: 3e-2}


def externs(text: str) -> list[str]:
    return [line.split(" = extern ")[1].split("(")[0] for line in text.splitlines() if " = extern " in line]


def loop_numels(text: str) -> list[int]:
    """Elements of each loop node of a lower dump (from its type, `f32[a, b]`)."""
    sizes = []
    for line in text.splitlines():
        if " = loop." in line:
            shape = line.rsplit(" : ", 1)[1].split("[", 1)[1].split("]", 1)[0]
            n = 1
            for s in shape.split(","):
                n *= int(s) if s.strip() else 1
            sizes.append(n)
    return sizes


def broadcast_weight(x, w):
    """x sequence-first, permuted: its rows are not a view of a matrix."""
    return torch.bmm(x.permute(1, 0, 2), w.t().expand(x.shape[1], *w.t().shape))


def broadcast_first(w, x):
    return torch.bmm(w.expand(x.shape[0], *w.shape), x)


def check(fn, args, tmp_path, backend="cpp"):
    program = tirc.compile(fn, args, backend=backend, dump_after="lower", dump_dir=tmp_path)
    lower = (tmp_path / "02-lower.tir").read_text()
    fresh = [torch.randn_like(a) for a in args]
    want = fn(*fresh)
    tol = TOL[want.dtype]
    torch.testing.assert_close(program(*fresh), want, rtol=tol, atol=tol)
    (got,) = interpret(parse(lower, "02-lower.tir"), fresh)
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    return lower


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_broadcast_matrix_folds_into_one_mm(tmp_path, dtype, backend):
    x, w = torch.randn(37, 5, 129, dtype=dtype), torch.randn(301, 129, dtype=dtype)
    lower = check(broadcast_weight, [x, w], tmp_path, backend)
    assert externs(lower).count("aten.mm.default") == 1 and "aten.bmm.default" not in externs(lower)
    assert max(loop_numels(lower), default=0) < 5 * 129 * 301  # no copy of w per batch element


def test_a_broadcast_first_operand_stays_a_bmm(tmp_path):
    lower = check(broadcast_first, [torch.randn(7, 37), torch.randn(5, 37, 129)], tmp_path)
    assert "aten.bmm.default" in externs(lower)


def test_sequence_first_attention_copies_no_weight_per_batch_element(tmp_path):
    """nn.MultiheadAttention, sequence first: its in-projection made a
    [batch, E, 3E] copy of the weight before the fold."""
    torch.manual_seed(3)
    attention = nn.MultiheadAttention(48, 4).eval()
    x = torch.randn(9, 37, 48)
    with torch.no_grad():
        program = tirc.compile(
            lambda q: attention(q, q, q, need_weights=False)[0], [x], dump_after="lower", dump_dir=tmp_path
        )
        lower = (tmp_path / "02-lower.tir").read_text()
        assert max(loop_numels(lower), default=0) < 37 * 48 * 3 * 48
        fresh = torch.randn_like(x)
        torch.testing.assert_close(program(fresh), attention(fresh, fresh, fresh, need_weights=False)[0])
