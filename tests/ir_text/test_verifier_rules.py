"""Rules of the verifier that keep an edited dump within what every backend and
the interpreter agree on: reduced-precision floats are storage only, buffer
layouts do not overlap, ops take only their own attributes, one store per
body, one return, the right version, each section in its own stage, b8
operands only where ATen takes bools, loops that int64 can count."""

from __future__ import annotations

import pytest
import torch
from tir_helpers import check_text, line_of, replace_once, stage_texts

from ir_text import BODY_OPS, REDUCTION_RESULT, parse
from ir_text.body_ops import REDUCTIONS
from lowering import interpret

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
            "schedule {",
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


BATCH_NORM_EVAL = """tirc 0.1 stage=capture source="prog.py"
options {backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}
input %x : f32[4, 3, 5] {device = "cpu", seed = 0, strides = [15, 5, 1]}
input %w : f32[3] {device = "cpu", seed = 1, strides = [1]}

%0 = aten.abs.default(%w) : f32[3]
%1 = aten.add.Tensor(%0, 1) : f32[3]
%2, %3, %4, %5, %6 = aten._native_batch_norm_legit_functional.default(%x, %w, %w, %w, %1, false, 0.1, 1e-05) : (f32[4, 3, 5], f32[0], f32[0], f32[3], f32[3])
return (%2)
"""


def test_result_shapes_are_inferred_on_the_programs_device():
    """The CPU batch norm in eval mode saves an empty mean and rstd; the CUDA
    one (and the meta kernel) saves one per channel. A dump with the CPU
    shapes verifies on the CPU and not on CUDA (no GPU needed). (Capture
    decomposes this op now; a dump may still name it.)"""
    needle = "aten._native_batch_norm_legit_functional.default"
    x, w = torch.randn(4, 3, 5), torch.randn(3)
    shapes = [
        tuple(t.shape)
        for t in torch.ops.aten._native_batch_norm_legit_functional(x, w, w, w, w.abs() + 1, False, 0.1, 1e-5)
    ]
    assert shapes == [(4, 3, 5), (0,), (0,), (3,), (3,)], "the dump below holds eager's CPU shapes"
    text = BATCH_NORM_EVAL
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


B8_POINTWISE = """tirc 0.1 stage=lower source="b8.py"
options {backend = "cpp"}
input %a : b8[6] {device = "cpu", seed = 0, strides = [1]}
input %b : b8[6] {device = "cpu", seed = 1, strides = [1]}

%buf0 = loop.pointwise [i0 < 6] : b8[6] strides [1] {
  %0 = load %a[i0] : b8
  %1 = load %b[i0] : b8
  %2 = OP : b8
  store %2
}
return (%buf0)
"""
B8_REDUCTION = """tirc 0.1 stage=lower source="b8.py"
options {backend = "cpp"}
input %a : b8[6] {device = "cpu", seed = 0, strides = [1]}

%buf0 = loop.reduction [i0 < 1; r0 < 6] : RESULT[1] strides [1] {
  %0 = load %a[r0] : b8
  %1 = reduce(%0) {reduction = KIND} : RESULT
  store %1
}
return (%buf0)
"""
BOOLS = (
    torch.tensor([True, False, True, False, True, True]),
    torch.tensor([False, False, True, True, True, False]),
)
TYPED_RULES = ("same", "numeric", "float", "bitwise", "compare", "logical")


def _aten_on_bools(fn, arity: int):
    """ATen's result on bool tensors, or None where it refuses them."""
    try:
        return fn(*BOOLS[:arity])
    except RuntimeError:
        return None


@pytest.mark.parametrize("name", sorted(n for n, d in BODY_OPS.items() if d.rule in TYPED_RULES))
def test_a_body_op_takes_b8_where_aten_takes_bool(name):
    """On b8 operands an op verifies exactly when ATen gives a bool for it
    on bool tensors (neg, sub, pow, floor, ... are refused, exp gives a
    float), and then the reference interpreter gives ATen's values."""
    arity = BODY_OPS[name].arity
    text = B8_POINTWISE.replace("OP", f"{name}({'%0' if arity == 1 else '%0, %1'})")
    err = check_text(text, FILE)
    want = _aten_on_bools({"truediv": torch.true_divide}.get(name) or getattr(torch, name), arity)
    if want is None or want.dtype != torch.bool:
        assert err is not None, "accepted"
        assert err.line == 9 and f"'{name}' does not take b8 operands" in err.message, err
    else:
        assert err is None, err.format()
        (got,) = interpret(parse(text, FILE), list(BOOLS))
        assert torch.equal(got, want)


@pytest.mark.parametrize("kind", REDUCTIONS)
def test_a_reduction_takes_b8_where_aten_takes_bool(kind):
    """argmax and argmin refuse bool in ATen, so reduce does on b8; the
    others verify and give ATen's value (a sum of b8 is a logical or)."""
    text = B8_REDUCTION.replace("RESULT", REDUCTION_RESULT.get(kind, "b8")).replace("KIND", kind)
    err = check_text(text, FILE)
    want = _aten_on_bools({"max": torch.amax, "min": torch.amin}.get(kind) or getattr(torch, kind), 1)
    if want is None:
        assert err is not None, "accepted"
        assert err.line == 7 and f"reduce {kind} does not take b8 values" in err.message, err
    else:
        assert err is None, err.format()
        (got,) = interpret(parse(text, FILE), list(BOOLS[:1]))
        assert torch.equal(got, want.reshape(1).to(got.dtype))


def test_a_loops_iterations_fit_int64():
    """Kernels count a loop's iterations in int64: ranges and reduction
    ranges that multiply past it are refused at the node."""
    text = B8_REDUCTION.replace("RESULT", "b8").replace("KIND", "any")
    text = replace_once(text, "r0 < 6]", "r0 < 4611686018427387904, r1 < 4]")
    err = check_text(text, FILE)
    assert err is not None and err.line == 5, err
    assert "the loop ranges multiply to 18446744073709551616 iterations, more than int64 holds" in err.message


PADDED = """tirc 0.1 stage=lower source="x.py"
options {backend = "cpp", device = "cpu", fusion = false, fusion_bisect_limit = -1, max_fusion_size = 64}
input %x : f32[4, 8] {device = "cpu", seed = 0, strides = [8, 1]}

%buf0 = loop.pointwise [i0 < 4, i1 < 8] : f32[4, 8] strides [16, 1] {
  %0 = load %x[8*i0 + i1] : f32
  %1 = neg(%0) : f32
  store %1
}
%buf1 = loop.pointwise [i0 < 4, i1 < 8] : f32[4, 8] strides [8, 1] {
  %0 = load %buf0[READ] : f32
  %1 = abs(%0) : f32
  store %1
}
return (%buf1)
"""


def test_a_load_of_elements_nothing_writes_is_refused():
    """A buffer with padded strides (rows of 16 for 8 values) leaves holes;
    a reader at the dense offsets would read uninitialized memory, which
    made replay's results differ run to run. Reading the padded offsets is
    valid, and replays exactly."""
    err = check_text(PADDED.replace("READ", "8*i0 + i1"), FILE)
    assert err is not None and err.line == 11 and err.col == 3, err
    assert "reads element 8 of its source's storage, which nothing writes" in err.message
    assert "strides [16, 1] leave holes" in err.message
    module = parse(PADDED.replace("READ", "16*i0 + i1"), FILE)
    x = torch.randn(4, 8)
    (got,) = interpret(module, [x])
    assert torch.equal(got, x.abs())
