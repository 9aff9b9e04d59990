"""Rules of the verifier that keep an edited dump within what every backend and
the interpreter agree on: reduced-precision floats are storage only, buffer
layouts do not overlap, ops take only their own attributes, one store per
body, one return, the right version, each section in its own stage."""

from __future__ import annotations

import pytest
import torch
from tir_helpers import check_text, line_of, replace_once, stage_texts

FILE = "edited.tir"


@pytest.fixture(scope="module")
def half_texts():
    return stage_texts(lambda x: torch.relu(x.half() * 2), [torch.randn(3, 4)])


MUL_IN_F32 = (
    "  %1 = to_dtype(%0) {dtype = f32} : f32\n"
    "  %2 = constant() {value = 2.0} : f32\n"
    "  %3 = mul(%1, %2) : f32\n"
    "  %4 = to_dtype(%3) {dtype = f16} : f16\n"
    "  store %4\n"
)
MUL_IN_F16 = "  %1 = constant() {value = 2.0} : f16\n  %2 = mul(%0, %1) : f16\n  store %2\n"


def _edits(texts):
    lower, memplan = texts["lower"], texts["memplan"]
    schedule_section = texts["schedule"][texts["schedule"].index("\nschedule {") :]
    return {
        "f16 arithmetic": (replace_once(lower, MUL_IN_F32, MUL_IN_F16), "mul(%0, %1) : f16", "to f32"),
        "overlapping layout": (
            replace_once(
                lower,
                '%buf0 = loop.pointwise [i0 < 3, i1 < 4] {origin = "aten._to_copy.default"} : f16[3, 4] strides [4, 1]',
                '%buf0 = loop.pointwise [i0 < 3, i1 < 4] {origin = "aten._to_copy.default"} : f16[3, 4] strides [1, 1]',
            ),
            "%buf0 = loop.pointwise",
            "overlap",
        ),
        "body op attribute": (
            replace_once(
                lower,
                "%1 = to_dtype(%0) {dtype = f16} : f16",
                "%1 = to_dtype(%0) {dtype = f16, fast = true} : f16",
            ),
            "fast = true",
            "no attribute 'fast'",
        ),
        "cast to a string": (
            replace_once(
                lower,
                "%1 = to_dtype(%0) {dtype = f16} : f16",
                '%1 = to_dtype(%0) {dtype = "f16"} : f16',
            ),
            'dtype = "f16"',
            "to_dtype needs {dtype = D}",
        ),
        "loop attribute": (
            replace_once(
                lower,
                '%buf1 = loop.pointwise [i0 < 3, i1 < 4] {origin = "aten.mul.Tensor"} :',
                '%buf1 = loop.pointwise [i0 < 3, i1 < 4] {origin = "aten.mul.Tensor", unroll = 4} :',
            ),
            "unroll = 4",
            "unknown attribute 'unroll'",
        ),
        "two stores": (
            replace_once(
                lower,
                "  %1 = to_dtype(%0) {dtype = f16} : f16\n  store %1\n",
                "  %1 = to_dtype(%0) {dtype = f16} : f16\n  store %1\n  store %1\n",
            ),
            None,
            "one 'store'",
        ),
        "two returns": (
            replace_once(lower, "return (%buf2)\n", "return (%buf2)\nreturn (%buf2)\n"),
            None,
            "one 'return'",
        ),
        "version": (replace_once(lower, "tirc 0.1 ", "tirc 9.9 "), "tirc 9.9", "version"),
        "memplan with schedule facts": (
            replace_once(memplan, "\nfusion {", schedule_section.rstrip("\n") + "\n\nfusion {"),
            None,
            "another stage",
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "f16 arithmetic",
        "overlapping layout",
        "body op attribute",
        "cast to a string",
        "loop attribute",
        "two stores",
        "two returns",
        "version",
        "memplan with schedule facts",
    ],
)
def test_rule_rejects_edit(half_texts, name):
    assert check_text(half_texts["lower"], FILE) is None
    text, needle, message = _edits(half_texts)[name]
    err = check_text(text, FILE)
    assert err is not None, "the edit was accepted"
    assert message in err.message, err.format()
    assert err.format().startswith(f"{FILE}:") or err.file == FILE
    if needle is not None:
        assert err.line == line_of(text, needle), err.format()


def test_result_shapes_are_inferred_on_the_programs_device():
    """The CPU batch norm in eval mode saves an empty mean and rstd; the CUDA
    one (and the meta kernel) saves one per channel. The capture records the
    CPU shapes, which verify on the CPU and not on CUDA (no GPU needed)."""

    def bn(x, w):
        return torch.ops.aten._native_batch_norm_legit(x, w, w, w, w.abs() + 1, False, 0.1, 1e-5)[0]

    text = stage_texts(bn, [torch.randn(4, 3, 5), torch.randn(3)])["capture"]
    needle = "aten._native_batch_norm_legit_functional.default"
    assert "f32[0], f32[0], f32[3]" in text.splitlines()[line_of(text, needle) - 1]
    assert check_text(text, FILE) is None
    on_cuda = text.replace('device = "cpu"', 'device = "cuda"').replace('"cpp"', '"triton"')
    assert on_cuda != text
    err = check_text(on_cuda, FILE)
    assert err is not None, "the CPU shapes were accepted on CUDA"
    assert "gives f32[3], but the type says f32[0]" in err.message, err.format()
    assert err.line == line_of(on_cuda, needle)


AS_STRIDED = """tirc 0.1 stage=lower source="r.py"
options {backend = "cpp"}
input %w : f32[4, 6] {device = "cpu", seed = 0, strides = [6, 1]}

%buf0 = extern aten.as_strided.default(%w, [4, 6], [6, 1], OFFSET) : f32[4, 6] strides [6, 1]
return (%buf0)
"""


@pytest.mark.parametrize("offset, ok", [(0, True), (1, False), (-1, False)])
def test_an_as_strided_view_stays_inside_its_source(offset, ok):
    """Fake tensors do not check an as_strided view against its source's
    storage (the real call fails only at run time); the verifier does."""
    err = check_text(AS_STRIDED.replace("OFFSET", str(offset)), FILE)
    if ok:
        assert err is None, err.format()
    else:
        assert err is not None and err.line == 5, err
        assert (
            "negative storage offset" if offset < 0 else "the view reaches element 24 of a source of 24"
        ) in err.message
