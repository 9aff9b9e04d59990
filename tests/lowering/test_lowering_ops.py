"""Lowered ops against eager PyTorch and the reference interpreter.

Each program is compiled with the C++ backend and run on fresh random inputs
(odd sizes, several dtypes); the lower-stage dump is also evaluated by the
interpreter, and its text must round-trip. `lowered` says whether the
program must compile without any ATen fallback.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import lowering
import tirc
from ir_text import parse, print_ir
from tirc.compare import compare_outputs
from tirc.compiler import capture_program
from tirc.options import Options
from tirc.pipeline import Context, run_stages


def _nan_row(shape):
    x = torch.randn(*shape)
    x[1, 3] = float("nan")
    return x


def _ties(shape):
    return torch.randint(-3, 4, shape).float()


def _idx(high, shape):
    return lambda: torch.randint(0, high, shape)


def _norms(x, w, b):
    ln = F.layer_norm(x, (x.shape[-1],), w, b)
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return ln, rms, F.softmax(x, -1), F.log_softmax(x, 0)


class _BatchNormGroupNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(6)
        self.gn = torch.nn.GroupNorm(3, 6)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        return self.bn(x), self.gn(x)


_TABLE = torch.randn(7)


def _constants(x):
    """A closure's tensor and a tensor built in the program become inputs."""
    return x * _TABLE + torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])


class _Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, batch_first=True)
        self.gru = torch.nn.GRU(8, 16, batch_first=True)
        self.attention = torch.nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x):
        h = self.lstm(x)[0] + self.gru(x)[0]
        return self.attention(h, h, h)[0]


def _in_place_in_decompositions(x, t):
    y = x * 2
    y[:, 0] = 5.0
    z = x + 1
    z[1:4:2] = x[0]
    z[2] = -1.0
    s = torch.select_scatter(x, x[0] * 2, 0, 3) + torch.slice_scatter(x, x[:, :2], 1, 3, 7, 2)
    return F.cross_entropy(x, t, label_smoothing=0.1), y, z, s, F.pad(x[None], (2, 1), "circular")


