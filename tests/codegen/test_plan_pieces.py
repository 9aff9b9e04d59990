"""Concatenations in pieces (codegen/plan_pieces.py): a cat whose parts'
ops were inlined into it runs one piece per part, each computing its own
part only, on both backends (Triton through the interpreter). Checked
against eager PyTorch on fresh inputs at odd sizes and several dtypes, in
the generated code (pieces, and no select left in them), and on the
plans: every piece together covers the iteration space once."""

from __future__ import annotations

import re
from math import prod

import pytest
import torch
import torch.nn.functional as F

import tirc
from codegen import plan_pieces
from codegen.kernel_plan import Compute, module_plans
from ir_text import parse

BACKENDS = ["cpp", "triton"]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    """A code cache of each test's own: the same programs compile with and
    without pieces here (the threshold is not part of a cache key)."""
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces at test sizes (the backends' thresholds are for real maps)."""
    monkeypatch.setattr(plan_pieces, "MIN_PIECE", {"cpp": 8, "triton": 8})


def _pyramid(x, a, b):
    """PSPNet's head in miniature: the map beside two upsampled poolings
    and a part with its own epilogue, concatenated along the channels."""
    h, w = x.shape[2:]
    up = [
        F.interpolate(F.adaptive_avg_pool2d(x, s), (h, w), mode="bilinear", align_corners=True)
        for s in (1, 3)
    ]
    return torch.cat([x, *up, torch.relu(a * 1.5 + b)], 1) * 2.0


def _last_dim(x, y):
    """A cat along the innermost dimension, of a gather and an activation."""
    return torch.cat([x[:, torch.arange(x.shape[1] - 1, -1, -1)], torch.sigmoid(y)], 1)


def _inputs(name, dtype):
    if name == "pyramid":
        return [
            torch.randn(2, 5, 9, 7).to(dtype),
            torch.randn(2, 3, 9, 7).to(dtype),
            torch.randn(3, 1, 1).to(dtype),
        ]
    return [torch.randn(37, 13).to(dtype), torch.randn(37, 29).to(dtype)]


PROGRAMS = {"pyramid": _pyramid, "last_dim": _last_dim}


def _kernels(code: str) -> list[str]:
    return re.findall(r"\bk\d+(?:_\d+)?_p\d+\b", code)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_cat_of_computed_parts_runs_in_pieces(name, dtype, backend, small_pieces):
    fn = PROGRAMS[name]
    xs = _inputs(name, DTYPES[dtype])
    program = tirc.compile(fn, xs, backend=backend)
    assert _kernels(program.code), "no pieces"
    fresh = _inputs(name, DTYPES[dtype])
    tol = 1e-5 if dtype == "f32" else 2e-2
    torch.testing.assert_close(program(*fresh), fn(*fresh), rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_pieces_cover_the_cat_once_without_selects(backend, small_pieces, tmp_path):
    xs = _inputs("pyramid", torch.float32)
    tirc.compile(_pyramid, xs, backend=backend, dump_after="memplan", dump_dir=tmp_path)
    module = parse((tmp_path / "05-memplan.tir").read_text(), "05-memplan.tir")
    # a C++ kernel's loop nests are plans of their own
    plans = [nest for _, plan in module_plans(module) for nest in plan.nests or (plan,)]
    cut = [plan for plan in (plan_pieces.in_pieces(p, backend) for p in plans) if plan.pieces]
    assert len(cut) == 1
    (plan,) = cut
    assert sum(prod(p.ranges) for p in plan.pieces) == prod(plan.ranges)
    assert len(plan.pieces) == 4  # the map, two upsampled poolings, the epilogue's part
    for piece in plan.pieces:
        computes = {s.var: s for s in piece.steps if isinstance(s, Compute)}
        compares = [s for s in computes.values() if s.op == "lt"]
        # no compare of a loop variable is left: the cat's selects resolved
        assert not any(computes.get(s.args[0]) and computes[s.args[0]].op == "index" for s in compares)
        assert len(piece.steps) < len(plan.steps)


def test_a_small_cat_runs_whole():
    """Under the backends' thresholds a cat of small maps stays one kernel
    (on the GPU each piece would be a launch of its own)."""
    xs = _inputs("pyramid", torch.float32)
    for backend in BACKENDS:
        program = tirc.compile(_pyramid, xs, backend=backend)
        assert not _kernels(program.code)
        torch.testing.assert_close(program(*xs), _pyramid(*xs))


def test_an_index_checked_in_one_piece_only(small_pieces):
    """A part that gathers checks its indices (an error slot under the
    interpreter); the pieces that do not take no slot."""

    def fn(x, idx, y):
        return torch.cat([x[:, idx], torch.tanh(y)], 1)

    def make():
        return [torch.randn(9, 37), torch.randint(0, 37, (11,)), torch.randn(9, 40)]

    program = tirc.compile(fn, make(), backend="triton")
    assert _kernels(program.code)
    fresh = make()
    torch.testing.assert_close(program(*fresh), fn(*fresh))
    bad = fresh[:1] + [torch.full((11,), 99)] + fresh[2:]
    with pytest.raises(Exception, match="index"):
        program(*bad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cat_of_library_results_and_computed_parts(backend, small_pieces):
    """Res2Net's concatenation of convolutions' outputs (extern calls,
    which the inliner never recomputes) beside a computed part."""
    w = torch.randn(4, 5, 3, 3) * 0.3

    def fn(x):
        a = F.conv2d(x, w, padding=1)
        return torch.cat([a, torch.relu(x * 2.0 - 0.5), F.conv2d(x, w[:2], padding=1)], 1)

    def make():
        return [torch.randn(2, 5, 9, 11)]

    program = tirc.compile(fn, make(), backend=backend)
    fresh = make()
    torch.testing.assert_close(program(*fresh), fn(*fresh), rtol=1e-4, atol=1e-4)
