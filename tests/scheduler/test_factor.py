"""Reductions factored into partials and their combine (scheduler/factor.py):
which rule fires and where, what the fusion pass then makes of the two
nodes, results against eager on fresh random inputs (both backends, f32 and
bf16, odd sizes), and the dumps' round trip, re-feed and replay."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tirc
from ir_text import parse, print_ir
from matching import assert_matches

# The Triton interpreter warns about lanes that are masked off on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ROOT = Path(__file__).resolve().parents[2]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def distillation(student, teacher):
    """A whole-tensor sum over values that need two per-row log-softmaxes."""
    s = F.log_softmax(student / 2.0, dim=-1)
    t = F.log_softmax(teacher / 2.0, dim=-1)
    return F.kl_div(s, t, reduction="batchmean", log_target=True) * 4.0


def kl_inputs(dtype):
    return lambda: [torch.randn(37, 1000, dtype=dtype) * 3, torch.randn(37, 1000, dtype=dtype) * 3]


def conv_group_norm(x, k, w, b):
    return F.group_norm(F.conv2d(x, k, padding=1), 4, w, b)


def gn_inputs(dtype):
    """A map whose groups hold 4 channels: 16 bytes in f32 when channels-last."""
    return lambda: [
        torch.randn(2, 8, 17, 17, dtype=dtype),
        torch.randn(16, 8, 3, 3, dtype=dtype) / 8,
        torch.rand(16, dtype=dtype) + 0.5,
        torch.randn(16, dtype=dtype),
    ]


# The GPU's layout decision for convolution graphs, forced on the CPU.
CHANNELS_LAST = {"layout": "channels-last"}


def compile_and_check(fn, make_inputs, backend, options=None):
    torch.manual_seed(0)
    program = tirc.compile(fn, make_inputs(), backend=backend, options=options)
    torch.manual_seed(1)
    fresh = make_inputs()
    expected = fn(*fresh)
    actual = program(*fresh)
    if expected.dtype == torch.bfloat16:
        torch.testing.assert_close(actual.float(), expected.float(), rtol=3e-2, atol=3e-2)
    else:
        assert_matches(actual, expected)
    return program.compiled.module


def factored(module) -> list[str]:
    return [dict(n.attrs)["factored"] for n in module.nodes if "factored" in dict(getattr(n, "attrs", ()))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_whole_sum_over_row_softmaxes_joins_their_kernel(backend, dtype):
    module = compile_and_check(distillation, kl_inputs(DTYPES[dtype]), backend)
    assert factored(module) == ["[row-aligned]"]
    # The per-row partials are one more pass of the row kernel; the combine
    # (and the scalar epilogue) is the rest. Unfactored, the log-softmax of
    # the student went to memory and both inputs were read again.
    rows = [k for k in module.kernels if tuple(dict(k.attrs)["group"]) == (37, 1000)]
    assert len(rows) == 1
    assert len(module.kernels) <= 2


def test_without_the_option_nothing_is_factored():
    module = compile_and_check(
        distillation, kl_inputs(torch.float32), "triton", options={"factor_reductions": False}
    )
    assert factored(module) == []
    assert len(module.kernels) >= 3


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_over_a_channels_last_map_reads_whole_sectors(dtype):
    module = compile_and_check(conv_group_norm, gn_inputs(DTYPES[dtype]), "triton", CHANNELS_LAST)
    assert factored(module) == ["[short-run]", "[short-run]"]
    partials = [n for n in module.nodes if "factored" in dict(getattr(n, "attrs", ()))]
    for node in partials:
        # (n, group, 1, channel in group) partials over the 17 x 17 pixels, kept in f64.
        assert node.ranges[-1] == 4 and math.prod(node.reduction_ranges) == 17 * 17
        assert node.result.type.dtype == "f64"
    # The combines (4 partials a group) are unrolled and recomputed where the
    # statistics are read: no reduction kernel over 4 elements is left.
    reductions = [n for n in module.nodes if getattr(n, "kind", "") == "reduction"]
    assert reductions == partials


def test_the_cpp_backend_keeps_short_runs_unfactored():
    module = compile_and_check(conv_group_norm, gn_inputs(torch.float32), "cpp", CHANNELS_LAST)
    assert factored(module) == []


@pytest.mark.parametrize(
    "fn, make_inputs",
    [
        # No row reduction behind the sum: a split reduction as before.
        (lambda x: (x * 2).sum(), lambda: [torch.randn(37, 1000)]),
        # argmax's partials would be (value, index) pairs.
        (lambda x: torch.softmax(x, -1).argmax(), lambda: [torch.randn(37, 129)]),
        # NCHW group norm: each group is contiguous.
        (conv_group_norm, gn_inputs(torch.float32)),
    ],
    ids=["plain_sum", "argmax", "nchw_group_norm"],
)
def test_what_is_not_factored(fn, make_inputs):
    assert factored(compile_and_check(fn, make_inputs, "triton")) == []


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True, cwd=ROOT
    )


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_factored_dumps_round_trip_refeed_and_replay(tmp_path, backend):
    torch.manual_seed(0)
    first = tmp_path / "A"
    tirc.compile(distillation, kl_inputs(torch.float32)(), backend=backend, dump_after="all", dump_dir=first)
    names = sorted(p.name for p in first.glob("*.tir"))
    schedule = next(n for n in names if n.endswith("schedule.tir"))
    assert 'factored = "[row-aligned]"' in (first / schedule).read_text()
    for name in names:
        text = (first / name).read_text()
        assert print_ir(parse(text, name)) == text, name
    again = tmp_path / "B"
    done = run_cli("compile", first / schedule, "--dump-after=all", "--dump-dir", again)
    assert done.returncode == 0, done.stderr
    for name in [n for n in names if n > schedule] + ["output_code.py"]:
        assert (again / name).read_bytes() == (first / name).read_bytes(), name
    replay = run_cli("replay", first / schedule)
    assert replay.returncode == 0, replay.stdout + replay.stderr