CASES = {
    "constants": (_constants, lambda: [torch.randn(3, 7)], True),
    "recurrent_and_attention_layers": (_Recurrent, lambda: [torch.randn(2, 5, 8)], True),
    "in_place_ops_of_decompositions": (
        _in_place_in_decompositions,
        lambda: [torch.randn(5, 7), torch.randint(0, 7, (5,))],
        True,
    ),
    "sums": (
        lambda x: (x.sum(), x.sum(0), x.sum(-1, keepdim=True), x.mean((0, 1)), x.prod(1), x.mean(0)),
        lambda: [torch.randn(37, 29) * 0.5],
        True,
    ),
    "int_and_bool_sums": (
        lambda x, m: (x.sum(1), m.sum(0), x.prod(0), m.any(1), m.all(0), (x > 0).any()),
        lambda: [torch.randint(-3, 4, (5, 7), dtype=torch.int32), torch.rand(5, 7) > 0.3],
        True,
    ),
    "max_min_with_nan": (
        lambda x: (x.amax(1), x.amin(0), x.max(1), x.min(0, keepdim=True), x.max()),
        lambda: [_nan_row((6, 37))],
        True,
    ),
    "argmax_ties_and_nan": (
        lambda t, n: (t.argmax(1), t.argmin(0), t.argmax(), n.argmax(1), n.argmin(1, keepdim=True)),
        lambda: [_ties((7, 13)), _nan_row((5, 9))],
        True,
    ),
    "variance": (
        lambda x: (x.var(1), x.std(0, correction=0), torch.var_mean(x, 1, keepdim=True), x.var()),
        lambda: [torch.randn(9, 129) + 3.0],
        True,
    ),
    "scans": (
        lambda x, i: (x.cumsum(1), x.cumprod(0), i.cumsum(0), x.cumsum(-1).sum(0)),
        lambda: [torch.rand(6, 37) + 0.5, torch.randint(-4, 5, (6, 5), dtype=torch.int32)],
        True,
    ),
    "norms_and_softmax": (
        _norms,
        lambda: [torch.randn(6, 129), torch.randn(129), torch.randn(129)],
        True,
    ),
    "batch_and_group_norm": (_BatchNormGroupNorm, lambda: [torch.randn(2, 6, 5, 7)], True),
    "half_precision_reductions": (
        lambda h, b: (h.sum(1), F.softmax(b, -1), h.float().mean(0), b.amax(0)),
        lambda: [torch.randn(5, 37, dtype=torch.float16), torch.randn(4, 129, dtype=torch.bfloat16)],
        True,
    ),
    "gather_and_index_select": (
        lambda x, i, j: (torch.gather(x, 1, i), x.index_select(0, j), x.index_select(1, j)),
        lambda: [torch.randn(9, 11), torch.randint(0, 11, (9, 4)), torch.randint(0, 9, (6,))],
        True,
    ),
    # A 0-d input gathers along a size-1 dimension; a 0-d index into a 1-d
    # input is one element (it read element 0 before).
    "gather_of_a_0d_input_and_with_a_0d_index": (
        lambda s, i, v, j: (torch.gather(s, 0, i) * 2, torch.gather(v, 0, j) + 1),
        lambda: [torch.randn(()), torch.zeros(3, dtype=torch.long), torch.randn(7), torch.randint(1, 7, ())],
        True,
    ),
    # Memory formats are literals of the IR (ir_text.ENUMS); the 3-d one was missing.
    "clones_in_channels_last_formats": (
        lambda x, y: (
            x.clone(memory_format=torch.channels_last) + 1,
            y.clone(memory_format=torch.channels_last_3d) * 2,
        ),
        lambda: [
            torch.randn(2, 3, 4, 5),
            torch.randn(1, 2, 3, 4, 5).to(memory_format=torch.channels_last_3d),
        ],
        True,
    ),
    "embedding_and_advanced_indexing": (
        lambda w, t, u: (F.embedding(t, w), w[t], w[t - 17], w[:, u[:3]], w[t[0, :3], u[:3]]),
        lambda: [torch.randn(17, 8), torch.randint(0, 17, (3, 5)), torch.randint(0, 8, (5,))],
        True,
    ),
    "take_with_negative_and_0d_indices": (
        lambda x, i, j: (torch.take(x, i) * 2, torch.take(x, j), torch.take(x[0, 0], j * 0)),
        lambda: [torch.randn(5, 7), torch.randint(-35, 35, (3, 4)), torch.randint(-35, 35, ())],
        True,
    ),
    "views": (
        lambda x: (
            x.t().reshape(-1)[3:40:3],
            x.view(5, 3, 7).permute(2, 0, 1).flip(0),
            x[1:, ::2].unsqueeze(1).expand(4, 2, 11),
            x.reshape(105).view(7, 15).T.contiguous(),
            x[2],
            torch.split(x, [2, 19], 1)[1] * 2,
            x.diagonal(1).sum() + x[:, :5].diagonal(-1),
            x.unbind(0)[3],
        ),
        lambda: [torch.randn(5, 21)],
        True,
    ),
    "cat_and_pad": (
        lambda x, y: (
            torch.cat([x, y, x], 1),
            torch.cat([x, x * 2], 0),
            F.pad(x, (1, 2, 3, 0), value=-1.5),
            F.pad(y, (-1, 2)),
        ),
        lambda: [torch.randn(3, 7), torch.randn(3, 4)],
        True,
    ),
    "repeat_roll_fmod": (
        lambda x, y, i: (x.repeat(2, 1, 3), torch.roll(x, 2, 1), torch.fmod(x * 5, y), torch.fmod(i, 3)),
        lambda: [torch.randn(3, 7), torch.randn(3, 7), torch.randint(-9, 9, (11,))],
        True,
    ),
    "unfold_copies_isinf_round": (
        lambda x: (
            x.unfold(1, 3, 2) * 2,
            torch.ops.aten.view_copy.default(x, [3, 14]) + 1,
            torch.ops.aten.permute_copy.default(x, [1, 0]) * 3,
            torch.isinf(x / (x - x[0])),
            torch.round(x * 40, decimals=1),
        ),
        lambda: [torch.randn(6, 7)],
        True,
    ),
    "arange_and_fills": (
        lambda x: (x + torch.arange(x.shape[1]), torch.full_like(x, 2.5), torch.zeros_like(x) + 1),
        lambda: [torch.randn(4, 37)],
        True,
    ),
    "max_pool": (
        lambda x: (
            F.max_pool2d(x, 2),
            F.max_pool2d(x, 3, 2, 1, return_indices=True),
            F.max_pool2d(x, 2, 2, 0, 2, ceil_mode=True),
        ),
        lambda: [torch.randn(2, 3, 11, 9)],
        True,
    ),
    "avg_pool": (
        lambda x: (
            F.avg_pool2d(x, 3, 2, 1),
            F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
            F.avg_pool2d(x, 2, ceil_mode=True),
            F.adaptive_avg_pool2d(x, (4, 3)),
            F.adaptive_avg_pool2d(x, 1),
        ),
        lambda: [torch.randn(2, 3, 11, 9)],
        True,
    ),
    "matmul_and_conv_externs": (
        lambda x, w, b, img, k: (
            F.linear(x, w, b),
            x @ w.t(),
            torch.bmm(x[None], w.t()[None]),
            F.conv2d(img, k, padding=1),
        ),
        lambda: [
            torch.randn(5, 8),
            torch.randn(6, 8),
            torch.randn(6),
            torch.randn(1, 2, 7, 7),
            torch.randn(3, 2, 3, 3),
        ],
        True,
    ),
    # CPU kernels whose unused results differ in shape from the meta
    # kernels' (an empty offset2bag; an empty saved mean in eval mode).
    "fallback_embedding_bag_and_batch_norm_legit": (
        lambda w, i, o, x, g: (
            F.embedding_bag(i, w, o, mode="sum"),
            F.embedding_bag(i, w, o, mode="max"),
            torch.ops.aten._native_batch_norm_legit(x, g, g + 1, g * 0 + 0.5, g.abs() + 1, False, 0.1, 1e-5)[
                0
            ],
        ),
        lambda: [
            torch.randn(13, 5),
            torch.randint(0, 13, (11,)),
            torch.tensor([0, 3, 3, 8]),
            torch.randn(4, 3, 7),
            torch.randn(3),
        ],
        False,
    ),
    # Fake tensors give no result shapes for these on the CPU (they depend on
    # the values): the captured types are trusted.
    "fallback_lstsq_and_ctc_loss": (
        lambda a, b, lp, t: (
            torch.linalg.lstsq(a, b).solution * 2,
            F.ctc_loss(lp, t, torch.tensor([7, 7]), torch.tensor([3, 2])),
        ),
        lambda: [
            torch.randn(6, 4),
            torch.randn(6, 2),
            torch.randn(7, 2, 5).log_softmax(-1),
            torch.randint(1, 5, (2, 3)),
        ],
        False,
    ),
    "fallback_sort_topk": (
        lambda x: (torch.sort(x, 1)[0] * 2, torch.topk(x, 3)[1]),
        lambda: [torch.randn(4, 9)],
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowered_program_matches_eager(name, tmp_path):
    fn, make_inputs, lowered = CASES[name]
    if isinstance(fn, type):
        fn = fn().eval()
    inputs = make_inputs()
    compiled = tirc.compile(fn, inputs, backend="cpp", dump_after="lower", dump_dir=tmp_path)
    with torch.no_grad():
        expected = torch.utils._pytree.tree_flatten(fn(*[x.clone() for x in inputs]))[0]
    actual = torch.utils._pytree.tree_flatten(compiled(*[x.clone() for x in inputs]))[0]
    mismatch = compare_outputs(actual, expected)
    assert mismatch is None, mismatch.message
    if lowered:
        assert compiled.fallback_ops == (), compiled.fallback_ops
    else:
        assert compiled.fallback_ops
    # The interpreter, on the lower dump and the real inputs (parameters first).
    text = (tmp_path / "02-lower.tir").read_text()
    module = parse(text, "02-lower.tir")
    assert print_ir(module) == text
    state = [t.detach() for _, t in compiled.lifted]
    reference = lowering.interpret(module, state + [x.clone() for x in inputs])
    mismatch = compare_outputs(reference, expected)
    assert mismatch is None, "interpreter: " + mismatch.message


def test_fallback_ops_are_named_in_the_dump(tmp_path):
    x = torch.randn(4, 9)
    tirc.compile(lambda x: torch.sort(x, 1)[0], [x], dump_after="lower", dump_dir=tmp_path)
    text = (tmp_path / "02-lower.tir").read_text()
    assert "= extern aten.sort.default(" in text
    assert "// aten::sort(Tensor self, int dim=-1, bool descending=False)" in text


def test_mutated_input_is_updated():
    def f(x, y):
        x.mul_(2)
        return x + y

    x, y = torch.randn(5, 3), torch.randn(5, 3)
    compiled = tirc.compile(f, [x.clone(), y])
    mine, theirs = x.clone(), x.clone()
    out = compiled(mine, y)
    expected = f(theirs, y)
    assert torch.equal(out, expected)
    assert torch.equal(mine, theirs)


def _copies_and_views(x, b):
    y = x.clone()
    t = x.t().contiguous()
    e = x.exp().t().contiguous()
    old = b.clone()
    b.add_(1)
    x.mul_(2)
    s = x.sin()
    return y, t, e, x[1:], x.t(), old, b.flip(0), s.clone(), s


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_copies_of_inputs_are_returned_in_storage_of_their_own(backend):
    """clone/contiguous lower as views; their results must still neither
    share the caller's storage (a later update of the input, or a write into
    the result, would show through) nor keep a view's strides."""
    x, b = torch.randn(3, 37), torch.randn(5)
    compiled = tirc.compile(_copies_and_views, [x.clone(), b.clone()], backend=backend)
    mine, theirs = (x.clone(), b.clone()), (x.clone(), b.clone())
    got = compiled(*mine)
    want = _copies_and_views(*theirs)
    mismatch = compare_outputs(list(got), list(want))
    assert mismatch is None, mismatch.message
    assert torch.equal(mine[0], theirs[0]) and torch.equal(mine[1], theirs[1])
    for k in (0, 1, 2, 5, 6, 7):  # eager's copies: contiguous, storage of their own
        assert got[k].is_contiguous(), (k, got[k].stride())
        others = [*mine, *(o for j, o in enumerate(got) if j != k)]
        assert all(got[k].untyped_storage().data_ptr() != t.untyped_storage().data_ptr() for t in others), k


def test_an_updated_input_that_overlaps_another_is_refused():
    """Eager sees x's update through an aliasing y; the compiled program read
    y before, so it refuses such inputs (disjoint views of one storage run)."""

    def f(x, y, z):
        x.add_(1)
        z.mul_(2)
        return x + y

    compiled = tirc.compile(f, [torch.randn(5), torch.randn(5), torch.randn(5)], backend="cpp")
    a = torch.randn(20)
    b = a.clone()
    torch.testing.assert_close(compiled(a[:5], a[10:15], a[15:]), f(b[:5], b[10:15], b[15:]))
    torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="input x, which the program updates in place, overlaps input y"):
        compiled(a[:5], a[3:8], a[15:])
    with pytest.raises(ValueError, match="input z, which the program updates in place, overlaps input y"):
        compiled(a[:5], a[10:15], a[14:19])


def _lowered_on(device: str, fn, inputs) -> str:
    """The lower dump of `fn` captured on the CPU and lowered for `device`
    (fake tensors stand for CUDA ones: no GPU needed)."""
    _, text, _, _ = capture_program(fn, inputs, "prog.py", None, Options())
    if device == "cuda":
        text = text.replace('device = "cpu"', 'device = "cuda"').replace('"cpp"', '"triton"')
    module = parse(text, "01-capture.tir")
    options = Options.from_pairs(list(module.options))
    return print_ir(run_stages(module, Context(options), stop_after="lower"))


def test_device_semantics_of_eager_are_followed_in_lowering():
    """Eager differs by device, and lowering follows the program's: on the
    CPU relu is a select (relu(-0.0) is -0.0) and an f16 add rounds its
    scalar to f16; on CUDA relu is a maximum (0.0) and add reads the scalar
    at its own precision. The CPU side is checked against eager elsewhere
    (tests/codegen/test_numeric_edges.py, test_half_promotion.py), the CUDA
    side on a GPU (tests/gpu/gpu_numeric.py)."""
    x = torch.randn(7, 37)
    s = 1.3330078125 + 2**-13
    cpu, cuda = (_lowered_on(d, torch.relu, [x]) for d in ("cpu", "cuda"))
    assert "where(" in cpu and "maximum(" not in cpu
    assert "maximum(" in cuda and "where(" not in cuda
    h = x.half()
    cpu, cuda = (_lowered_on(d, lambda h: h + s, [h]) for d in ("cpu", "cuda"))
    rounded = float(torch.tensor(s).half())
    assert f"{{value = {rounded!r}}}" in cpu and f"{{value = {s!r}}}" not in cpu
    assert f"{{value = {s!r}}}" in cuda


def test_division_by_a_number_follows_the_device():
    """Eager's CUDA kernel divides by a Python number as a multiplication by
    its float32 reciprocal (so (41 k) / 41.0 can floor to k - 1 there), its
    CPU kernel divides; a tensor divisor divides on both."""
    x = torch.randn(7, 37)
    cpu, cuda = (_lowered_on(d, lambda x: x / 41.0, [x]) for d in ("cpu", "cuda"))
    inverse = float(torch.tensor(1.0) / torch.tensor(41.0))
    assert "truediv(" in cpu and "mul(" not in cpu
    assert "truediv(" not in cuda and f"{{value = {inverse!r}}}" in cuda
    cuda = _lowered_on("cuda", lambda x: x / x.amax(1, keepdim=True), [x])
    assert "truediv(" in cuda
