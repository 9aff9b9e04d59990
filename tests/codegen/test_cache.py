"""The C++ compile cache: built once, shared by concurrent processes, never
half-written; and a generated output_code.py runs on its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

import tirc
import pytest

from codegen import cache
from codegen.cache import build_shared_object, start_build

ROOT = Path(__file__).resolve().parents[2]
SOURCE = 'extern "C" int tirc_cache_probe_%s(int x) { return x + 1; }\n'

CONCURRENT = """
import sys
import pytest

from codegen import cache
from codegen.cache import build_shared_object, start_build
print(build_shared_object(sys.argv[1]))
"""


def test_concurrent_processes_build_once(tmp_path):
    env = dict(os.environ, TIRC_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    source = SOURCE % "concurrent"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, source], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outs)) == 1 and Path(outs[0]).is_file()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert [p.suffix for p in files if p.suffix != ".lock"] == [".so"], files


def test_cache_hit_does_not_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    first = build_shared_object(SOURCE % "hit")
    stamp = first.stat().st_mtime_ns
    again = build_shared_object(SOURCE % "hit")
    assert again == first and again.stat().st_mtime_ns == stamp
    other = build_shared_object(SOURCE % "other")
    assert other != first


def test_a_started_build_is_waited_for_not_repeated(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    spawned = []
    spawn = cache._spawn
    monkeypatch.setattr(cache, "_spawn", lambda *a: spawned.append(1) or spawn(*a))
    start_build(SOURCE % "started")
    assert spawned == [1]  # g++ runs before start_build returns
    built = build_shared_object(SOURCE % "started")
    assert built.is_file() and spawned == [1]
    start_build(SOURCE % "started")  # built already: nothing to do
    assert spawned == [1]
    leftovers = [p for p in tmp_path.rglob("*") if p.suffix not in (".so", ".lock") and p.is_file()]
    assert not leftovers and not list(tmp_path.rglob("*.tmp"))


def test_a_failed_started_build_is_reported_by_the_foreground(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    broken = 'extern "C" int tirc_cache_probe_broken(int x) { return y; }\n'
    start_build(broken)
    with pytest.raises(RuntimeError, match="C\\+\\+ compilation of generated kernels failed: .*error"):
        build_shared_object(broken)
    assert not list(tmp_path.rglob("*.so")) and not list(tmp_path.rglob("*.tmp"))


def test_output_code_runs_standalone(tmp_path):
    fn = tirc.compile(lambda x: torch.relu(x) * 2, [torch.randn(37, 5)], dump_dir=tmp_path)
    assert fn.code == (tmp_path / "output_code.py").read_text()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "output_code.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("median ") and proc.stdout.strip().endswith(" us")
