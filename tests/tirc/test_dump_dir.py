"""The dump directory: a new compile never leaves an earlier compile's stage
files beside its own, a path that names a file is an argument error, and
the summary says where dumps went only when some were written."""

from __future__ import annotations

import json

from tirc.cli import main

ADD = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(37)]


def get_init_inputs():
    return []
"""

MUL = ADD.replace("x + 1", "x * 3")


def _files(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file())


def test_a_reused_dump_directory_holds_only_the_new_compile(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "add.py").write_text(ADD)
    (tmp_path / "mul.py").write_text(MUL)
    assert main(["compile", "add.py", "--dump-after=all", "--dump-dir", "d"]) == 0
    (tmp_path / "d" / "notes.txt").write_text("the user's own file")
    capsys.readouterr()
    assert main(["compile", "mul.py", "--dump-after=fusion", "--dump-dir", "d"]) == 0
    err = capsys.readouterr().err
    assert "removed 7 file(s) of an earlier compile from d" in err
    assert _files(tmp_path / "d") == ["04-fusion.tir", "manifest.json", "notes.txt", "output_code.py"]
    assert '"mul.py"' in (tmp_path / "d" / "04-fusion.tir").read_text()
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert [f["file"] for f in manifest["files"]] == ["04-fusion.tir", "output_code.py"]


def test_a_dump_refed_from_its_own_directory_is_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "add.py").write_text(ADD)
    assert main(["compile", "add.py", "--dump-after=all", "--dump-dir", "d"]) == 0
    lower = (tmp_path / "d" / "02-lower.tir").read_text()
    assert main(["compile", "d/02-lower.tir", "--dump-after=all", "--dump-dir", "d"]) == 0
    assert (tmp_path / "d" / "02-lower.tir").read_text() == lower
    assert "01-capture.tir" not in _files(tmp_path / "d")  # another compile's
    assert main(["replay", "d/05-memplan.tir"]) == 0


def test_a_dump_directory_that_is_a_file_is_an_argument_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "add.py").write_text(ADD)
    (tmp_path / "taken").write_text("not a directory")
    assert main(["compile", "add.py", "--dump-after=all", "--dump-dir", "taken"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "add.py: error: the dump directory 'taken' exists and is not a directory"
    assert (tmp_path / "taken").read_text() == "not a directory"


def test_stopping_before_the_dumped_stages_writes_and_claims_no_dumps(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "add.py").write_text(ADD)
    assert main(["compile", "add.py", "--dump-after=fusion", "--dump-dir", "d", "--stop-after", "lower"]) == 0
    err = capsys.readouterr().err
    assert "no dumps written to d" in err and "dumps in" not in err
    assert not (tmp_path / "d").exists()
