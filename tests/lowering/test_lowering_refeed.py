"""The Foundation checks on a program that uses every new construct of the
lowering (reductions, scans, indirect loads, clamped loads, pooling, extern
calls and fallbacks, views, an updated input): through the CLI, two runs under
different hash seeds give byte-identical dump directories, every dump
round-trips through `tirc fmt --check`, re-feeding each dump reproduces every
later file, and replaying each dump matches."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tirc.dumps import comparable_files

PROGRAM = """
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(12, 8)
        self.emb = torch.nn.Embedding(10, 12)

    def forward(self, x, tokens, img):
        h = F.layer_norm(x + self.emb(tokens.abs()), (12,))
        y = F.softmax(self.proj(h), -1)
        pooled = F.max_pool2d(img, 2) + F.avg_pool2d(img, 2)
        padded = F.pad(torch.cat([x, x[:, :3] * 2], 1), (1, 1))
        ranked = torch.sort(y, -1)[0].cumsum(-1)
        img.mul_(0.5)
        return y.argmax(-1), pooled.mean((2, 3)), padded.var(0), ranked, h.t()[2:5]


def get_inputs():
    return [torch.randn(5, 12), torch.randint(0, 10, (5,)), torch.randn(2, 3, 6, 6)]


def get_init_inputs():
    return []
"""
STAGES = ["01-capture.tir", "02-lower.tir", "03-schedule.tir", "04-fusion.tir", "05-memplan.tir"]


def _tirc(*args, seed="0"):
    env = dict(os.environ, PYTHONHASHSEED=seed)
    done = subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True, env=env
    )
    return done.returncode, done.stderr


def _tree(directory):
    """Every file's bytes, the manifest's without its timings (which differ between any two runs)."""
    return comparable_files(directory)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lowering_refeed")
    (root / "prog.py").write_text(PROGRAM)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(
                _tirc,
                "compile",
                root / "prog.py",
                "--dump-after=all",
                "--dump-dir",
                root / name,
                "--check",
                seed=seed,
            )
            for name, seed in (("A", "0"), ("B", "4242"))
        ]
        results = [f.result() for f in futures]
    for code, err in results:
        assert code == 0, err
    return root


def test_dumps_are_identical_across_hash_seeds(runs):
    assert _tree(runs / "A") == _tree(runs / "B")


def test_dumps_hold_the_new_constructs(runs):
    lower = (runs / "A" / "02-lower.tir").read_text()
    for needle in (
        "loop.reduction",
        "loop.scan",
        "= indirect(",
        "= extern aten.sort.default(",
        "update %img",
        "max(",
        "reduce(",
    ):
        assert needle in lower, needle
    assert _tirc("fmt", "--check", *[runs / "A" / s for s in STAGES])[0] == 0


@pytest.mark.parametrize("index", range(len(STAGES)), ids=[s[3:-4] for s in STAGES])
def test_refeed_and_replay(runs, tmp_path, index):
    original = runs / "A"
    code, err = _tirc("compile", original / STAGES[index], "--dump-after=all", "--dump-dir", tmp_path)
    assert code == 0, err
    for name in [*STAGES[index + 1 :], "output_code.py"]:
        assert (tmp_path / name).read_bytes() == (original / name).read_bytes(), name
    code, err = _tirc("replay", original / STAGES[index])
    assert code == 0, err
