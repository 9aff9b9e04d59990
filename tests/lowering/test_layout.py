"""The layout decision (lowering/layout.py): convolution graphs run
channels-last. The lower dump prints the decision and its reason, the
convolutions read a channels-last copy of the user's NCHW tensor at the
graph's edge, their epilogues (norms, activations, residual adds, pools,
concatenations) follow the channels-last layout, and what the program
returns is in eager's layout again. Results match eager and the reference
interpreter on both backends; `layout=keep` turns it off; grouped
convolutions keep NCHW on the GPU; a lower dump with the decision
round-trips and re-feeds to the same code."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tirc
from ir_text import TircError, parse, print_ir
from lowering import interpret
from lowering.layout import is_channels_last
from tirc.compiler import capture_program
from tirc.options import Options
from tirc.pipeline import Context, run_stages

# The layout the CPU's automatic decision does not take (NCHW runs faster
# there), forced, so that its mechanics are tested on both backends here.
CL = {"layout": "channels-last"}

# The Triton interpreter warns about lanes that are masked off on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


class Net(nn.Module):
    """A small CNN with every kind of epilogue a convolution graph has."""

    def __init__(self, c=6):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.up = nn.ConvTranspose2d(2 * c, 4, 2, stride=2)

    def forward(self, x):
        h = F.relu(self.bn(self.stem(x)))
        h = F.max_pool2d(F.hardswish(self.conv(h)) + h, 2)
        cat = torch.cat([h, self.dw(h)], 1)
        return self.up(cat) * 0.5, cat.mean((2, 3)), torch.flatten(F.avg_pool2d(cat, 2), 1)


def _randomized(model: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
    return model.eval()


def _channels_last(text: str) -> int:
    """Buffers of rank 4 or 5 laid out channels-last (and not also contiguous)."""
    found = re.findall(r": \w+\[([\d, ]+)\] strides \[([-\d, ]+)\]", text)
    return sum(is_channels_last(_ints(shape), _ints(strides)) for shape, strides in found)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(", "))


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_a_convolution_graph_runs_channels_last_and_matches_eager(tmp_path, backend, dtype):
    model = _randomized(Net()).to(dtype)
    x = torch.randn(2, 3, 13, 11, dtype=dtype)
    program = tirc.compile(model, [x], backend=backend, dump_after="lower", dump_dir=tmp_path, options=CL)
    lower = (tmp_path / "02-lower.tir").read_text()
    assert 'layout channels_last {reason = "option layout=channels-last"}' in lower
    # The stem's, the conv's, the depthwise's and the transposed one's
    # inputs, and their epilogues, are channels-last buffers.
    assert _channels_last(lower) >= 8
    fresh = torch.randn(2, 3, 13, 11, dtype=dtype)
    with torch.no_grad():
        want = model(fresh)
    got = program(fresh)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    for g, w in zip(got, want):
        # What the user gets back is in eager's layout.
        assert g.stride() == w.stride()
        torch.testing.assert_close(g, w, rtol=tol, atol=tol)
    ref = interpret(parse(lower, "02-lower.tir"), [t.detach() for _, t in program.lifted] + [fresh])
    for r, w in zip(ref, want):
        torch.testing.assert_close(r, w, rtol=tol, atol=tol)


def test_the_cpu_decision_keeps_nchw(tmp_path):
    model = _randomized(Net())
    x = torch.randn(2, 3, 13, 11)
    tirc.compile(model, [x], dump_after="lower", dump_dir=tmp_path)
    lower = (tmp_path / "02-lower.tir").read_text()
    assert 'layout keep {reason = "4 convolution(s) on the CPU, where tirc' in lower
    assert _channels_last(lower) == 0


def test_layout_keep_turns_it_off(tmp_path):
    model = _randomized(Net())
    x = torch.randn(2, 3, 13, 11)
    program = tirc.compile(model, [x], dump_after="lower", dump_dir=tmp_path, options={"layout": "keep"})
    lower = (tmp_path / "02-lower.tir").read_text()
    assert 'layout = "keep"' in lower.splitlines()[1]
    assert 'layout keep {reason = "option layout=keep"}' in lower
    assert _channels_last(lower) == 0
    with torch.no_grad():
        for g, w in zip(program(x), model(x)):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


def test_a_channels_last_input_needs_no_copy_at_the_edge(tmp_path):
    model = _randomized(nn.Sequential(nn.Conv2d(5, 7, 3), nn.BatchNorm2d(7), nn.SiLU()))
    x = torch.randn(3, 5, 9, 10).contiguous(memory_format=torch.channels_last)
    program = tirc.compile(model, [x], dump_after="lower", dump_dir=tmp_path, options=CL)
    lower = (tmp_path / "02-lower.tir").read_text()
    assert re.search(r"= extern aten\.convolution\.default\(%input", lower)
    fresh = torch.randn(3, 5, 9, 10).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        torch.testing.assert_close(program(fresh), model(fresh), rtol=1e-4, atol=1e-4)


def test_conv3d_runs_channels_last_3d(tmp_path):
    model = _randomized(nn.Sequential(nn.Conv3d(3, 5, 3, padding=1), nn.ReLU()))
    x = torch.randn(2, 3, 5, 6, 7)
    program = tirc.compile(model, [x], backend="triton", dump_after="lower", dump_dir=tmp_path, options=CL)
    lower = (tmp_path / "02-lower.tir").read_text()
    # NDHWC strides of [2, 5, 5, 6, 7]: the channel innermost.
    assert "f32[2, 5, 5, 6, 7] strides [1050, 1, 210, 35, 5]" in lower
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-4)


def _lowered_for_cuda(fn, inputs, lifted=None, **options) -> str:
    """The lower dump of `fn` lowered for CUDA (fake tensors stand for CUDA
    ones: no GPU needed); `lifted` gets the parameters it takes first."""
    _, text, params, _ = capture_program(fn, inputs, "prog.py", None, Options())
    if lifted is not None:
        lifted.extend(t.detach() for _, t in params)
    text = text.replace('device = "cpu"', 'device = "cuda"').replace('"cpp"', '"triton"')
    module = parse(text, "01-capture.tir")
    pairs = list(module.options) + list(options.items())
    return print_ir(run_stages(module, Context(Options.from_pairs(pairs)), stop_after="lower"))


def test_gpu_decision_weighs_the_convolutions_kinds():
    dense = _randomized(nn.Sequential(nn.Conv2d(8, 16, 3), nn.ReLU()))
    lower = _lowered_for_cuda(dense, [torch.randn(2, 8, 9, 9)])
    assert re.search(r"^layout channels_last .*dense 100%", lower, re.M)
    grouped = _randomized(nn.Sequential(nn.Conv2d(8, 16, 3, groups=2), nn.ReLU()))
    lower = _lowered_for_cuda(grouped, [torch.randn(2, 8, 9, 9)])
    assert re.search(
        r"^layout keep \{reason = \"convolutions slower channels-last.*grouped 100%", lower, re.M
    )
    assert _channels_last(lower) == 0
    lower = _lowered_for_cuda(grouped, [torch.randn(2, 8, 9, 9)], layout="channels-last")
    assert "layout channels_last" in lower and _channels_last(lower) > 0
    plain = _lowered_for_cuda(lambda x: x * 2, [torch.randn(2, 8, 9, 9)])
    assert "\nlayout " not in plain


def test_gpu_decision_keeps_3d_convolutions_by_kind_and_dtype():
    """3-D convolutions: fp32 dense ones and depthwise ones stay NCDHW on
    the GPU (cuDNN ran them slower channels-last), bf16 dense ones go
    channels-last-3d."""
    dense = _randomized(nn.Sequential(nn.Conv3d(8, 16, (1, 3, 3)), nn.ReLU()))
    lower = _lowered_for_cuda(dense, [torch.randn(2, 8, 3, 9, 9)])
    assert re.search(r"^layout keep .*3-D dense 100%", lower, re.M)
    assert _channels_last(lower) == 0
    lower = _lowered_for_cuda(dense.bfloat16(), [torch.randn(2, 8, 3, 9, 9).bfloat16()])
    assert re.search(r"^layout channels_last .*3-D dense 100%", lower, re.M)
    assert _channels_last(lower) > 0
    depthwise = _randomized(nn.Sequential(nn.Conv3d(8, 8, 3, groups=8), nn.ReLU())).bfloat16()
    lower = _lowered_for_cuda(depthwise, [torch.randn(2, 8, 5, 9, 9).bfloat16()])
    assert re.search(r"^layout keep .*3-D depthwise 100%", lower, re.M)


def test_gpu_convolution_bias_joins_the_epilogue():
    """On the GPU the convolution's bias is a pointwise add that fuses with
    its epilogue (cuDNN adds it in a pass of its own). The dump, lowered for
    CUDA, is run by the reference interpreter on the CPU against eager."""
    model = _randomized(nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU()))
    x = torch.randn(2, 4, 7, 9)
    params = []
    lower = _lowered_for_cuda(model, [x], params)
    assert re.search(r"= extern aten\.convolution\.default\(%\w+, %\S+, none,", lower)
    assert lower.count('origin = "aten.convolution.default"') == 2  # the edge's copy, the bias add
    module = parse(lower.replace('device = "cuda"', 'device = "cpu"'), "02-lower.tir")
    (got,) = interpret(module, params + [x])
    with torch.no_grad():
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)


def test_the_decision_round_trips_and_is_checked():
    model = _randomized(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()))
    _, text, _, _ = capture_program(model, [torch.randn(1, 3, 8, 8)], "prog.py", None, Options())
    module = parse(text, "01-capture.tir")
    lower = print_ir(run_stages(module, Context(Options(layout="channels-last")), stop_after="lower"))
    assert "\nlayout channels_last {" in lower
    assert print_ir(parse(lower, "02-lower.tir")) == lower
    bad = lower.replace("layout channels_last", "layout sideways")
    with pytest.raises(TircError, match="unknown layout 'sideways'"):
        parse(bad, "02-lower.tir")
    twice = lower.replace("layout channels_last", 'layout keep {reason = "x"}\nlayout channels_last')
    with pytest.raises(TircError, match="one 'layout' section"):
        parse(twice, "02-lower.tir")
    capture = text.replace("\ninput", '\nlayout keep {reason = "x"}\ninput', 1)
    with pytest.raises(TircError, match="a capture dump has no layout decision"):
        parse(capture, "01-capture.tir")
    with pytest.raises(TircError, match="unknown layout 'sideways'"):
        Options(layout="sideways")


def test_an_input_read_by_several_convolutions_is_copied_once(tmp_path):
    class Branches(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(4, 3, 1), nn.Conv2d(4, 5, 3, padding=1)

        def forward(self, x):
            return torch.cat([self.a(x), self.b(x)], 1).relu()

    model = _randomized(Branches())
    x = torch.randn(2, 4, 9, 7)
    program = tirc.compile(model, [x], dump_after="lower", dump_dir=tmp_path, options=CL)
    lower = (tmp_path / "02-lower.tir").read_text()
    copies = [line for line in lower.splitlines() if "load %x[" in line]
    assert len(copies) == 1
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_norm_after_a_convolution(tmp_path, groups):
    """Group norm reshapes the channels-last result into groups and its
    decomposition takes an `as_strided` of a product: neither may read the
    chosen layout as eager's storage."""
    model = _randomized(nn.Sequential(nn.Conv2d(4, 4, 1, bias=False), nn.GroupNorm(groups, 4), nn.SiLU()))
    x = torch.randn(2, 4, 5, 7)
    program = tirc.compile(model, [x], backend="triton", options=CL)
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-4)


