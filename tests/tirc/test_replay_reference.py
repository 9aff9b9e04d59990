"""Replay's float64 reference exists for every op tirc emits: oneDNN's linear
(chosen at compile time, no float64 kernel) runs through ATen's addmm in
float64; a reference that still cannot be computed is an error (exit 2) that
names the op, never a mismatch (exit 1); and a selection recorded in a lower
dump is what a re-fed dump runs, never re-timed."""

from __future__ import annotations

import pytest
import torch

import lowering
from codegen import cpp_extern_select as extern_select
from ir_text import parse
from lowering import interpret
from tirc import commands

ONEDNN = "mkldnn._linear_pointwise.default"

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch has no oneDNN")


def linear_dump(dtype="f32", bias="%b", attr="none", target=ONEDNN, after="sigmoid"):
    """A lower dump: a linear (odd sizes) as the extern `target`, then a
    pointwise node computing `after` of it."""
    weight_t = ""
    weight = "%w"
    if target != ONEDNN:  # ATen's form: addmm(b, x, w.t()), the transpose a view
        weight_t = f'%wt = extern aten.as_strided.default(%w, [129, 23], [1, 129]) : {dtype}[129, 23] strides [1, 129] loc("linear.py":3)\n'
        weight = "%wt"
    call = (
        f'{target}(%x, %w, {bias}, "{attr}", [], "")'
        if target == ONEDNN
        else f"{target}({bias}, %x, {weight})"
    )
    return (
        'tirc 0.1 stage=lower source="linear.py"\n'
        'options {backend = "cpp", device = "cpu"}\n'
        f'input %x : {dtype}[37, 129] {{device = "cpu", seed = 0, strides = [129, 1]}}\n'
        f'input %w : {dtype}[23, 129] {{device = "cpu", seed = 1, strides = [129, 1]}}\n'
        f'input %b : {dtype}[23] {{device = "cpu", seed = 2, strides = [1]}}\n'
        "\n"
        f"{weight_t}"
        f'%buf0 = extern {call} : {dtype}[37, 23] strides [23, 1] loc("linear.py":3)\n'
        f'%buf1 = loop.pointwise [i0 < 37, i1 < 23] {{origin = "aten.{after}.default"}} : {dtype}[37, 23] strides [23, 1] {{\n'
        f"  %0 = load %buf0[23*i0 + i1] : {dtype}\n"
        f"  %1 = {after}(%0) : {dtype}\n"
        "  store %1\n"
        '} loc("linear.py":4)\n'
        "return (%buf1)\n"
    )


def extern_line(text: str) -> int:
    return next(k for k, line in enumerate(text.splitlines(), 1) if line.startswith("%buf0 = extern"))


@pytest.fixture
def noisy_reference(monkeypatch):
    """The float32 reference made as noisy as an ill-conditioned program's
    (relative 1e-3, beyond rtol 1e-4): only the float64 run can clear it."""
    exact = commands._reference

    def noisy(module, inputs):
        gen = torch.Generator().manual_seed(7)
        return [o + 1e-3 * o.abs() * torch.randn(o.shape, generator=gen) for o in exact(module, inputs)]

    monkeypatch.setattr(commands, "_reference", noisy)


@pytest.fixture
def equivalent_calls(monkeypatch):
    """Counts calls of oneDNN linear's float64 stand-in."""
    calls = []
    stand_in = lowering.FLOAT64_EQUIVALENTS[ONEDNN]

    def counted(*args):
        calls.append(args[0].dtype)
        return stand_in(*args)

    monkeypatch.setitem(lowering.FLOAT64_EQUIVALENTS, ONEDNN, counted)
    return calls


@pytest.mark.parametrize("bias", ["%b", "none"], ids=["addmm", "mm"])
def test_float64_interpretation_of_onednn_linear_is_addmm(bias):
    """The reference interpreter runs oneDNN's linear in float64 as ATen's
    addmm (mm without a bias), in float64."""
    module = parse(linear_dump("f64", bias=bias, after="neg"), "linear.tir")
    gen = torch.Generator().manual_seed(3)
    x, w, b = (
        torch.randn(*shape, generator=gen, dtype=torch.float64) for shape in ((37, 129), (23, 129), (23,))
    )
    (out,) = interpret(module, [x, w, b])
    expected = torch.addmm(b, x, w.t()) if bias == "%b" else torch.mm(x, w.t())
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, -expected, rtol=1e-12, atol=1e-12)


