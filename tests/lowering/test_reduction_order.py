"""A reduction over several dimensions iterates them in its input's memory
order (the innermost r-variable moves along the smallest stride), except
an arg-reduction, whose index counts in the dimensions' order; and with
the channels-last decision on, the loop nodes computed from an input that
a convolution reads are channels-last from the input on (the program
converts where it first reads it). Checked in the lower dump, in the
kernels' fusion, and against eager PyTorch on fresh inputs at odd sizes,
on both backends (Triton through the interpreter)."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import tirc

_REDUCTION = re.compile(
    r"^%\w+ = loop\.reduction \[[^;]*; ([^\]]*)\][^\n]*\{\n  %0 = load %(\w+)\[([^\]]*)\]", re.M
)
_BUFFER = re.compile(r"^(%\w+) = loop\.(\w+) .*? : \w+\[([\d, ]+)\] strides \[([\d, ]+)\]", re.M)


def _first_loads(text: str) -> list[tuple[dict[str, int], str, str]]:
    """(r-variable extents, loaded value, index) of each reduction's first load."""
    out = []
    for ranges, source, index in _REDUCTION.findall(text):
        extents = dict((v.strip(), int(n)) for v, n in (r.split("<") for r in ranges.split(",")))
        out.append((extents, source, index))
    return out


def _stride(index: str, var: str) -> int:
    match = re.search(rf"(?:(\d+)\*)?\b{var}\b", index)
    assert match, (var, index)
    return int(match[1] or 1)


def _compile(fn, inputs, tmp_path, backend="cpp", options=None):
    program = tirc.compile(
        fn, inputs, backend=backend, dump_after="lower,fusion", dump_dir=tmp_path, options=options
    )
    return program, (tmp_path / "02-lower.tir").read_text(), (tmp_path / "04-fusion.tir").read_text()


def _check(program, fn, make):
    fresh = make()
    got, want = program(*fresh), fn(*fresh)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def _stats(x):
    var, mean = torch.var_mean(x, (1, 2, 3))
    return x.sum((1, 2, 3)), var, mean, x.amax((1, 2, 3)), x.sum((0, 2, 3))


def _channels_last_input():
    return [torch.randn(2, 37, 9, 7).to(memory_format=torch.channels_last)]


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_reduction_runs_along_its_inputs_memory(backend, tmp_path):
    program, text, _ = _compile(_stats, _channels_last_input(), tmp_path, backend)
    loads = _first_loads(text)
    assert loads
    ordered = [(r, index) for r, source, index in loads if source == "x" and len(r) > 1]
    assert len(ordered) >= 4  # the sum, the variance's two sums, the max (the channel sum has one r)
    for extents, index in ordered:
        strides = [_stride(index, v) for v in extents]
        assert strides == sorted(strides, reverse=True), (extents, index)
    _check(program, _stats, _channels_last_input)


def test_an_arg_reduction_counts_in_the_dimensions_order(tmp_path):
    """argmax over every dimension of an NHWC map returns the NCHW flat
    index: its r-variables stay in the dimensions' order."""

    def fn(x):
        return x.argmax(), x.argmin()

    (x,) = _channels_last_input()
    program, text, _ = _compile(fn, [x], tmp_path)
    loads = _first_loads(text)
    assert len(loads) == 2
    for extents, _, index in loads:
        assert [_stride(index, v) for v in extents] == list(x.stride()), (extents, index)
    _check(program, fn, _channels_last_input)


W = torch.randn(11, 37, 1, 1) * 0.2
W_SQUARE = torch.randn(37, 37, 1, 1) * 0.1
GAMMA, BETA = torch.rand(37) + 0.5, torch.randn(37) * 0.2


def _norm(x):
    return F.group_norm(x, 1, GAMMA, BETA)


def _mixer(x):
    """PoolFormer's token mixer on its residual stream: a norm and a pool."""
    y = _norm(x)
    return x + (F.avg_pool2d(y, 3, 1, 1, count_include_pad=False) - y) * 0.5


def _poolformer_like(x):
    """A residual stream whose first ops are a norm and a pool, not a
    convolution (PoolFormer's block), then a 1x1-conv branch added back."""
    x = _mixer(x)
    branch = F.conv2d(_norm(x), W)
    return x[:, :11] + branch


def _nchw_input():
    return [torch.randn(2, 37, 9, 7)]


def test_the_nodes_of_a_convolved_input_are_channels_last_from_the_edge(tmp_path):
    program, text, fusion = _compile(
        _poolformer_like, _nchw_input(), tmp_path, "triton", options={"layout": "channels-last"}
    )
    four_d = [
        (kind, tuple(int(s) for s in st.split(", ")), shape)
        for _, kind, shape, st in _BUFFER.findall(text)
        if shape.count(",") == 3 and shape.split(", ")[1] == "37" and shape.split(", ")[2:] == ["9", "7"]
    ]
    assert four_d
    expected = torch.empty(2, 37, 9, 7).to(memory_format=torch.channels_last).stride()
    assert all(st == expected for _, st, _ in four_d), four_d
    # the convolution reads one of them: no copy to channels-last before it
    assert "aten.convolution.default(%x" not in text
    _check(program, _poolformer_like, _nchw_input)


def test_without_the_decision_the_input_keeps_its_layout(tmp_path):
    program, text, _ = _compile(
        _poolformer_like, _nchw_input(), tmp_path, "triton", options={"layout": "keep"}
    )
    contiguous = torch.empty(2, 37, 9, 7).stride()
    strides = [tuple(int(s) for s in st.split(", ")) for _, kind, shape, st in _BUFFER.findall(text)]
    assert contiguous in strides
    assert torch.empty(2, 37, 9, 7).to(memory_format=torch.channels_last).stride() not in strides
    _check(program, _poolformer_like, _nchw_input)


def test_a_residual_add_fuses_into_the_statistics_that_read_it(tmp_path):
    """The epilogue of an NHWC branch added to the stream, and the group
    norm's sums over the result (ordered by memory), run in one kernel: the
    epilogue's nodes map onto the reduction's variables through the sums
    that read them, not through the variance's center (the row's first
    element, which reads the branch's output there too)."""

    def fn(x):
        x = _mixer(x)
        z = x + GAMMA[:, None, None] * (F.conv2d(x, W_SQUARE) + BETA[:, None, None])
        return _norm(z) * 2.0

    program, _, fusion = _compile(fn, _nchw_input(), tmp_path, "triton", options={"layout": "channels-last"})
    kernels = [k.split(", ") for k in re.findall(r"kernel @k\d+ = fuse\(([^)]*)\)", fusion)]
    nodes = re.findall(r"^(%\w+) = (loop\.\w+|extern [\w.]+)", fusion, re.M)
    last_conv = max(k for k, (_, kind) in enumerate(nodes) if kind == "extern aten.convolution.default")
    epilogue = nodes[last_conv + 1][0]
    stats = [v for v, kind in nodes[last_conv:] if kind == "loop.reduction"]
    assert stats
    (home,) = [k for k in kernels if epilogue in k]
    assert all(v in home for v in stats), kernels
    _check(program, fn, _nchw_input)
