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

from codegen import cpp_build as cache
from codegen.cpp_build import build_shared_object, start_build

ROOT = Path(__file__).resolve().parents[2]
SOURCE = 'extern "C" int tirc_cache_probe_%s(int x) { return x + 1; }\n'

CONCURRENT = """
import sys
import pytest

from codegen import cpp_build as cache
from codegen.cpp_build import build_shared_object, start_build
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
    assert sorted(p.suffix for p in files if p.suffix != ".lock") == [".json", ".so"], files


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
    build = cache._Build
    monkeypatch.setattr(cache, "_Build", lambda *a: spawned.append(1) or build(*a))
    start_build(SOURCE % "started")
    assert spawned == [1]  # g++ runs before start_build returns
    built = build_shared_object(SOURCE % "started")
    assert built.is_file() and spawned == [1]
    start_build(SOURCE % "started")  # built already: nothing to do
    assert spawned == [1]
    leftovers = [p for p in tmp_path.rglob("*") if p.suffix not in (".so", ".json", ".lock") and p.is_file()]
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


def _kernels(count: int, filler: int) -> str:
    """A prelude and `count` kernels (kernel k adds k), each padded with
    `filler` comment characters, with unit breaks as cpp.py writes them."""
    head = (
        "#include <stdint.h>\nstatic inline int32_t tirc_probe_add(int32_t a, int32_t b) { return a + b; }\n"
    )
    kernels = [
        cache.UNIT_BREAK + f"// {'x' * filler}\n"
        f'extern "C" int32_t tirc_unit_probe_{k}(int32_t x) {{ return tirc_probe_add(x, {k}); }}\n'
        for k in range(count)
    ]
    return head + "".join(kernels)


def test_units_are_runs_of_whole_kernels_of_about_equal_length():
    source = _kernels(5, cache.MIN_UNIT_CHARS)
    head = source.split(cache.UNIT_BREAK)[0]
    units = cache._units(source, jobs=2)
    assert len(units) == 2 and all(u.startswith(head + cache.UNIT_BREAK) for u in units)
    bodies = [u[len(head) :] for u in units]
    assert "".join(bodies) == source[len(head) :]  # every kernel once, in order
    assert [b.count("extern") for b in bodies] == [2, 3]
    assert cache._units(source, jobs=8) == [
        head + cache.UNIT_BREAK + k for k in source.split(cache.UNIT_BREAK)[1:]
    ]
    assert cache._units(source, jobs=1) == [source]
    assert cache._units(_kernels(5, 10), jobs=2) == [_kernels(5, 10)]  # too small to pay


def test_a_source_built_as_several_units_links_every_kernel(tmp_path, monkeypatch):
    import ctypes

    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_jobs", lambda: 3)
    source = _kernels(4, cache.MIN_UNIT_CHARS)
    assert len(cache._units(source, 3)) == 3
    library = ctypes.CDLL(str(build_shared_object(source)))
    assert [getattr(library, f"tirc_unit_probe_{k}")(40) for k in range(4)] == [40, 41, 42, 43]
    assert not list(tmp_path.rglob("*.o")) and not list(tmp_path.rglob("*.tmp"))


def test_an_error_in_one_unit_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_jobs", lambda: 2)
    source = _kernels(2, cache.MIN_UNIT_CHARS).replace("tirc_probe_add(x, 1)", "undeclared_name(x, 1)")
    assert len(cache._units(source, 2)) == 2
    with pytest.raises(
        RuntimeError, match="C\\+\\+ compilation of generated kernels failed: .*undeclared_name"
    ):
        build_shared_object(source)
    assert not list(tmp_path.rglob("*.so")) and not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize("damage", [b"", b"not an ELF file"])
def test_a_damaged_cached_object_is_built_again(tmp_path, monkeypatch, damage):
    """A cached .so damaged outside tirc (truncated by a full disk, a partial
    copy) does not load: it is discarded and built again, once."""
    from codegen import runtime

    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    name = f"damaged{len(damage)}"
    source = SOURCE % name
    path = build_shared_object(source)
    path.write_bytes(damage)
    library = runtime.cpp_library(source)
    assert getattr(library, f"tirc_cache_probe_{name}")(41) == 42
    assert path.stat().st_size > 1000
