"""The compiled-code cache (tirc/code_cache.py): a second compile of the same
program skips the pipeline and returns the same code; dumps, debug options
and TIRC_NO_CODE_CACHE bypass it; concurrent processes share it safely."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

import tirc
import tirc.pipeline

ROOT = Path(__file__).resolve().parents[2]


def program(x, w):
    return torch.softmax(x * w, -1) + 1


def inputs():
    return [torch.randn(37, 129), torch.randn(129)]


def _count_pipeline_runs(monkeypatch) -> list:
    runs = []
    original = tirc.pipeline.run_stages

    def counting(*args, **kwargs):
        runs.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr("tirc.compiler.run_stages", counting)
    return runs


def test_second_compile_skips_the_pipeline(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    runs = _count_pipeline_runs(monkeypatch)
    first = tirc.compile(program, inputs())
    second = tirc.compile(program, inputs())
    assert len(runs) == 1
    assert second.code == first.code
    x = inputs()
    torch.testing.assert_close(second(*x), program(*x))
    # The memplan module comes back from the entry, parsed when asked for.
    assert second.compiled.module.stage == "memplan"
    assert second.extern_ops == first.extern_ops


def test_other_program_or_options_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    runs = _count_pipeline_runs(monkeypatch)
    tirc.compile(program, inputs())
    tirc.compile(program, [torch.randn(37, 130), torch.randn(130)])
    tirc.compile(program, inputs(), options={"fusion": False})
    assert len(runs) == 3


def test_dumps_and_the_switch_bypass_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    runs = _count_pipeline_runs(monkeypatch)
    tirc.compile(program, inputs())
    tirc.compile(program, inputs(), dump_after="all", dump_dir=tmp_path / "dumps")
    assert (tmp_path / "dumps" / "05-memplan.tir").is_file()
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    tirc.compile(program, inputs())
    assert len(runs) == 3


def test_a_damaged_entry_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    first = tirc.compile(program, inputs())
    for entry in (tmp_path / "code").rglob("*.json"):
        entry.write_text("{not json")
    again = tirc.compile(program, inputs())
    assert again.code == first.code


CONCURRENT = """
import torch, tirc
def program(x, w):
    return torch.softmax(x * w, -1) + 1
torch.manual_seed(0)
x, w = torch.randn(37, 129), torch.randn(129)
compiled = tirc.compile(program, [x, w])
torch.testing.assert_close(compiled(x, w), program(x, w))
print("ok")
"""


def test_two_processes_compile_the_same_graph_at_once(tmp_path):
    """Both compile into an empty cache at the same moment (C++ build under
    a file lock, code entries renamed into place): both succeed and agree."""
    env = dict(os.environ, TIRC_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in results]
    assert all(out.strip() == "ok" for out, _ in results)
    assert len(list((tmp_path / "cpp").rglob("*.so"))) == 1
    assert len(list((tmp_path / "code").rglob("*.json"))) == 1
    assert not list(tmp_path.rglob("*.tmp"))


def test_compile_leaves_the_garbage_collector_as_it_was(tmp_path, monkeypatch):
    """tirc.compile pauses the cyclic collector (compile time) and restores it,
    also when the compile fails."""
    import gc

    import pytest

    from ir_text import TircError

    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    assert gc.isenabled()
    tirc.compile(program, inputs())
    assert gc.isenabled()
    with pytest.raises(TircError):
        tirc.compile(program, inputs(), options={"no_such_option": 1})
    assert gc.isenabled()
    gc.disable()
    try:
        tirc.compile(program, inputs())
        assert not gc.isenabled()
    finally:
        gc.enable()
