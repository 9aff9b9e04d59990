"""The C++ cache heals: a cached object that is not the one tirc built (its
bytes, its record, or the library it loads as) is dropped with one warning
line and built again, and the program computes what eager PyTorch does; a
cache that cannot be healed is a TircError that blames it. Temporary files a
killed build left are swept, fresh ones (a live build's) kept."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import time

import pytest
import torch

import tirc
from codegen import cpp_build as cache
from codegen.cache_heal import STALE_TEMP_SECONDS, sha256_hex
from ir_text import TircError

WARNING = "tirc: warning: dropped a corrupt cache entry "


def program(x, y):
    return torch.tanh(x) * y + 1.5


def inputs():
    return [torch.randn(37, 11), torch.randn(11)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A cache holding the program's code and object, made once; tests copy
    it (a path this process never loaded, so the loader really reads it)."""
    root = tmp_path_factory.mktemp("pristine")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIRC_CACHE_DIR", str(root))
        tirc.compile(program, inputs())
    return root


@pytest.fixture(scope="module")
def foreign_library(tmp_path_factory):
    """Another program's valid shared library (no tirc kernel in it)."""
    root = tmp_path_factory.mktemp("foreign")
    (root / "foreign.c").write_text("int foreign_probe(int x) { return 3 * x; }\n")
    subprocess.run(
        [cache.compiler(), "-shared", "-fPIC", str(root / "foreign.c"), "-o", str(root / "foreign.so")],
        check=True,
    )
    return root / "foreign.so"


@pytest.fixture
def warm(pristine, tmp_path, monkeypatch):
    """A private copy of the warm cache, in use; returns its object's path."""
    root = tmp_path / "cache"
    shutil.copytree(pristine, root)
    monkeypatch.setenv("TIRC_CACHE_DIR", str(root))
    [so] = root.rglob("*.so")
    return so


def _compiles_correctly_with_one_warning(capsys, so: pathlib.Path, reason: str) -> None:
    capsys.readouterr()
    fn = tirc.compile(program, inputs())
    x = inputs()
    torch.testing.assert_close(fn(*x), program(*x))
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("tirc: warning")]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(WARNING + str(so)) and warnings[0].endswith("; rebuilding")
    assert reason in warnings[0]
    assert cache.entry_problem(so) is None  # rebuilt, with a record that matches


def _write_record(so: pathlib.Path, **fields) -> None:
    record = {"format": cache.ENTRY_FORMAT, "key": so.stem, "sha256": sha256_hex(so.read_bytes())}
    so.with_suffix(".json").write_text(json.dumps({**record, **fields}))


def test_an_object_replaced_by_another_library_is_rebuilt(warm, foreign_library, capsys):
    shutil.copyfile(foreign_library, warm)
    _compiles_correctly_with_one_warning(capsys, warm, "do not match their sha256")


def test_another_library_with_a_matching_record_is_rebuilt(warm, foreign_library, capsys):
    """Even a record rewritten to match: the library lacks the kernel."""
    shutil.copyfile(foreign_library, warm)
    _write_record(warm)
    _compiles_correctly_with_one_warning(capsys, warm, "lacks the function k0")


@pytest.mark.parametrize("damage", [b"", b"\x7fELF garbage", b"\0" * 4096], ids=["empty", "garbage", "zeros"])
def test_a_truncated_or_garbage_object_is_rebuilt(warm, capsys, damage):
    warm.write_bytes(damage)
    _compiles_correctly_with_one_warning(capsys, warm, "do not match their sha256")


def test_garbage_with_a_matching_record_is_rebuilt(warm, capsys):
    warm.write_bytes(b"not an ELF file")
    _write_record(warm)
    _compiles_correctly_with_one_warning(capsys, warm, "does not load")


RECORDS = {
    "missing": (None, "record is missing"),
    "not json": (b"{garbage", "not JSON"),
    "not utf-8": (b"\xff\xfe", "not UTF-8"),
    "a list": (b"[1, 2]", "a JSON list"),
    "no sha256": (b'{"format": 1, "key": "KEY"}', "field 'sha256'"),
    "sha256 a number": (b'{"format": 1, "key": "KEY", "sha256": 7}', "field 'sha256'"),
    "format a bool": (b'{"format": true, "key": "KEY", "sha256": "00"}', "field 'format'"),
    "other format": (b'{"format": 999, "key": "KEY", "sha256": "00"}', "format 999"),
    "other key": (b'{"format": 1, "key": "0123", "sha256": "00"}', "another entry's"),
}


@pytest.mark.parametrize("case", RECORDS, ids=list(RECORDS))
def test_a_missing_or_garbage_record_is_rebuilt(warm, capsys, case):
    text, reason = RECORDS[case]
    record = warm.with_suffix(".json")
    if text is None:
        record.unlink()
    else:
        record.write_bytes(text.replace(b"KEY", warm.stem.encode()))
    _compiles_correctly_with_one_warning(capsys, warm, reason)


def test_an_entry_that_cannot_be_removed_blames_the_cache(warm, monkeypatch):
    warm.write_bytes(b"garbage")
    unlink = pathlib.Path.unlink

    def read_only(path, missing_ok=False):
        if path.suffix in (".so", ".json") and "cpp" in path.parts:
            raise PermissionError(13, "Permission denied", str(path))
        return unlink(path, missing_ok)

    monkeypatch.setattr(pathlib.Path, "unlink", read_only)
    with pytest.raises(TircError) as caught:
        tirc.compile(program, inputs())
    message = caught.value.format()
    assert message.startswith(f"{warm}: error: compile cache: a corrupt entry (its bytes do not match")
    assert "Permission denied" in message and f"delete {warm}" in message
    assert "TIRC_CACHE_DIR" in message and "TIRC_NO_CODE_CACHE=1" in message
    assert "05-memplan" not in message and "\n" not in message


def _age(path: pathlib.Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def test_stale_temporaries_are_swept_and_fresh_ones_kept(warm, capsys):
    """Left by a killed g++ or writer: a work directory and a file older than
    the threshold go when a build writes into their directory; younger ones
    may be a live build's and stay. Nothing of it is a corrupt entry."""
    dirs = {warm.parent, *(p.parent for p in warm.parents[2].joinpath("code").rglob("*.json"))}
    for entry in [p for d in dirs for p in d.iterdir() if p.suffix in (".so", ".json")]:
        entry.unlink()  # a cold cache: both caches write into their directories
    stale, fresh = [], []
    for directory in dirs:
        work = directory / "tmpkilled.tmp"
        work.mkdir()
        (work / "unit0.cpp").write_text("// half-built")
        (directory / "tmpwriter.tmp").write_text("{")
        (directory / "tmplive.tmp").write_text("{")
        for path in (work / "unit0.cpp", work, directory / "tmpwriter.tmp"):
            _age(path, STALE_TEMP_SECONDS + 60)
        _age(directory / "tmplive.tmp", STALE_TEMP_SECONDS - 60)
        stale += [work, directory / "tmpwriter.tmp"]
        fresh.append(directory / "tmplive.tmp")
    fn = tirc.compile(program, inputs())
    x = inputs()
    torch.testing.assert_close(fn(*x), program(*x))
    assert not [p for p in stale if p.exists()]
    assert all(p.exists() for p in fresh)
    assert "tirc: warning" not in capsys.readouterr().err
