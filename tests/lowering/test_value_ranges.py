"""Capture records the values each input needs (`range = [lo, hi]` in the
header), seeded replay draws from it, and the verifier checks it: a model with
token ids, class targets or gather indices replays without --save-inputs."""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F

from codegen import random_input
from ir_text import TircError, parse, print_ir, verify
from lowering import capture
from lowering.value_ranges import input_ranges
from tirc.cli import main as tirc_main
from tirc.options import Options


def ranges_of(fn, inputs) -> dict[str, tuple | None]:
    module, _, _ = capture(fn, inputs, "t.py", None, Options().to_pairs())
    return {inp.value.hint: inp.range for inp in module.inputs}


def test_embedding_indices_below_the_vocabulary():
    emb = torch.nn.Embedding(13, 3)
    ranges = ranges_of(emb, [torch.randint(0, 13, (2, 5))])
    assert ranges == {"weight": None, "input": (0, 13)}


def test_cross_entropy_targets_through_the_ignore_index_where():
    def f(logits, target):
        return F.cross_entropy(logits, target)

    assert ranges_of(f, [torch.randn(5, 7), torch.randint(0, 7, (5,))]) == {"logits": None, "target": (0, 7)}


def test_gather_index_bounded_by_the_gathered_dim_through_a_view_and_a_cast():
    def f(src, idx):
        return torch.gather(src, 1, idx.view(3, 2).to(torch.int64))

    ranges = ranges_of(f, [torch.randn(3, 11), torch.randint(0, 11, (6,), dtype=torch.int32)])
    assert ranges == {"src": None, "idx": (0, 11)}


def test_several_uses_intersect():
    def f(a, b, idx):
        return torch.index_select(a, 0, idx), torch.index_select(b, 1, idx)

    ranges = ranges_of(f, [torch.randn(9, 2), torch.randn(2, 5), torch.randint(0, 5, (3,))])
    assert ranges["idx"] == (0, 5)


def test_advanced_index_allows_negative_indices_per_dim():
    def f(x, i, j):
        return x[i[:, None], j[None, :]]

    ranges = ranges_of(f, [torch.randn(7, 4), torch.randint(0, 7, (3,)), torch.randint(0, 4, (2,))])
    assert ranges == {"x": None, "i": (-7, 7), "j": (-4, 4)}


def test_a_range_stays_within_the_inputs_dtype():
    text = HEADER.replace("i64[3]", "i8[3]").replace("f32[4]", "f32[300]")
    module = parse(re.sub(r"range = \[[^\]]*\], ", "", text), "t.tir")
    assert input_ranges(module) == {module.inputs[1].value: (-128, 128)}


def test_batch_norm_variance_is_non_negative_and_sqrt_alone_is_free():
    bn = torch.nn.BatchNorm1d(5).eval()
    ranges = ranges_of(bn, [torch.randn(3, 5)])
    assert ranges["running_var"] == (0.0, math.inf)
    assert ranges["running_mean"] is None

    assert ranges_of(torch.sqrt, [torch.randn(4)]) == {"arg0": None}


def test_random_input_draws_within_the_range():
    ints = random_input((37,), (1,), torch.int64, "cpu", 3, (2, 9))
    assert ints.min() >= 2 and ints.max() < 9 and len(ints.unique()) > 3
    var = random_input((41,), (1,), torch.float32, "cpu", 4, (0.0, math.inf))
    assert var.min() >= 0 and var.std() > 0
    prob = random_input((5, 3), (1, 5), torch.float16, "cpu", 5, (0.0, 1.0))
    assert prob.min() >= 0 and prob.max() <= 1 and prob.stride() == (1, 5)
    # No range: the old draw, bit for bit.
    old = random_input((29,), (1,), torch.int32, "cpu", 6)
    assert old.abs().max() <= 8 and (old != 0).all()


MODEL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(23, 6)
        self.bn = nn.BatchNorm1d(6).eval()

    def forward(self, tokens, logits, target, src, idx, rows):
        e = self.bn(self.emb(tokens).transpose(1, 2))
        loss = F.cross_entropy(logits, target)
        return e, loss, torch.gather(src, 1, idx), torch.index_select(src, 0, rows)


def get_inputs():
    return [
        torch.randint(0, 23, (3, 7)),
        torch.randn(5, 11),
        torch.randint(0, 11, (5,)),
        torch.randn(9, 13),
        torch.randint(0, 13, (9, 4)),
        torch.randint(0, 9, (6,)),
    ]


def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ranges")
    source = directory / "indexing.py"
    source.write_text(MODEL)
    out = directory / "out"
    code = tirc_main(["compile", str(source), "--dump-after=all", "--dump-dir", str(out), "--check"])
    assert code == 0
    return out


@pytest.mark.parametrize("stage", ["01-capture", "02-lower", "05-memplan"])
def test_seeded_replay_of_an_indexing_model_exits_0(dumps, stage, capsys):
    assert tirc_main(["replay", str(dumps / f"{stage}.tir")]) == 0, capsys.readouterr().err


def test_without_the_ranges_eager_refuses_the_seeded_inputs(dumps, tmp_path, capsys):
    """The defect this fixes: the same dump with -8..8 integers fails in eager."""
    text = re.sub(r"range = \[[^\]]*\], ", "", (dumps / "01-capture.tir").read_text())
    bare = tmp_path / "bare.tir"
    bare.write_text(text)
    capsys.readouterr()
    assert tirc_main(["replay", str(bare)]) == 2
    assert "without a `range` attribute" in capsys.readouterr().err


HEADER = """tirc 0.1 stage=capture source="t.py"
options {}
input %x : f32[4] {device = "cpu", range = [0.0, inf], seed = 0, strides = [1]}
input %i : i64[3] {device = "cpu", range = [-4, 4], seed = 1, strides = [1]}

%0 = aten.index.Tensor(%x, [%i]) : f32[3]
return (%0)
"""


def test_range_round_trips_byte_exactly():
    module = verify(parse(HEADER, "t.tir"))
    assert [inp.range for inp in module.inputs] == [(0.0, math.inf), (-4, 4)]
    assert print_ir(module) == HEADER


@pytest.mark.parametrize(
    "bad, message",
    [
        ("range = [-4.5, 4]", "input %i: range [-4.5, 4]: an i64 input's range takes integers"),
        ("range = [4, 4]", "input %i: range [4, 4]: lo must be less than hi"),
        ("range = [0, inf]", "input %i: range [0, inf]: an i64 input's range takes integers"),
        ("range = [0]", "input %i: range must be a list of two numbers [lo, hi]"),
        ("range = [0, nan]", "input %i: range must be a list of two numbers [lo, hi]"),
        ('range = ["a", 2]', "input %i: range must be a list of two numbers [lo, hi]"),
    ],
)
def test_bad_range_is_one_located_error(bad, message, tmp_path, capsys):
    path = tmp_path / "t.tir"
    path.write_text(HEADER.replace("range = [-4, 4]", bad))
    capsys.readouterr()
    assert tirc_main(["verify", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"{path}:4:7: error: {message}"]


def test_range_must_fit_the_dtype_and_bools_take_none():
    text = HEADER.replace("i64[3]", "i8[3]").replace("[-4, 4]", "[0, 300]")
    with pytest.raises(TircError, match=r"range \[0, 300\]: i8 holds \[-128, 127\] only"):
        verify(parse(text, "t.tir"))
    text = HEADER.replace("f32[4]", "b8[4]").replace("range = [0.0, inf], ", "range = [0, 2], ")
    with pytest.raises(TircError, match="a range applies to integer and float inputs, not b8"):
        verify(parse(text, "t.tir"))
