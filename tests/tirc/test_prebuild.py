"""The C++ kernels' build starts once the fusion pass has fixed them (before
the fusion stage is printed, and before codegen), and codegen uses that
build: g++ runs once per compile, also when the memory plan writes a buffer
in place (which drops `__restrict__` from the kernel's pointers). The
order is observed through the read-backs, so these compiles read every
stage back (verify_roundtrip); the default reads back the memplan stage's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

import tirc
import tirc.pipeline
from codegen import cpp_build as cache
from tirc.cli import main

ROOT = Path(__file__).resolve().parents[2]


def in_place(x, w):
    a = torch.sin(x)
    return (a @ w + a) @ w  # the add writes over `a`, read there last


def fused(x, b):
    return torch.softmax(x + b, -1).exp()


def _events(monkeypatch) -> list[str]:
    """What happens, in order: each g++ build started and each read-back."""
    events = []
    build, read_back = cache._Build, tirc.pipeline.read_back
    monkeypatch.setattr(cache, "_Build", lambda *a: events.append("g++") or build(*a))
    monkeypatch.setattr(
        tirc.pipeline,
        "read_back",
        lambda text, name, *rest: events.append(name) or read_back(text, name, *rest),
    )
    return events


def _compile(program, inputs, tmp_path, monkeypatch, **options):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    events = _events(monkeypatch)
    compiled = tirc.compile(program, inputs, **options)
    torch.testing.assert_close(compiled(*inputs), program(*inputs))
    return compiled, events


def test_the_build_starts_after_the_fusion_pass_and_is_used(tmp_path, monkeypatch):
    for program, inputs in [
        (in_place, [torch.randn(37, 33), torch.randn(33, 33)]),
        (fused, [torch.randn(37, 129), torch.randn(129)]),
    ]:
        compiled, events = _compile(
            program, inputs, tmp_path / program.__name__, monkeypatch, options={"verify_roundtrip": True}
        )
        # Started before the fusion stage's read-back, and not again at codegen.
        assert events == [
            "02-lower.tir",
            "03-schedule.tir",
            "g++",
            "04-fusion.tir",
            "05-memplan.tir",
        ]
        if program is in_place:
            assert "const float* p_" in compiled.code  # the plan's in-place write reached the source


def test_no_build_when_codegen_does_not_follow(tmp_path, monkeypatch):
    program = tmp_path / "program.py"
    program.write_text(
        "import torch\n\ndef f(x, b):\n    return torch.softmax(x + b, -1).exp()\n\n"
        "def get_inputs():\n    return [torch.randn(37, 129), torch.randn(129)]\n"
    )
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    events = _events(monkeypatch)
    assert (
        main(
            [
                "compile",
                str(program),
                "--entry",
                "f",
                "--stop-after",
                "fusion",
                "--option",
                "verify_roundtrip=true",
                "--dump-dir",
                str(tmp_path / "d"),
            ]
        )
        == 0
    )
    assert "04-fusion.tir" in events and "g++" not in events


def test_no_build_for_triton(tmp_path, monkeypatch):
    inputs = [torch.randn(37, 129), torch.randn(129)]
    _, events = _compile(fused, inputs, tmp_path, monkeypatch, backend="triton")
    assert "g++" not in events


def test_a_process_that_exits_before_loading_leaves_the_built_object(tmp_path):
    """`tirc compile` exits without loading the kernels: the build it
    started still lands in the cache, with no half-built work directory."""
    program = tmp_path / "program.py"
    program.write_text(
        "import torch\n\ndef f(x, b):\n    return torch.softmax(x + b, -1).exp()\n\n"
        "def get_inputs():\n    return [torch.randn(37, 129), torch.randn(129)]\n"
    )
    cache_dir = tmp_path / "cache"
    env = dict(os.environ, TIRC_CACHE_DIR=str(cache_dir), TIRC_NO_CODE_CACHE="1", PYTHONPATH=str(ROOT))
    argv = [
        sys.executable,
        "-m",
        "tirc",
        "compile",
        str(program),
        "--entry",
        "f",
        "--dump-dir",
        str(tmp_path / "d"),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    left = sorted(p.suffix for p in cache_dir.rglob("*") if p.is_file())
    assert left == [".json", ".lock", ".so"], left  # the object and its record (cache.py)
