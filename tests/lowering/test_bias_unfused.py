"""An addmm's bias moves into the loops that read its result
(lowering/bias.py): the lower dump shows `aten.mm` and a pointwise add, the
add fuses with its readers, and the result matches eager and the reference
interpreter. Where the result leaves the loops (returned, read by another
matmul) or the dtype is a half type, addmm stays."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tirc
from ir_text import parse
from lowering import interpret

# The Triton interpreter warns about lanes that are masked off on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def externs(text: str) -> list[str]:
    return [line.split(" = extern ")[1].split("(")[0] for line in text.splitlines() if " = extern " in line]


def compiled(fn, args, tmp_path, backend="cpp"):
    program = tirc.compile(fn, args, backend=backend, dump_after="lower,fusion", dump_dir=tmp_path)
    return program, (tmp_path / "02-lower.tir").read_text(), (tmp_path / "04-fusion.tir").read_text()


class Block(torch.nn.Module):
    """Linears on a 3-d input (viewed as 2-d for the matmul) read by a GELU,
    a residual add and a row reduction."""

    def __init__(self, d=129, hidden=37, dtype=torch.float32):
        super().__init__()
        self.up = torch.nn.Linear(d, hidden).to(dtype)
        self.down = torch.nn.Linear(hidden, d).to(dtype)

    def forward(self, x):
        h = F.gelu(self.up(x))
        y = x + self.down(h)
        return y.sum(-1)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_bias_joins_the_reading_loops(tmp_path, backend, dtype, monkeypatch):
    monkeypatch.setenv("TIRC_AUTOTUNE", "0")  # ATen's matmul, whatever times faster here
    torch.manual_seed(0)
    model = Block(dtype=dtype).eval()
    program, lower, fusion = compiled(model, [torch.randn(3, 5, 129, dtype=dtype)], tmp_path, backend)
    assert "aten.addmm.default" not in externs(lower)
    assert externs(lower).count("aten.mm.default") == 2
    assert lower.count('{origin = "aten.addmm.default"}') == 2
    # Each bias add is in a kernel with its reader: no kernel holds an add alone.
    adds = [line.split(" = ")[0] for line in fusion.splitlines() if '"aten.addmm.default"' in line]
    kernels = [line for line in fusion.splitlines() if line.strip().startswith("kernel @")]
    for add in adds:
        (kernel,) = [k for k in kernels if add + "," in k]
        assert "fuse(" in kernel
    torch.manual_seed(1)
    fresh = torch.randn(3, 5, 129, dtype=dtype)
    with torch.no_grad():
        want = model(fresh)
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(program(fresh), want, rtol=tol, atol=tol)
    (got,) = interpret(parse(lower, "02-lower.tir"), [t.detach() for _, t in program.lifted] + [fresh])
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_broadcast_biases_of_any_rank(tmp_path):
    def fn(x, w, row_bias, full_bias):
        return torch.relu(torch.addmm(row_bias, x, w)) + torch.addmm(full_bias, x, w).exp()

    def inputs():
        return [torch.randn(37, 16), torch.randn(16, 129), torch.randn(1, 129), torch.randn(37, 129)]

    torch.manual_seed(0)
    program, lower, _ = compiled(fn, inputs(), tmp_path)
    assert externs(lower) == ["aten.mm.default", "aten.mm.default"]
    torch.manual_seed(1)
    fresh = inputs()
    torch.testing.assert_close(program(*fresh), fn(*fresh), rtol=1e-5, atol=1e-5)


def test_addmm_stays_where_its_result_leaves_the_loops(tmp_path):
    def fn(x, w, b, w2, h):
        returned = torch.addmm(b, x, w)  # returned as is
        into_matmul = torch.addmm(b, x, w) @ w2  # read by another matmul
        scaled = torch.addmm(b, x, w, beta=0.5).relu()  # beta: not a plain add
        half = torch.addmm(b.bfloat16(), h, w.bfloat16()).relu()  # a second rounding in bf16
        return returned, into_matmul, scaled, half

    def inputs():
        return [torch.randn(37, 16), torch.randn(16, 129), torch.randn(129), torch.randn(129, 5)]

    torch.manual_seed(0)
    args = inputs()
    h = torch.randn(37, 16).bfloat16()
    program, lower, _ = compiled(fn, [*args, h], tmp_path)
    assert externs(lower).count("aten.addmm.default") == 4
    assert externs(lower).count("aten.mm.default") == 1  # the @ w2
    for got, want in zip(program(*args, h), fn(*args, h)):
        tol = 2e-2 if want.dtype == torch.bfloat16 else 1e-5
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)