def test_as_strided_reads_eager_storage_of_a_channels_last_result(tmp_path):
    conv = _randomized(nn.Conv2d(3, 4, 3, padding=1))

    def fn(x):
        y = conv(x) * 2
        return torch.as_strided(y, (2, 10), (10, 1), 3) + 1, y.relu()

    x = torch.randn(2, 3, 5, 6)
    program = tirc.compile(fn, [x], dump_after="lower", dump_dir=tmp_path, options=CL)
    assert "layout channels_last" in (tmp_path / "02-lower.tir").read_text()
    with torch.no_grad():
        for g, w in zip(program(x), fn(x)):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


def test_channels_last_kernels_run_along_the_channel(tmp_path):
    """A kernel whose result is channels-last runs its innermost loop (C++),
    its lanes (a C++ or Triton reduction's rows) along the channel, which
    the stores are contiguous along (codegen/loop_order.py), not along the
    width, C elements apart."""
    model = _randomized(
        nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 16, 1),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 4, 1),
        )
    )
    x = torch.randn(2, 3, 13, 11)
    cpp = tirc.compile(model, [x], backend="cpp", options=CL)
    assert re.search(r"#pragma omp simd\n\s*for \(int64_t i1 = 0; i1 < 16; \+\+i1\)", cpp.code)  # BN + ReLU
    assert "const int64_t i1 = i1_block * 64 + lane;" in cpp.code  # the pool's rows in lanes
    triton = tirc.compile(model, [x], backend="triton", options=CL)
    assert "i1 = xindex % 16" in triton.code  # the pool's rows, channel fastest
    with torch.no_grad():
        want = model(x)
    for program in (cpp, triton):
        torch.testing.assert_close(program(x), want, rtol=1e-4, atol=1e-4)


PROGRAM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2) * 2


def get_inputs():
    return [torch.randn(2, 3, 9, 11)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_channels_last_dump_refeeds_to_the_same_code_and_replays(tmp_path, backend):
    """Through the CLI: each dump of a channels-last program re-fed gives
    byte-identical later dumps and code, and replays against the reference."""
    (tmp_path / "model.py").write_text(PROGRAM)

    def cli(*args):
        done = subprocess.run([sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    first = tmp_path / "first"
    cli(
        "compile",
        tmp_path / "model.py",
        "--backend",
        backend,
        "--option",
        "layout=channels-last",
        "--dump-after=all",
        "--dump-dir",
        first,
        "--check",
    )
    assert "\nlayout channels_last {" in (first / "02-lower.tir").read_text()
    for stage in ("02-lower.tir", "04-fusion.tir"):
        again = tmp_path / f"again-{stage}"
        cli("compile", first / stage, "--dump-after=all", "--dump-dir", again)
        for name in ("05-memplan.tir", "output_code.py"):
            assert (again / name).read_bytes() == (first / name).read_bytes(), (stage, name)
    cli("replay", first / "02-lower.tir")
