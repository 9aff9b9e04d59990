"""Targeted CHECK lines over real dumps of the golden cases: each test pins
only the fact it names, so it survives unrelated changes to the dumps."""

from __future__ import annotations


def dump(case_dumps, case: str, file: str) -> str:
    return (case_dumps(case) / file).read_text()


def test_softmax_fuses_into_one_kernel(case_dumps, golden):
    golden.check_lines(
        dump(case_dumps, "softmax", "04-fusion.tir"),
        """
        # CHECK-LABEL: fusion {
        # CHECK-COUNT-1: kernel @k0 = fuse(%buf0, %buf1, %buf2, %buf3, %buf4, %buf5)
        # CHECK-NOT: kernel @
        """,
    )


def test_softmax_lowers_to_two_reductions_and_no_plan(case_dumps, golden):
    golden.check_lines(
        dump(case_dumps, "softmax", "02-lower.tir"),
        """
        # CHECK: stage=lower source="source.py"
        # CHECK: = loop.reduction [i0 < 7, i1 < 1; r0 < 37] {origin = "aten.amax.default"}
        # CHECK-NEXT: load %buf0[37*i0 + r0]
        # CHECK-NEXT: reduce({{%[0-9]+}}) {reduction = max}
        # CHECK: = loop.reduction
        # CHECK-SAME: {origin = "aten.sum.dim_IntList"}
        # CHECK-NOT: fusion {
        """,
    )


def test_softmax_kernel_loops_three_times_over_a_row(case_dumps, golden):
    """max, exp and sum, then the scaling by the sum's reciprocal, computed
    once per row (the CPU softmax's IR multiplies, as ATen's kernel does)."""
    golden.check_lines(
        dump(case_dumps, "softmax", "output_code.py"),
        """
        # CHECK-LABEL: extern "C" void k0(
        # CHECK-NEXT: for (int64_t i0 = 0; i0 < 7; ++i0) {
        # CHECK-COUNT-2: for (int64_t r0 = 0; r0 < 37; ++r0) {
        # CHECK: = (1 / t
        # CHECK-NEXT: #pragma omp simd
        # CHECK-NEXT: for (int64_t r0 = 0; r0 < 37; ++r0) {
        # CHECK: * t
        # CHECK-NOT: for (int64_t r0
        # CHECK-LABEL: def call(args):
        """,
    )


def test_linear_matmul_is_an_extern_and_its_bias_joins_the_relu(case_dumps, golden):
    golden.check_lines(
        dump(case_dumps, "linear_relu", "04-fusion.tir"),
        """
        # CHECK-LABEL: %buf1 = extern aten.mm.default(%x, %buf0)
        # CHECK-SAME: : f32[7, 16]
        # CHECK-NEXT: %buf2 = loop.pointwise {{.*}}"aten.addmm.default"
        # CHECK: load %linear.bias[i1]
        # CHECK: %buf3 = loop.pointwise {{.*}}"aten.relu.default"
        # CHECK-LABEL: fusion {
        # CHECK: kernel @k2 = fuse(%buf2, %buf3)
        # CHECK: refused(%buf1, %buf2) {reason = "[extern] %buf1 is an extern call
        """,
    )


def test_layer_norm_reads_weight_and_bias_in_its_one_kernel(case_dumps, golden):
    golden.check_lines(
        dump(case_dumps, "layer_norm", "05-memplan.tir"),
        """
        // CHECK: input %norm.weight : f32[37]
        // CHECK-NEXT: input %norm.bias : f32[37]
        // CHECK-LABEL: wrapper {
        // CHECK-NEXT: alloc %buf5
        // CHECK-NEXT: launch @k0(%x, %norm.weight, %norm.bias) -> (%buf5)
        // CHECK-NOT: launch
        """,
    )
