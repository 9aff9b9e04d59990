"""The reducer's edits give dumps that verify at their stage, whatever the
stage: derived sections are made anew for the edited program."""

from __future__ import annotations

import contextlib
import io

import pytest

from ir_text import parse, print_ir
from repro import edits
from repro.program import ancestors, items
from tirc.cli import main
from tirc.compiler import options_of
from tirc.pipeline import Context, check_module

SOURCE = """import torch


def f(x, b):
    y = torch.softmax(x + b, dim=-1)
    z = torch.sigmoid(y) * x
    return z.sum(dim=0), torch.relu(z)


def get_inputs():
    return [torch.randn(6, 37), torch.randn(37)]
"""


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("edits")
    (root / "f.py").write_text(SOURCE)
    with contextlib.redirect_stderr(io.StringIO()):
        code = main(
            ["compile", str(root / "f.py"), "--entry", "f", "--dump-after=all", "--dump-dir", str(root / "d")]
        )
    assert code == 0
    return root / "d"


def checked(module):
    """The module printed, parsed and checked as a dump of its stage."""
    again = parse(print_ir(module), "candidate")
    check_module(again, Context(options_of(again)))
    return again


@pytest.mark.parametrize("stage", ["01-capture", "02-lower", "03-schedule", "04-fusion", "05-memplan"])
def test_every_edit_keeps_a_valid_dump(stage, dumps):
    module = parse((dumps / f"{stage}.tir").read_text(), stage)
    n = len(items(module))
    candidates = [
        edits.keep_outputs(module, [1]),
        edits.reroot(module, 0, ancestors(module, module.outputs[0])[-1]),
        edits.cut(module, list(range(n // 2))),
    ]
    candidates += [edits.forward(module, k) for k in range(n)]
    if module.stage != "capture":
        candidates += [
            edits.bypass_body_ops(module, k, edits.bypassable_ops(node)[:1], choice)
            for k, node in enumerate(module.nodes)
            if edits.bypassable_ops(node)
            for choice in (0, 1)
        ]
    else:
        candidates.append(edits.shrink(module, 37, 3))
    made = [c for c in candidates if c is not None]
    assert len(made) >= 4
    for candidate in made:
        assert candidate.stage == module.stage
        checked(candidate)
    assert print_ir(module) == (dumps / f"{stage}.tir").read_text()  # the input is left alone


def test_unfuse_splits_a_kernel_into_one_per_node(dumps):
    module = parse((dumps / "04-fusion.tir").read_text(), "fusion")
    k = next(k for k, kernel in enumerate(module.kernels) if len(kernel.nodes) > 1)
    size = len(module.kernels[k].nodes)
    split = checked(edits.unfuse(module, k))
    assert len(split.kernels) == len(module.kernels) + size - 1
    assert all(len(kernel.nodes) == 1 for kernel in split.kernels[k : k + size])


def test_cut_turns_what_is_read_into_new_seeded_inputs(dumps):
    module = parse((dumps / "02-lower.tir").read_text(), "lower")
    cut = checked(edits.cut(module, [0]))
    seeds = [inp.seed for inp in cut.inputs]
    assert len(set(seeds)) == len(seeds)
    assert len(cut.nodes) == len(module.nodes) - 1
    old_names = {inp.value.hint for inp in module.inputs}
    new = [inp for inp in cut.inputs if inp.value.hint not in old_names]
    assert [inp.value.type for inp in new] == [module.nodes[0].result.type]


def test_shrink_infers_every_type_again(dumps):
    module = parse((dumps / "01-capture.tir").read_text(), "capture")
    small = checked(edits.shrink(module, 37, 3))
    assert all(37 not in inp.value.type.shape for inp in small.inputs)
    assert all(37 not in r.type.shape for op in small.graph for r in op.results)


def test_an_interrupted_reduction_keeps_its_best_candidate(dumps):
    from repro import op_count, reduce_module

    module = parse((dumps / "02-lower.tir").read_text(), "lower")
    kept = []

    def interesting(candidate, output):
        if len(kept) == 2:
            raise KeyboardInterrupt
        kept.append(candidate)
        return True

    result = reduce_module(module, interesting)
    assert result.interrupted and result.tests == 3
    assert result.module is kept[-1] and op_count(result.module) < op_count(module)
    checked(result.module)
