"""The `tirc` command line: compile, replay, fmt and verify on good programs
and dumps, and mismatch reporting (exit 1). Its error contract (exit 2) is
tested in test_cli_errors.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch

from ir_text import VERSION
from tirc.commands import _report
from tirc.compare import TOLERANCES, compare_outputs


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_compile_check_exits_0(cli, model_file, backend):
    code, err = cli("compile", model_file, "--backend", backend, "--check")
    assert code == 0, err
    assert f"backend {backend}" in err and "match" in err


def test_entry_compiles_named_function(cli, entry_file, tmp_path):
    code, err = cli(
        "compile",
        entry_file,
        "--entry",
        "swish_bias",
        "--check",
        "--dump-after=capture",
        "--dump-dir",
        tmp_path / "d",
    )
    assert code == 0, err
    capture = (tmp_path / "d" / "01-capture.tir").read_text()
    # the function's parameters name the inputs
    assert "input %x :" in capture and "input %b :" in capture
    assert "aten.sigmoid" in capture


def test_check_of_a_function_that_only_updates_its_inputs(cli, tmp_path):
    """No outputs (eager returns None): --check compares the updated inputs."""
    source = tmp_path / "step.py"
    source.write_text(
        "import torch\n\n\ndef step(p, g):\n    p.sub_(0.1 * g)\n\n\n"
        "def get_inputs():\n    return [torch.randn(37, 5), torch.randn(37, 5)]\n"
    )
    code, err = cli("compile", source, "--entry", "step", "--check")
    assert code == 0, err
    assert "match" in err


def test_stop_after_fusion_writes_no_code(cli, model_file, tmp_path, stage_files):
    out = tmp_path / "d"
    code, err = cli("compile", model_file, "--dump-after=all", "--dump-dir", out, "--stop-after=fusion")
    assert code == 0, err
    assert "fusion" in err
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([*stage_files[:4], "manifest.json"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert [e["stage"] for e in manifest["files"]] == ["capture", "lower", "schedule", "fusion"]


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_replay_every_dump(cli, dumps, stage_files, backend):
    for name in stage_files:
        code, err = cli("replay", dumps(backend) / name)
        assert code == 0, f"{name}: {err}"
        assert "ok" in err


def test_replay_with_the_other_backend(cli, dumps):
    code, err = cli("replay", dumps("cpp") / "04-fusion.tir", "--backend", "triton")
    assert code == 0, err


def test_fmt_check_accepts_every_dump(cli, dumps, stage_files):
    for backend in ("cpp", "triton"):
        paths = [dumps(backend) / name for name in stage_files]
        before = [p.read_bytes() for p in paths]
        code, err = cli("fmt", "--check", *paths)
        assert code == 0, err
        assert [p.read_bytes() for p in paths] == before


def _spread(line: str) -> str:
    """Extra spaces around '=' and ',' outside string literals."""
    parts = line.split('"')
    for k in range(0, len(parts), 2):
        parts[k] = parts[k].replace(" = ", "   =  ").replace(", ", " ,   ")
    return '"'.join(parts)


def _uglify(text: str) -> str:
    """The same IR with extra spaces, blank lines and comments."""
    out = ["// a comment before the header", ""]
    for line in text.splitlines():
        line = _spread(line)
        if line.startswith("%buf") or line.startswith("input"):
            line += "   // trailing comment"
        out.append(line)
        if line.startswith("input") or line == "}":
            out += ["", "// between", ""]
    return "\n".join(out) + "\n\n\n"


@pytest.mark.parametrize("stage", ["02-lower.tir", "04-fusion.tir", "05-memplan.tir"])
def test_fmt_rewrites_to_canonical(cli, dumps, tmp_path, stage):
    canonical = (dumps("cpp") / stage).read_text()
    ugly = _uglify(canonical)
    assert ugly != canonical
    path = tmp_path / stage
    path.write_text(ugly)
    code, err = cli("fmt", "--check", path)
    assert code == 1, err
    assert str(path) in err
    assert path.read_text() == ugly, "fmt --check must not modify the file"
    code, err = cli("fmt", path)
    assert code == 0, err
    assert path.read_text() == canonical
    assert not [p.name for p in tmp_path.iterdir() if p.name != stage], "fmt left temporary files"
    code, err = cli("fmt", "--check", path)
    assert code == 0, err


def test_verify_every_dump(cli, dumps, stage_files):
    paths = [dumps("triton") / name for name in stage_files]
    code, err = cli("verify", *paths)
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == len(paths)
    for path, line in zip(paths, lines):
        assert str(path) in line and "ok" in line


# -- mismatch reporting (exit 1) -------------------------------------------------


def test_report_exit_codes(capsys):
    assert _report(None, "eager PyTorch") == 0
    assert "ok" in capsys.readouterr().err
    expected = torch.randn(4, 5)
    actual = expected.clone()
    actual[2, 3] += 1.0
    mismatch = compare_outputs([actual], [expected])
    assert mismatch is not None
    assert _report(mismatch, "eager PyTorch") == 1
    err = capsys.readouterr().err
    assert "mismatch" in err and "eager PyTorch" in err and "[2, 3]" in err


def test_compare_names_worst_element_and_tolerance():
    torch.manual_seed(0)
    expected = torch.randn(6, 7) + 3  # no zeros: relative tolerance matters everywhere
    actual = expected.clone()
    actual[1, 2] += 1e-2
    actual[4, 5] += 5e-1  # the worst
    actual[5, 0] -= 1e-1
    mismatch = compare_outputs([expected.clone(), actual], [expected, expected])
    assert mismatch is not None
    message = mismatch.message
    assert message.startswith("output 1"), message
    assert "3 of 42" in message, message
    assert "[4, 5]" in message, message
    rtol, atol = TOLERANCES[torch.float32]
    assert f"atol {atol:g}" in message and f"rtol {rtol:g}" in message, message


def test_compare_accepts_within_tolerance_and_equal_special_values():
    rtol, atol = TOLERANCES[torch.float32]
    e = torch.tensor([1.0, -2.0, float("nan"), float("inf"), float("-inf"), 0.0])
    a = e.clone()
    a[0] += rtol * 0.5
    a[5] += atol * 0.5
    assert compare_outputs([a], [e]) is None


def test_compare_flags_a_number_where_nan_is_expected():
    e = torch.tensor([1.0, float("nan"), 3.0])
    m = compare_outputs([torch.tensor([1.0, 2.0, 3.0])], [e])
    assert m is not None and "[1]" in m.message


@pytest.mark.parametrize("got", [5.0, 0.0, float("-inf"), float("nan")])
def test_compare_flags_a_wrong_value_where_infinity_is_expected(got):
    e = torch.tensor([1.0, 2.0, float("inf"), 4.0])
    a = e.clone()
    a[2] = got
    m = compare_outputs([a], [e])
    assert m is not None, f"{got} accepted where inf was expected"
    assert "[2]" in m.message, m.message


def test_compare_integers_exact_and_structure():
    e = torch.arange(12).reshape(3, 4)
    a = e.clone()
    a[2, 1] += 1
    m = compare_outputs([a], [e])
    assert m is not None and "[2, 1]" in m.message
    assert compare_outputs([e.clone()], [e]) is None
    assert compare_outputs([e.float()], [e]) is not None  # dtype
    assert compare_outputs([e.reshape(4, 3)], [e]) is not None  # shape
    assert compare_outputs([e], [e, e]) is not None  # number of outputs


def test_replay_mismatch_exits_1(cli, dumps, monkeypatch):
    """A replay whose reference disagrees with the generated code exits 1."""
    import tirc.commands

    real = tirc.commands.interpret

    def off_by_one(module, inputs):
        outs = [t.clone() for t in real(module, inputs)]
        outs[0].view(-1)[5] += 1.0
        return outs

    monkeypatch.setattr(tirc.commands, "interpret", off_by_one)
    code, err = cli("replay", dumps("cpp") / "03-schedule.tir")
    assert code == 1, err
    assert "mismatch" in err and "atol" in err


def _tirc(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def test_version_names_the_package_and_the_text_format():
    done = _tirc("--version")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"tirc \S+ \(IR text {re.escape(VERSION)}\)\n", done.stdout)


def test_a_program_imports_the_modules_beside_it(tmp_path):
    """As `python model.py` finds a sibling module, so does `tirc compile
    model.py`, from any working directory."""
    (tmp_path / "sibling_blocks_for_tirc.py").write_text(
        "import torch\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x) * 2\n"
    )
    (tmp_path / "model.py").write_text(
        "import torch\nfrom sibling_blocks_for_tirc import Block\n\n"
        "class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.block = Block()\n\n    def forward(self, x):\n        return self.block(x) + 1\n\n"
        "def get_inputs():\n    return [torch.randn(37, 5)]\n\ndef get_init_inputs():\n    return []\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _tirc("compile", tmp_path / "model.py", "--check", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "match" in done.stdout + done.stderr
