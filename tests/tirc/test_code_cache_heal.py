"""The compiled-code cache heals: an entry of the wrong shape, one whose code
or memplan text does not match its sha256, code that is not Python, or
memplan text that does not parse is dropped with one warning line and
compiled again, and the program computes what eager PyTorch does. An entry
that cannot be dropped is one `PATH: error:` line blaming the cache, exit 2."""

from __future__ import annotations

import hashlib
import json
import pathlib
from types import SimpleNamespace

import pytest
import torch

import tirc
import tirc.pipeline
from tirc import code_cache

WARNING = "tirc: warning: dropped a corrupt cache entry "


def program(x, w):
    return torch.sigmoid(x * w) - 0.25


def inputs():
    return [torch.randn(19, 33), torch.randn(33)]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def entry(tmp_path, monkeypatch):
    """The cache entry of `program` (`.path`), compiled once into a private
    cache, and the pipeline's runs from then on (`.runs`)."""
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    tirc.compile(program, inputs())
    [path] = (tmp_path / "code").rglob("*.json")
    runs = []
    original = tirc.pipeline.run_stages
    monkeypatch.setattr("tirc.compiler.run_stages", lambda *a, **k: runs.append(1) or original(*a, **k))
    return SimpleNamespace(path=path, runs=runs)


def _with(decoded: dict, **fields) -> dict:
    return {**decoded, **fields}


# name: (how the decoded entry is damaged, a word of the warning's reason)
DAMAGE = {
    "a list": (lambda e: [e["code"], e["memplan"]], "a JSON list"),
    "a string": (lambda e: "code", "a JSON str"),
    "no memplan": (lambda e: {k: v for k, v in e.items() if k != "memplan"}, "field 'memplan'"),
    "code a number": (lambda e: _with(e, code=7), "field 'code'"),
    "hash a list": (lambda e: _with(e, code_sha256=[e["code_sha256"]]), "field 'code_sha256'"),
    "old format": (lambda e: {"code": e["code"], "memplan": e["memplan"]}, "field 'format'"),
    "other format": (lambda e: _with(e, format=99), "format 99"),
    "code edited": (lambda e: _with(e, code=e["code"] + "import os\n"), "code does not match its sha256"),
    "memplan garbage": (lambda e: _with(e, memplan="}{ garbage"), "memplan does not match its sha256"),
    "code not Python": (lambda e: _with(e, code="def (:\n", code_sha256=_sha("def (:\n")), "not Python"),
    "code with a null byte": (lambda e: _with(e, code="x = 1\0", code_sha256=_sha("x = 1\0")), "not Python"),
}


def _compiles_correctly_with_one_warning(capsys, entry: SimpleNamespace, reason: str) -> None:
    capsys.readouterr()
    fn = tirc.compile(program, inputs())
    x = inputs()
    torch.testing.assert_close(fn(*x), program(*x))
    assert fn.compiled.module.stage == "memplan"
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("tirc: warning")]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"{WARNING}{entry.path} (") and warnings[0].endswith("); rebuilding")
    assert reason in warnings[0]
    assert "05-memplan" not in warnings[0]
    assert entry.runs == [1]  # compiled again ...
    assert (
        code_cache.entry_problem(json.loads(entry.path.read_text()), str(entry.path)) is None
    )  # ... and stored


@pytest.mark.parametrize("case", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_entry_is_dropped_and_compiled_again(entry, capsys, case):
    damage, reason = DAMAGE[case]
    entry.path.write_text(json.dumps(damage(json.loads(entry.path.read_text()))))
    _compiles_correctly_with_one_warning(capsys, entry, reason)


@pytest.mark.parametrize("text", [b"{not json", b"\xff\xfe{}", b""], ids=["not json", "not utf-8", "empty"])
def test_an_entry_that_is_not_json_is_dropped_and_compiled_again(entry, capsys, text):
    entry.path.write_bytes(text)
    _compiles_correctly_with_one_warning(capsys, entry, "unreadable")


def test_memplan_text_that_does_not_parse_is_dropped_and_compiled_again(entry, capsys):
    """Its hash matching, the text is found bad only when parsed, which a
    warm compile defers until the module is asked for."""
    decoded = json.loads(entry.path.read_text())
    bad = decoded["memplan"].replace("kernel", "kernal", 1)
    entry.path.write_text(json.dumps(_with(decoded, memplan=bad, memplan_sha256=_sha(bad))))
    _compiles_correctly_with_one_warning(capsys, entry, "memplan text does not parse: memplan:")


def test_an_entry_that_cannot_be_dropped_blames_the_cache(tmp_path, monkeypatch, cli, model_file):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    assert cli("compile", model_file)[0] == 0
    [entry] = (tmp_path / "cache" / "code").rglob("*.json")
    entry.write_text("[]")
    unlink = pathlib.Path.unlink

    def read_only(path, missing_ok=False):
        if path == entry:
            raise PermissionError(13, "Permission denied", str(path))
        return unlink(path, missing_ok)

    monkeypatch.setattr(pathlib.Path, "unlink", read_only)
    code, err = cli("compile", model_file)
    assert code == 2
    [line] = err.strip().splitlines()
    assert line.startswith(f"{entry}: error: compile cache: a corrupt entry (a JSON list")
    assert "Permission denied" in line and f"delete {entry}" in line
    assert "TIRC_CACHE_DIR" in line and "TIRC_NO_CODE_CACHE=1" in line and "05-memplan" not in line
