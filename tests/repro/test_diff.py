"""`tirc diff`: a structural diff of two dumps that ignores value renumbering."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tirc.cli import main

SOURCE = """import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(8))

    def forward(self, x, y):
        a = torch.sigmoid(x + self.bias)
        return a * 2.0 - y, a.sum(-1)


def get_inputs():
    return [torch.randn(4, 8), torch.randn(8)]
"""

STAGES = ("01-capture", "02-lower", "03-schedule", "04-fusion", "05-memplan")


def _compile(root, source: str, *extra) -> dict[str, str]:
    root.mkdir()
    (root / "model.py").write_text(source)
    code = main(
        ["compile", str(root / "model.py"), "--dump-after=all", "--dump-dir", str(root / "d"), *extra]
    )
    assert code == 0
    return {stage: str(root / "d" / f"{stage}.tir") for stage in STAGES}


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """The dumps of SOURCE, and of SOURCE with an `abs` inserted before the
    first op (every later value renumbered), both with fusion off so that
    every node is a kernel of its own."""
    root = tmp_path_factory.mktemp("diff")
    variant = SOURCE.replace("torch.sigmoid(x + self.bias)", "torch.sigmoid(x.abs() + self.bias)")
    return {
        "base": _compile(root / "base", SOURCE, "--option", "fusion=false"),
        "variant": _compile(root / "variant", variant, "--option", "fusion=false"),
    }


def _diff(capsys, first, second):
    capsys.readouterr()
    code = main(["diff", str(first), str(second)])
    out, err = capsys.readouterr()
    return code, out, err


def _changes(out: str) -> tuple[list[str], list[str]]:
    """The removed and the added lines of a unified diff."""
    lines = out.splitlines()
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    return removed, added


def _edited(tmp_path, path: str, edit) -> str:
    text = Path(path).read_text()
    changed = edit(text)
    assert changed != text
    out = tmp_path / "edited.tir"
    out.write_text(changed)
    return str(out)


def test_renumbered_values_are_structurally_equal(dumps, tmp_path, capsys):
    memplan = dumps["base"]["05-memplan"]
    renumbered = _edited(
        tmp_path, memplan, lambda t: re.sub(r"%buf(\d+)", lambda m: f"%buf{int(m[1]) + 10}", t)
    )
    code, out, err = _diff(capsys, memplan, renumbered)
    assert (code, out) == (0, "")
    assert err == f"{memplan} and {renumbered} are structurally equal\n"


def test_an_inserted_graph_op_is_the_only_change(dumps, tmp_path, capsys):
    capture = dumps["base"]["01-capture"]
    extra = "%99 = aten.neg.default(%y) : f32[8]\n"
    edited = _edited(tmp_path, capture, lambda t: t.replace("\n\n", "\n\n" + extra, 1))
    code, out, _ = _diff(capsys, capture, edited)
    assert code == 1
    assert out.startswith(f"--- a/{capture}\n+++ b/{edited}\n")
    removed, added = _changes(out)
    assert removed == []
    assert len(added) == 1 and re.fullmatch(r"%\d+ = aten\.neg\.default\(%y\) : f32\[8\]", added[0])


def test_an_inserted_loop_node_is_the_only_change(dumps, tmp_path, capsys):
    lower = dumps["base"]["02-lower"]
    node = (
        '%buf99 = loop.pointwise [i0 < 8] {origin = "aten.neg.default"} : f32[8] strides [1] {\n'
        "  %0 = load %y[i0] : f32\n  %1 = neg(%0) : f32\n  store %1\n}\n"
    )
    edited = _edited(tmp_path, lower, lambda t: t.replace("\n\n", "\n\n" + node, 1))
    code, out, _ = _diff(capsys, lower, edited)
    removed, added = _changes(out)
    assert code == 1 and removed == []
    assert len(added) == 5 and "aten.neg.default" in added[0] and added[-1] == "}"
    # The new values take names the first dump does not use.
    names_a = set(re.findall(r"%\w+", Path(lower).read_text()))
    defined = {re.match(r"\s*(%\w+) =", line)[1] for line in added[:3]}
    assert len(defined) == 3 and not names_a & defined


def test_a_changed_graph_op_shows_that_line_only(dumps, tmp_path, capsys):
    capture = dumps["base"]["01-capture"]
    edited = _edited(tmp_path, capture, lambda t: t.replace("aten.add.Tensor", "aten.sub.Tensor", 1))
    code, out, _ = _diff(capsys, capture, edited)
    removed, added = _changes(out)
    assert code == 1 and len(removed) == len(added) == 1
    assert removed[0].replace("aten.add.Tensor", "aten.sub.Tensor") == added[0]


def test_a_changed_body_op_shows_that_line_only(dumps, tmp_path, capsys):
    lower = dumps["base"]["02-lower"]
    edited = _edited(tmp_path, lower, lambda t: t.replace("= add(", "= sub(", 1))
    code, out, _ = _diff(capsys, lower, edited)
    removed, added = _changes(out)
    assert code == 1 and len(removed) == len(added) == 1
    assert "= add(" in removed[0] and removed[0].replace("= add(", "= sub(") == added[0]


def test_real_dumps_show_the_inserted_op_without_renumbering_noise(dumps, capsys):
    for stage in STAGES:
        code, out, _ = _diff(capsys, dumps["base"][stage], dumps["variant"][stage])
        removed, added = _changes(out)
        assert code == 1
        assert any("abs" in line for line in added), stage
        if stage == "01-capture":
            # The add now reads the abs: that line, and nothing else, changes.
            assert len(removed) == 1 and removed[0].startswith("%0 = aten.add.Tensor(%x, %bias)")
            continue
        # Only what read %x and now reads the abs goes: the add's load, its fact,
        # its launch and its allocation (it now reuses the abs's storage); no
        # other node, kernel, fact or wrapper line.
        assert [line for line in removed if "= load" in line] == ["  %0 = load %x[8*i0 + i1] : f32"], stage
        assert all("%x" in line or line == "  alloc %buf0" for line in removed), (stage, removed)


def test_a_bad_file_is_an_error_with_its_position(dumps, tmp_path, capsys):
    bad = tmp_path / "bad.tir"
    bad.write_text(
        Path(dumps["base"]["01-capture"]).read_text().replace("aten.add.Tensor(", "aten.add.Tensor((", 1)
    )
    code, out, err = _diff(capsys, dumps["base"]["01-capture"], bad)
    assert code == 2 and out == ""
    assert re.fullmatch(rf"{re.escape(str(bad))}:\d+:\d+: error: .+\n", err)
    code, _, err = _diff(capsys, tmp_path / "nope.tir", bad)
    assert code == 2 and err == f"{tmp_path / 'nope.tir'}: error: no such file\n"
