"""`--option check_determinism=true`: a second compile in a child process,
under another PYTHONHASHSEED, must write the same bytes."""

from __future__ import annotations

import json
import re
import tempfile

import pytest
import torch

import tirc
import tirc.compiler
from tirc.cli import main

SOURCE = """import torch


def scaled_sigmoid(x, b):
    return torch.sigmoid(x + b) * SCALE


def get_inputs():
    return [torch.randn(4, 8), torch.randn(8)]
"""
# A str hash changes with PYTHONHASHSEED: a program whose constant is one
# captures differently in the check's second compile.
DETERMINISTIC = SOURCE.replace("SCALE", "2.0")
HASH_SEEDED = SOURCE.replace("SCALE", 'float(hash("x") % 1000003)')


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Temporary files of this process go here, to see that none is left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _compile(capsys, *args):
    capsys.readouterr()
    code = main(["compile", *map(str, args), "--option", "check_determinism=true"])
    return code, capsys.readouterr().err


def test_a_deterministic_program_passes_and_its_dumps_are_the_first_runs(tmp_path, private_tmp, capsys):
    source = tmp_path / "prog.py"
    source.write_text(DETERMINISTIC)
    out = tmp_path / "out"
    code, err = _compile(
        capsys, source, "--entry", "scaled_sigmoid", "--dump-after=fusion", "--dump-dir", out
    )
    assert code == 0, err
    # Only what was asked for, as without the check; the header records the option.
    assert sorted(p.name for p in out.iterdir()) == ["04-fusion.tir", "manifest.json", "output_code.py"]
    assert "check_determinism = true" in (out / "04-fusion.tir").read_text().splitlines()[1]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [f["file"] for f in manifest["files"]] == ["04-fusion.tir", "output_code.py"]
    assert list(private_tmp.glob("tirc-determinism-*")) == []


def test_a_hash_seeded_constant_is_caught_in_capture(tmp_path, private_tmp, capsys):
    source = tmp_path / "prog.py"
    source.write_text(HASH_SEEDED)
    code, err = _compile(capsys, source, "--entry", "scaled_sigmoid", "--dump-dir", tmp_path / "out")
    assert code == 2
    assert re.fullmatch(
        rf"{re.escape(str(source))}: error: not deterministic: 01-capture\.tir differs from a run under"
        r" PYTHONHASHSEED=\d+ at line \d+: '%\d+ = aten\.mul\.Tensor\(.*' here, '%\d+ = aten\.mul\.Tensor\(.*' there\n",
        err,
    )
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json", "output_code.py"]
    assert list(private_tmp.glob("tirc-determinism-*")) == []


def _fn(x, b):
    return torch.relu(x * b) + 1.0


def test_the_api_checks_the_stages_after_capture(tmp_path):
    x, b = torch.randn(4, 8), torch.randn(8)
    compiled = tirc.compile(
        _fn, [x, b], options={"check_determinism": True}, dump_dir=tmp_path, dump_after="all"
    )
    torch.testing.assert_close(compiled(x, b), _fn(x, b))
    assert "check_determinism = true" in (tmp_path / "05-memplan.tir").read_text()


def test_a_dump_is_checked_from_its_stage_on_through_the_generated_code(tmp_path, monkeypatch, capsys):
    source = tmp_path / "prog.py"
    source.write_text(DETERMINISTIC)
    main(
        [
            "compile",
            str(source),
            "--entry",
            "scaled_sigmoid",
            "--dump-after=lower",
            "--dump-dir",
            str(tmp_path),
        ]
    )
    # The child runs unpatched code: this run's output_code.py is the odd one out.
    generate = tirc.compiler.generate
    monkeypatch.setattr(tirc.compiler, "generate", lambda *a: generate(*a) + "# this run only\n")
    code, err = _compile(capsys, tmp_path / "02-lower.tir")
    assert code == 2
    assert re.search(
        r"error: not deterministic: output_code\.py differs from a run under PYTHONHASHSEED=\d+", err
    )
    assert err.endswith(": '# this run only' here, the end of the file there\n")
