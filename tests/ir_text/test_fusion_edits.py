"""Editing a fusion dump by hand: split a fused kernel, merge kernels that
fusion=false kept apart, and re-feed the dump. The compiled code must still
match the reference interpreter."""

from __future__ import annotations

import re

import pytest
import torch
from tir_helpers import check_text, replace_once, stage_texts

from ir_text import parse
from lowering import interpret
from tirc.cli import main as tirc_main
from tirc.commands import header_inputs
from tirc.compiler import compile_module
from tirc.options import Options
from tirc.pipeline import Context, check_module

FUSED = "  kernel @k0 = fuse(%buf0, %buf1, %buf2, %buf3) {group = [20, 1]}\n"


def _split(first: list[str], second: list[str], names=("k0", "k1")) -> str:
    return (
        f"  kernel @{names[0]} = fuse({', '.join(first)}) {{group = [20, 1]}}\n"
        f"  kernel @{names[1]} = fuse({', '.join(second)}) {{group = [20, 1]}}\n"
    )


def _refeed(text: str, filename: str = "04-fusion.tir", **overrides):
    """Parse and check an edited dump, then compile it as `tirc compile` would."""
    module = parse(text, filename)
    options = Options.from_pairs(list(module.options) + sorted(overrides.items()))
    check_module(module, Context(options))
    seen = {}

    class Dump:  # the DumpWriter interface, kept in memory
        def wants(self, stage):
            return True

        def write(self, filename, text, stage, module=None):
            seen[stage] = text

    compiled = compile_module(module, options, Dump())
    return module, compiled, seen


def _assert_matches_interpreter(module, compiled):
    inputs = header_inputs(module)
    expected = interpret(module, [x.clone() for x in inputs])
    actual = compiled.load().call([x.clone() for x in inputs])
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


def _kernel_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("kernel @")]


# ---- splitting a fused 4-op chain


def test_the_chain_fuses_into_one_kernel(dumps):
    assert _kernel_lines(dumps["chain"]["fusion"]) == [FUSED.strip()]


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_split_fused_kernel_still_matches(dumps, cut):
    bufs = [f"%buf{k}" for k in range(4)]
    text = replace_once(dumps["chain"]["fusion"], FUSED, _split(bufs[:cut], bufs[cut:]))
    module, compiled, seen = _refeed(text)
    assert [k.name.name for k in compiled.module.kernels] == ["k0", "k1"]
    # The buffer crossing the cut now lives in memory between the two kernels.
    crossing = f"%buf{cut - 1}"
    wrapper = seen["memplan"].split("wrapper {")[1]
    assert f"launch @k0(%x) -> ({crossing})" in wrapper
    assert f"launch @k1({crossing}) -> (%buf3)" in wrapper
    # Freed after k1, or written in place by it.
    assert f"free {crossing}" in wrapper or f"reuse {crossing} as %buf3" in wrapper
    _assert_matches_interpreter(module, compiled)


def test_split_with_renamed_kernels(dumps):
    text = replace_once(
        dumps["chain"]["fusion"], FUSED, _split(["%buf0", "%buf1"], ["%buf2", "%buf3"], ("head", "tail"))
    )
    module, compiled, seen = _refeed(text)
    assert [k.name.name for k in compiled.module.kernels] == ["head", "tail"]
    assert "launch @head(%x) -> (%buf1)" in seen["memplan"]
    _assert_matches_interpreter(module, compiled)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("names", [("main", "exp"), ("call", "x"), ("k.0", "k0_0"), ("k1", "k0")])
def test_kernels_may_have_any_symbol_as_name(dumps, names, backend):
    """Kernel names become C and Python function names: a C or libm name
    (`main`, `exp`), a wrapper or value name (`call`, `x`), a name that is no
    identifier or that looks like another kernel's nest (`k0_0`) all run."""
    text = replace_once(
        dumps["chain"]["fusion"], FUSED, _split(["%buf0", "%buf1"], ["%buf2", "%buf3"], names)
    )
    module, compiled, seen = _refeed(text, backend=backend)
    assert [k.name.name for k in compiled.module.kernels] == list(names)
    _assert_matches_interpreter(module, compiled)


@pytest.mark.parametrize("names", [("main", "main_0"), ("main_1", "main"), ("k0", "k0_split")])
def test_kernel_names_do_not_clash_with_nest_names(names):
    """A kernel of two nests (row and column sums) calls them `<name>_0` and
    `<name>_1`: another kernel named as one of them gets another name."""

    def sums(x, y):
        return x.sum(1), x.sum(0), torch.exp(y)

    texts = stage_texts(sums, [torch.randn(37, 129), torch.randn(5, 7)])
    fusion = texts["fusion"]
    assert "kernel @k0 = fuse(%buf0; %buf1)" in fusion and "kernel @k1 = fuse(" in fusion
    text = fusion.replace("kernel @k0 =", f"kernel @{names[0]} =").replace(
        "kernel @k1 =", f"kernel @{names[1]} ="
    )
    module, compiled, _ = _refeed(text)
    _assert_matches_interpreter(module, compiled)


