"""A convolution whose input is a non-contiguous view (the transpose of a
layer norm's result, as in a Conformer's convolution module) reads a
contiguous buffer of tirc's, which the producer's kernel writes directly,
rather than a strided view that ATen would copy inside the call; a view
that is contiguous already, or channels-last (as a linear layer's tokens
seen as a map), is passed as it is. Fresh random inputs at odd
sizes against eager PyTorch, on both backends (Triton interpreted)."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tirc


class _TransposedConv(nn.Module):
    def __init__(self, d=24):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.conv = nn.Conv1d(d, 2 * d, 1)
        self.depthwise = nn.Conv1d(d, d, 5, padding=2, groups=d)

    def forward(self, x):
        y = F.glu(self.conv(self.norm(x).transpose(1, 2)), dim=1)
        return x + self.depthwise(y).transpose(1, 2)


def _lower(model, x, backend, tmp_path) -> tuple[str, tirc.CompiledProgram]:
    program = tirc.compile(model, [x], backend=backend, dump_after="lower", dump_dir=tmp_path)
    return (tmp_path / "02-lower.tir").read_text(), program


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_transposed_input_is_written_contiguous_by_its_producer(backend, tmp_path):
    torch.manual_seed(0)
    model = _TransposedConv().eval()
    lower, program = _lower(model, torch.randn(3, 37, 24), backend, tmp_path)
    convolutions = re.findall(r"extern aten\.convolution\.default\((%\w+)", lower)
    assert len(convolutions) == 2
    views = set(re.findall(r"(%\w+) = extern aten\.as_strided\.default", lower))
    assert not views & set(convolutions), "a convolution reads a strided view"
    fresh = torch.randn(3, 37, 24)
    with torch.no_grad():
        torch.testing.assert_close(program(fresh), model(fresh), rtol=1e-5, atol=1e-5)


def test_a_contiguous_view_is_passed_without_a_copy(tmp_path):
    """(2 * x)[1:] of a contiguous [N, C, L] map is contiguous: the
    convolution reads it as a view, and the only loop node is 2 * x."""
    torch.manual_seed(0)
    conv = nn.Conv1d(8, 4, 3).eval()
    fn = lambda x: conv((2 * x)[1:])  # noqa: E731
    program = tirc.compile(fn, [torch.randn(4, 8, 29)], dump_after="lower", dump_dir=tmp_path)
    lower = (tmp_path / "02-lower.tir").read_text()
    assert len(re.findall(r"= loop\.", lower)) == 1
    (read,) = re.findall(r"extern aten\.convolution\.default\((%\w+)", lower)
    assert read in re.findall(r"(%\w+) = extern aten\.as_strided\.default", lower)
    fresh = torch.randn(4, 8, 29)
    with torch.no_grad():
        torch.testing.assert_close(program(fresh), fn(fresh), rtol=1e-5, atol=1e-5)


class _TokensToMap(nn.Module):
    """SegFormer's Mix-FFN: a linear layer over tokens, its result seen as a
    map by transpose and reshape (channels-last strides), a depthwise 3x3."""

    def __init__(self, d=12, hidden=20):
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.dw = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden)

    def forward(self, x, h=5, w=7):
        b, n, _ = x.shape
        y = self.fc(x).transpose(1, 2).reshape(b, -1, h, w)
        return F.gelu(self.dw(y).flatten(2).transpose(1, 2))


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_channels_last_view_is_passed_without_a_copy(backend, tmp_path):
    """As eager does, the convolution reads the linear layer's result in its
    channels-last arrangement: no loop node copies it to NCHW first."""
    torch.manual_seed(0)
    model = _TokensToMap().eval()
    lower, program = _lower(model, torch.randn(3, 35, 12), backend, tmp_path)
    (read,) = re.findall(r"extern aten\.convolution\.default\((%\w+)", lower)
    assert re.search(
        rf"{read} = extern aten\.as_strided\.default\(%\w+, \[3, 20, 5, 7\], \[700, 1, 140, 20\]\)", lower
    )
    fresh = torch.randn(3, 35, 12)
    with torch.no_grad():
        torch.testing.assert_close(program(fresh), model(fresh), rtol=1e-5, atol=1e-5)
