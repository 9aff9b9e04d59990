"""The loop kinds beyond pointwise (reduction, scan, extern) and the body ops
they bring (reduce, scan, index, indirect; min/max in indices; input updates):
their text round-trips, and each rule rejects a bad edit with a located error."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from tir_helpers import check_text, line_of, replace_once, stage_texts

from ir_text import parse, print_ir, structurally_equal

LOWER = """\
tirc 0.1 stage=lower source="x.py"
options {}
input %x : f32[8, 37] {device = "cpu", seed = 0, strides = [37, 1]}
input %t : i64[8] {device = "cpu", seed = 1, strides = [1]}

%buf0 = loop.reduction [i0 < 8, i1 < 1; r0 < 37] {origin = "aten.sum.dim_IntList"} : f32[8, 1] strides [1, 1] {
  %0 = load %x[37*i0 + r0] : f32
  %1 = reduce(%0) {reduction = sum} : f32
  %2 = constant() {value = 0.5} : f32
  %3 = mul(%1, %2) : f32
  store %3
}
%buf1 = loop.pointwise [i0 < 8] : f32[8] strides [1] {
  %0 = load %t[i0] : i64
  %ind0 = indirect(%0) {size = 37} : i64
  %1 = load %x[37*i0 + ind0] : f32
  %2 = index [max(0, i0 - 2) + min(3, i0)] : i64
  %3 = to_dtype(%2) {dtype = f32} : f32
  %4 = add(%1, %3) : f32
  store %4
}
%buf2 = loop.scan [i0 < 8, i1 < 37] : f32[8, 37] strides [37, 1] {
  %0 = load %x[37*i0 + i1] : f32
  %1 = scan(%0) {dim = 1, reduction = sum} : f32
  store %1
}
// aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
%buf3, %buf4 = extern aten.topk.default(%x, 3) : (f32[8, 3] strides [3, 1], i64[8, 3] strides [3, 1])
update %x = %buf2
return (%buf0, %buf1, %buf3, %buf4)
"""


def test_new_constructs_round_trip():
    module = parse(LOWER, "kinds.tir")
    assert check_text(LOWER) is None
    assert print_ir(module) == LOWER
    assert structurally_equal(parse(print_ir(module)), module)


BAD_EDITS = {
    "reduce in a pointwise node": (
        (
            "  %2 = index [max(0, i0 - 2) + min(3, i0)] : i64\n",
            "  %9 = reduce(%1) {reduction = sum} : f32\n  %2 = index [max(0, i0 - 2) + min(3, i0)] : i64\n",
        ),
        "%9 = reduce",
        "'reduce' belongs in a loop.reduction node",
    ),
    "r-variable in the epilogue": (
        ("  %2 = constant() {value = 0.5} : f32\n", "  %2 = load %x[r0] : f32\n"),
        "%2 = load %x[r0]",
        "'r0', which is not a loop variable here",
    ),
    "value from before the reduce in the epilogue": (
        ("  %3 = mul(%1, %2) : f32\n", "  %3 = mul(%0, %2) : f32\n"),
        "%3 = mul(%0, %2)",
        "is not a value of this loop body",
    ),
    "misnamed indirect": (("%ind0 = indirect", "%k = indirect"), "%k = indirect", "must be named %ind0"),
    "integer constant out of range": (
        (
            "  %2 = index [max(0, i0 - 2) + min(3, i0)] : i64\n",
            "  %2 = constant() {value = 9223372036854775808} : i64\n",
        ),
        "value = 9223372036854775808",
        "9223372036854775808 is outside the range of int64",
    ),
    "index arithmetic overflowing int64": (
        (
            "%2 = index [max(0, i0 - 2) + min(3, i0)]",
            "%2 = index [floordiv(9223372036854775807*i0, 9223372036854775807)]",
        ),
        "%2 = index [floordiv(",
        "may overflow int64",
    ),
    "indirect wrap not a bool": (("{size = 37}", "{size = 37, wrap = 1}"), "wrap = 1", "true or false"),
    "indirect range too large": (
        ("{size = 37}", "{size = 300}"),
        "%1 = load %x[37*i0 + ind0]",
        "outside the 296 elements",
    ),
    "scan dim out of range": (
        ("{dim = 1, reduction = sum}", "{dim = 2, reduction = sum}"),
        "scan(%0)",
        "0 <= D < 2",
    ),
    "unknown reduction": (
        ("{reduction = sum} : f32\n  %2", "{reduction = median} : f32\n  %2"),
        "median",
        "reduce needs",
    ),
    "extern result shape": (
        ("(f32[8, 3] strides [3, 1], i64", "(f32[8, 4] strides [4, 1], i64"),
        "extern aten.topk",
        "gives f32[8, 3], but the type says f32[8, 4]",
    ),
    "unknown extern op": (
        ("extern aten.topk.default", "extern aten.topkk.default"),
        "extern aten.topkk",
        "unknown op",
    ),
    "update of a buffer": (("update %x = %buf2", "update %buf1 = %buf2"), "return (", "not an input"),
}


@pytest.mark.parametrize("name", sorted(BAD_EDITS))
def test_bad_edit_is_rejected_at_its_line(name):
    (old, new), line_needle, message = BAD_EDITS[name]
    text = replace_once(LOWER, old, new)
    err = check_text(text, "kinds.tir")
    assert err is not None, "the edit was accepted"
    assert message in str(err)
    assert err.line == line_of(text, line_needle), str(err)


@pytest.fixture(scope="module")
def reduction_texts():
    return stage_texts(lambda x: F.softmax(x, -1) + torch.sort(x, -1)[0], [torch.randn(4, 9)])


def test_extern_nodes_are_never_fused_and_softmax_is_one_kernel(reduction_texts):
    fusion = reduction_texts["fusion"]
    assert "[extern]" in fusion
    kernels = [line for line in fusion.splitlines() if line.startswith("  kernel @")]
    # The softmax chain and the add of the sorted values share one kernel;
    # the sort is an extern call of its own.
    assert len(kernels) == 2, kernels
    memplan = reduction_texts["memplan"]
    assert "  extern @" in memplan


def test_merging_an_extern_call_into_a_kernel_is_rejected(reduction_texts):
    text = reduction_texts["fusion"]
    kernels = [line for line in text.splitlines() if line.startswith("  kernel @")]
    first, second = kernels[0], kernels[1]
    names = first[first.index("fuse(") + 5 : first.index(")")].split(", ")
    names += second[second.index("fuse(") + 5 : second.index(")")].split(", ")
    nodes = ", ".join(sorted(names, key=lambda n: int(n.removeprefix("%buf"))))
    merged = first[: first.index("fuse(") + 5] + nodes + first[first.index(")") :]
    edited = replace_once(text, first + "\n" + second + "\n", merged + "\n")
    edited = (
        "\n".join(
            line
            for line in edited.splitlines()
            if not line.startswith("  refused(") and not line.startswith("  kernel @k1")
        )
        + "\n"
    )
    err = check_text(edited)
    assert err is not None
    assert "[extern]" in str(err), str(err)


def test_extern_kernel_launched_as_a_loop_is_rejected(reduction_texts):
    text = reduction_texts["memplan"]
    line = next(x for x in text.splitlines() if x.startswith("  extern @"))
    edited = replace_once(text, line, line.replace("  extern @", "  launch @"))
    err = check_text(edited)
    assert err is not None and "[extern-line]" in str(err), str(err)