def test_split_refeed_is_stable(dumps):
    """Re-feeding the memplan dump of an edited plan reproduces the same code."""
    text = replace_once(dumps["chain"]["fusion"], FUSED, _split(["%buf0", "%buf1"], ["%buf2", "%buf3"]))
    _, compiled, seen = _refeed(text)
    module = parse(seen["memplan"], "05-memplan.tir")
    again = compile_module(module, Options.from_pairs(module.options))
    assert again.code == compiled.code


def test_split_out_of_dependency_order_is_rejected(dumps):
    text = replace_once(dumps["chain"]["fusion"], FUSED, _split(["%buf2", "%buf3"], ["%buf0", "%buf1"]))
    err = check_text(text)
    assert err is not None and "[kernel-order]" in err.message
    assert err.line == text.splitlines().index("  kernel @k0 = fuse(%buf2, %buf3) {group = [20, 1]}") + 1


def test_split_through_cli_check(dumps, tmp_path, capsys):
    text = replace_once(dumps["chain"]["fusion"], FUSED, _split(["%buf0", "%buf1"], ["%buf2", "%buf3"]))
    path = tmp_path / "edited.tir"
    path.write_text(text)
    out_dir = tmp_path / "out"
    code = tirc_main(["compile", str(path), "--check", "--dump-after", "memplan", "--dump-dir", str(out_dir)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "2 kernel(s)" in err and "ok: outputs match the reference interpreter" in err
    memplan = (out_dir / "05-memplan.tir").read_text()
    assert _kernel_lines(memplan) == [
        "kernel @k0 = fuse(%buf0, %buf1) {group = [20, 1]}",
        "kernel @k1 = fuse(%buf2, %buf3) {group = [20, 1]}",
    ]


def test_split_with_triton_backend(dumps):
    text = replace_once(dumps["chain"]["fusion"], FUSED, _split(["%buf0"], ["%buf1", "%buf2", "%buf3"]))
    module, compiled, _ = _refeed(text, backend="triton")
    assert len(compiled.module.kernels) == 2
    _assert_matches_interpreter(module, compiled)


# ---- merging kernels that fusion=false kept apart


def relu_then_double(x):
    return torch.relu(x) * 2


@pytest.fixture(scope="module")
def unfused_pair():
    texts = stage_texts(relu_then_double, [torch.randn(4, 5)], Options(fusion=False))
    assert _kernel_lines(texts["fusion"]) == [
        "kernel @k0 = fuse(%buf0) {group = [20, 1]}",
        "kernel @k1 = fuse(%buf1) {group = [20, 1]}",
    ]
    return texts["fusion"]


def _merged(text: str) -> str:
    text = re.sub(
        r"  kernel @k0 = .*\n  kernel @k1 = .*\n",
        "  kernel @k0 = fuse(%buf0, %buf1) {group = [20, 1]}\n",
        text,
    )
    return replace_once(
        text, '  refused(%buf0, %buf1) {reason = "[fusion-disabled] option fusion=false"}\n', ""
    )


def test_merge_kernels_split_by_fusion_false(unfused_pair):
    module, compiled, seen = _refeed(_merged(unfused_pair))
    assert [k.name.name for k in compiled.module.kernels] == ["k0"]
    assert len(compiled.module.kernels[0].nodes) == 2
    # %buf0 never leaves the merged kernel: it is neither allocated nor freed.
    wrapper = seen["memplan"].split("wrapper {")[1]
    assert "%buf0" not in wrapper
    assert "launch @k0(%x) -> (%buf1)" in wrapper
    _assert_matches_interpreter(module, compiled)


def test_merge_matches_unedited_plan(unfused_pair):
    """Merged or not, the program computes the same values."""
    module, merged, _ = _refeed(_merged(unfused_pair))
    _, split, _ = _refeed(unfused_pair)
    assert len(split.module.kernels) == 2
    inputs = header_inputs(module)
    for a, b in zip(
        merged.load().call([x.clone() for x in inputs]), split.load().call([x.clone() for x in inputs])
    ):
        torch.testing.assert_close(a, b)


def test_merge_keeping_the_refusal_is_rejected(unfused_pair):
    text = re.sub(
        r"  kernel @k0 = .*\n  kernel @k1 = .*\n",
        "  kernel @k0 = fuse(%buf0, %buf1) {group = [20, 1]}\n",
        unfused_pair,
    )
    err = check_text(text)
    assert err is not None and "[stale-refusal]" in err.message
    assert (
        err.line
        == text.splitlines().index(
            '  refused(%buf0, %buf1) {reason = "[fusion-disabled] option fusion=false"}'
        )
        + 1
    )