def test_summation_noise_is_cleared_through_the_float64_stand_in(
    tmp_path, cli, noisy_reference, equivalent_calls
):
    path = tmp_path / "linear.tir"
    path.write_text(linear_dump())
    code, err = cli("replay", path)
    assert code == 0, err
    assert equivalent_calls == [torch.float64]  # the second look ran, through addmm


def test_a_miscompile_is_still_a_mismatch(tmp_path, cli, equivalent_calls):
    """With the float64 run available, a wrong kernel (sigmoid computed as
    tanh) is told from noise: exit 1, against the float64 run."""
    path = tmp_path / "linear.tir"
    path.write_text(
        linear_dump().replace(
            'device = "cpu"}', 'device = "cpu", inject_fault = "codegen:miscompile:sigmoid"}', 1
        )
    )
    code, err = cli("replay", path)
    assert code == 1, err
    assert "mismatch against the reference interpreter" in err and "against a float64 run" in err, err
    assert equivalent_calls == [torch.float64]


@pytest.mark.parametrize(
    "attr, without_stand_in, why",
    [
        ("relu", False, f"{ONEDNN} with post-op 'relu' has no float64 equivalent"),
        ("none", True, f"{ONEDNN} has no float64 kernel (RuntimeError: "),
    ],
    ids=["post-op", "no-stand-in"],
)
def test_an_impossible_float64_reference_is_undecided_not_a_mismatch(
    tmp_path, cli, monkeypatch, noisy_reference, attr, without_stand_in, why
):
    if without_stand_in:
        monkeypatch.delitem(lowering.FLOAT64_EQUIVALENTS, ONEDNN)
    text = linear_dump(attr=attr)
    path = tmp_path / "linear.tir"
    path.write_text(text)
    code, err = cli("replay", path)
    assert code == 2, err
    where = f"{path}:{extern_line(text)}:1: error: "
    assert f"{where}the float64 reference could not be computed: NoFloat64Kernel: {why}" in err, err
    assert "output 0: " in err and "undecided, not a mismatch" in err, err
    assert "Traceback" not in err


def test_no_float64_run_when_the_outputs_match(tmp_path, cli, equivalent_calls):
    """Within the elementwise tolerance nothing more is asked: a program
    whose float64 reference is impossible replays fine."""
    path = tmp_path / "linear.tir"
    path.write_text(linear_dump(attr="relu"))
    code, err = cli("replay", path)
    assert code == 0, err
    assert equivalent_calls == []


@pytest.fixture
def selecting(tmp_path, monkeypatch):
    """Selection on, with its own cache, timed by a made-up clock favouring
    `fast` ("aten" or "onednn"); the returned list counts runs timed."""
    monkeypatch.setenv("TIRC_AUTOTUNE", "1")
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))

    def favour(fast: str) -> list:
        timed = []

        def clock(run):
            run()
            timed.append(run.__name__)
            return 0.001 if run.__name__ == fast else 0.002

        monkeypatch.setattr(extern_select, "_one_run", clock)
        return timed

    return favour


@pytest.mark.parametrize(
    "target, favoured", [(ONEDNN, "aten"), ("aten.addmm.default", "onednn")], ids=["onednn", "aten"]
)
def test_a_refed_lower_dump_runs_the_extern_it_names(tmp_path, cli, selecting, target, favoured):
    """The choice is recorded in the lower dump: re-fed with timing on and a
    clock favouring the other library, the dump keeps its op, untimed."""
    timed = selecting(favoured)
    path = tmp_path / "linear.tir"
    path.write_text(linear_dump(target=target))
    code, err = cli("compile", path, "--dump-after=memplan", "--dump-dir", tmp_path / "d", "--check")
    assert code == 0, err
    memplan = (tmp_path / "d" / "05-memplan.tir").read_text()
    assert f"extern {target}(" in memplan
    other = "aten.addmm.default" if target == ONEDNN else ONEDNN
    assert other not in memplan and other not in (tmp_path / "d" / "output_code.py").read_text()
    assert timed == []
