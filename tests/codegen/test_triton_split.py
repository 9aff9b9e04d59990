"""Split reductions in the Triton backend (codegen/triton_split.py): a
one-pass reduction into few long rows runs as a kernel reducing chunks into a
workspace of partials and a kernel combining them. Checked through the
interpreter against eager on fresh random inputs, at sizes that split with
the default thresholds (about 1e5 elements) and, with the thresholds and
blocks made tiny, over many short chunks; and what is not split: many rows,
argmax, multi-pass plans, pinned configs.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import codegen.triton
import codegen.triton_body
import codegen.triton_configs
import tirc
from codegen import triton_tune
from codegen.kernel_plan import module_plans
from matching import compiled

# The Triton interpreter warns about lanes that are masked off or hold NaN on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32 = (1e-4, 1e-4)
HALF = (2e-2, 2e-2)


def splits(code: str) -> int:
    """How many split reductions `call` launches (each allocates a workspace)."""
    return "".join(code.split()).count("_split,(")


def split_kernels(program) -> list[int]:
    """The `split` attribute of each kernel of the program's plan that has one."""
    return [dict(k.attrs)["split"] for k in program.compiled.module.kernels if "split" in dict(k.attrs)]


def reduction_kernels(program) -> list:
    module = program.compiled.module
    reductions = {id(n.result) for n in module.nodes if n.kind == "reduction"}
    return [k for k in module.kernels if any(id(v) in reductions for v in k.nodes)]


def with_nan(*shape):
    """Random values with one NaN at a random place."""
    x = torch.randn(*shape)
    x.view(-1)[torch.randint(0, x.numel(), ())] = float("nan")
    return x


def one_true(n):
    x = torch.zeros(n, dtype=torch.bool)
    x[torch.randint(0, n, ())] = True
    return x


def near_one(*shape):
    return 1 + (torch.rand(*shape) - 0.5) * 1e-3


def max_nan_in_one_row(x):
    return x.amax(1)


def nan_in_row_one(*shape):
    x = torch.randn(*shape)
    x[1, torch.randint(0, shape[1], ())] = float("nan")
    return x


# name -> (function, make_inputs, tolerance); each splits with the default thresholds.
PROGRAMS = {
    "sum_70001": (lambda x: x.sum(), lambda: [torch.randn(70001)], F32),
    "sum_2_17_plus_3": (lambda x: x.sum(), lambda: [torch.randn(2**17 + 3)], F32),
    "sum_1000003": (lambda x: x.sum(), lambda: [torch.randn(1000003)], (1e-4, 1e-3)),
    "sum_rows_dim1": (lambda x: x.sum(1), lambda: [torch.randn(3, 100003)], F32),
    "sum_columns_dim0": (lambda x: x.sum(0), lambda: [torch.randn(100003, 5)], F32),
    "mean": (lambda x: x.mean(), lambda: [torch.randn(70001) + 0.5], F32),
    "abs_max": (lambda x: x.abs().max(), lambda: [torch.randn(70001)], F32),
    "dot": (lambda x, y: (x * y).sum(), lambda: [torch.randn(70001), torch.randn(70001)], F32),
    "vector_norm": (lambda x: torch.linalg.vector_norm(x), lambda: [torch.randn(70001)], F32),
    "prod": (lambda x: x.prod(), lambda: [near_one(70001)], (1e-3, 1e-5)),
    "sum_and_max_together": (lambda x: (x.sum(), x.amax()), lambda: [torch.randn(70001)], F32),
    "bf16_mean": (lambda x: x.mean(), lambda: [torch.randn(70001).bfloat16()], HALF),
    "bf16_sum_rows": (lambda x: x.sum(1), lambda: [torch.randn(2, 70001).bfloat16()], HALF),
    "f16_sum": (lambda x: x.sum(), lambda: [torch.randn(70001).half()], HALF),
    "int64_sum": (lambda a: a.sum(), lambda: [torch.randint(-1000, 1000, (70001,))], (0, 0)),
    "any": (lambda b: b.any(), lambda: [one_true(70001)], (0, 0)),
    "all": (lambda b: (~b).all(), lambda: [one_true(70001)], (0, 0)),
    "any_all_of_compare": (
        lambda x: ((x > 3.5).any(), (x > -3.5).all()),
        lambda: [torch.randn(70001)],
        (0, 0),
    ),
    "max_nan": (lambda x: x.amax(), lambda: [with_nan(70001)], (0, 0)),
    "min_nan": (lambda x: x.amin(), lambda: [with_nan(70001)], (0, 0)),
    "max_nan_in_one_row": (max_nan_in_one_row, lambda: [nan_in_row_one(3, 70001)], (0, 0)),
}


def check(got, want, tolerance):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    rtol, atol = tolerance
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_split_reduction_matches_eager(name):
    fn, make_inputs, tolerance = PROGRAMS[name]
    program, got, want = compiled(fn, make_inputs)
    assert splits(program.code) == 1
    assert "torch.empty((" in program.code  # the workspace of partials
    check(got, want, tolerance)


@pytest.fixture
def tiny_splits(monkeypatch):
    """Split at small sizes, over many chunks of a few blocks of 8."""
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MIN_RNUMEL", 64)
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MIN_CHUNK", 16)
    monkeypatch.setattr(codegen.triton_configs, "RBLOCK_MAX", 8)
    monkeypatch.setattr(codegen.triton_configs, "TILE_MAX", 32)
    monkeypatch.setattr(codegen.triton_configs, "PERSISTENT_MAX", 4)
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")  # its key does not see the patches


TINY = {
    "sum_1001": (lambda x: x.sum(), lambda: [torch.randn(1001)]),
    "sum_exact_chunks": (lambda x: x.sum(), lambda: [torch.randn(1024)]),
    "sum_rows_odd": (lambda x: x.sum(1), lambda: [torch.randn(5, 1003)]),
    "sum_columns_odd": (lambda x: x.sum(0), lambda: [torch.randn(1003, 7)]),
    "mean_middle_dim": (lambda x: x.mean(1), lambda: [torch.randn(3, 337, 2)]),
    "sum_all_of_2d": (lambda x: x.sum(), lambda: [torch.randn(31, 37)]),
    "max_nan_rows": (max_nan_in_one_row, lambda: [nan_in_row_one(3, 1001)]),
    "all_rows": (lambda x: (x > -2.5).all(1), lambda: [torch.randn(3, 1001)]),
    "bf16_sum": (lambda x: x.sum(), lambda: [torch.randn(1001).bfloat16()]),
    # A per-row input read before the loop, and a per-element output stored in it.
    "centered_sum_and_values": (
        lambda x, m: ((x - m[:, None]) * 2, ((x - m[:, None]) * 2).sum(1)),
        lambda: [torch.randn(3, 1001), torch.randn(3)],
    ),
}


@pytest.mark.parametrize("name", list(TINY))
def test_many_short_chunks_mask_every_end(name, tiny_splits):
    fn, make_inputs = TINY[name]
    program, got, want = compiled(fn, make_inputs)
    assert splits(program.code) == 1
    tolerance = HALF if "bf16" in name else F32
    check(got, want, tolerance)


def test_int64_indices_when_offsets_could_overflow(tiny_splits, monkeypatch):
    # Pretend every block may overrun past 2**31: indices and chunk starts turn int64.
    monkeypatch.setattr(codegen.triton_body, "BLOCK_OVERRUN", 2**31)
    program, got, want = compiled(lambda x: x.sum(1), lambda: [torch.randn(3, 1003)])
    assert "tl.program_id(1).to(tl.int64) * rchunk" in program.code
    check(got, want, F32)


def test_many_rows_are_not_split(tiny_splits):
    rows = codegen.triton_configs.SPLIT_MAX_ROWS  # not fewer than the threshold
    program, got, want = compiled(lambda x: x.sum(1), lambda: [torch.randn(rows, 1001)])
    assert splits(program.code) == 0
    check(got, want, F32)


def test_many_rows_in_few_column_tiles_are_split(tiny_splits, monkeypatch):
    """An outer reduction (a column sum: loads contiguous along the rows)
    takes 32 rows a program: more rows than SPLIT_MAX_ROWS can still be
    too few programs, and it is split; with enough programs it is not."""
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MAX_ROWS", 64)
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MAX_PROGRAMS", 4)
    few = 32 * codegen.triton_configs.SPLIT_MAX_PROGRAMS - 37  # 3 programs of 32 rows
    program, got, want = compiled(lambda x: x.sum(0), lambda: [torch.randn(67, few)])
    assert few >= codegen.triton_configs.SPLIT_MAX_ROWS and splits(program.code) == 1
    check(got, want, F32)
    many = 32 * codegen.triton_configs.SPLIT_MAX_PROGRAMS + 5
    program, got, want = compiled(lambda x: x.sum(0), lambda: [torch.randn(67, many)])
    assert splits(program.code) == 0
    check(got, want, F32)


def test_few_column_tiles_of_short_columns_are_split(tiny_splits, monkeypatch):
    """A column tile reduces its rows' whole columns: an outer reduction is
    split when its tiles are few and each tile's elements are many, though
    each column is shorter than SPLIT_MIN_RNUMEL (Restormer's L2 norms over
    the pixels of an NHWC map); a row reduction of such short rows is not."""
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MAX_ROWS", 64)
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MAX_PROGRAMS", 4)
    short = codegen.triton_configs.SPLIT_MIN_RNUMEL - 27
    program, got, want = compiled(lambda x: x.sum(0), lambda: [torch.randn(short, 91)])
    assert splits(program.code) == 1
    check(got, want, F32)
    program, got, want = compiled(lambda x: x.sum(1), lambda: [torch.randn(5, short)])
    assert splits(program.code) == 0
    check(got, want, F32)


def test_a_second_pass_over_few_column_tiles_runs_after_the_split(tiny_splits, monkeypatch):
    """Normalizing columns by their norms reads each column's result per
    element: with few column tiles the fusion pass keeps the reduction's
    kernel one pass, so that it is split, and the division runs after it;
    with enough tiles the division shares the reduction's kernel."""
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MAX_ROWS", 64)
    monkeypatch.setattr(codegen.triton_configs, "SPLIT_MAX_PROGRAMS", 4)

    def normalize(x):
        return x / x.norm(dim=0)

    few = 32 * codegen.triton_configs.SPLIT_MAX_PROGRAMS - 37
    program, got, want = compiled(normalize, lambda: [torch.randn(67, few)])
    assert splits(program.code) == 1
    (kernel,) = reduction_kernels(program)
    assert [n.kind for n in program.compiled.module.nodes if any(v is n.result for v in kernel.nodes)] == [
        "reduction"
    ]
    check(got, want, F32)
    many = 32 * codegen.triton_configs.SPLIT_MAX_PROGRAMS + 5
    program, got, want = compiled(normalize, lambda: [torch.randn(67, many)])
    assert splits(program.code) == 0
    (kernel,) = reduction_kernels(program)
    assert len(kernel.nodes) > 1
    check(got, want, F32)


def test_argmax_is_not_split():
    program, got, want = compiled(lambda x: x.argmax(), lambda: [torch.randn(2, 70001)])
    assert splits(program.code) == 0
    check(got, want, F32)


@pytest.mark.parametrize(
    "fn, reductions",
    # float64 variance: a first mean, then the deviations (lowering/reductions.py).
    [(lambda x: torch.softmax(x, -1), 2), (lambda x: torch.var(x.double()), 2)],
    ids=["softmax", "var_f64"],
)
def test_multi_pass_plans_become_one_split_kernel_per_pass(fn, reductions):
    # The fusion pass keeps each pass of a few-long-row plan in a kernel of its own (scheduler/split.py).
    program, got, want = compiled(fn, lambda: [torch.randn(2, 70001)])
    assert splits(program.code) == reductions == len(split_kernels(program))
    check(got, want, F32)


def test_a_pinned_config_is_never_split():
    program = tirc.compile(lambda x: x.sum(), [torch.randn(70001)], backend="triton")
    (_, plan), *_ = module_plans(program.compiled.module)
    assert codegen.triton.launch_config(plan).kind == "split"
    assert codegen.triton.split_count(plan) == plan.split == 7
    # The plan check accepts no kernel with both attributes (tests/scheduler/test_split_plan_edits.py).
    pinned = replace(plan, launch=(1, 2048, 8, 1), split=None)
    assert codegen.triton.split_count(pinned) is None
    assert codegen.triton.launch_config(pinned).kind == "looped"
    # (Not "_split" anywhere: the kernel's comment names this file, test_triton_split.py.)
    assert "def k0_split" not in codegen.triton.render_kernel(pinned)


def test_split_kernels_are_not_timed_and_render_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    monkeypatch.setattr(triton_tune, "enabled", lambda device: True)

    def no_timing(run):
        raise AssertionError("a split reduction must not be timed")

    monkeypatch.setattr(triton_tune, "_do_bench", no_timing)
    fn = lambda x: x.mean()  # noqa: E731
    first = tirc.compile(fn, [torch.randn(70001)], backend="triton")
    again = tirc.compile(fn, [torch.randn(70001)], backend="triton")
    assert first.code == again.code and splits(first.code) == 1
    assert all("triton_config" not in dict(k.attrs) for k in first.compiled.module.kernels)
    plans = [plan for _, plan in module_plans(first.compiled.module)]
    assert codegen.triton.render_kernels(plans) == codegen.triton.render_kernels(plans)
    assert [codegen.triton.render_kernel(p) for p in plans] == [
        codegen.triton.render_kernel(p) for p in plans
    ]


def group_norm(x, w, b):
    return torch.nn.functional.group_norm(x, 2, w, b)


def instance_norm(x):
    return torch.nn.functional.instance_norm(x)


def batch_norm_training(x, w, b):
    return torch.nn.functional.batch_norm(x, None, None, w, b, training=True)


def norm_divide(x):
    return x / torch.norm(x)


def softmax_of_one_row(x):
    return torch.softmax(x, -1)


def var_mean_of_all(x):
    return torch.var_mean(x)


# name -> (function, inputs, reductions): chains of reductions over few long
# rows (after tiny_splits: rows of at least 64 elements, fewer than 64 rows),
# each reduction a split kernel of its own, the per-element rest pointwise.
# A variance (the norms') is one pass of two sums: one split kernel.
CHAINS = {
    "norm_divide": (norm_divide, lambda dt: [torch.randn(3, 7, 37, dtype=dt)], 1),
    "group_norm_2_groups_batch_2": (
        group_norm,
        lambda dt: [torch.randn(2, 4, 9, 37, dtype=dt), torch.randn(4, dtype=dt), torch.randn(4, dtype=dt)],
        1,
    ),
    "instance_norm_3_rows": (instance_norm, lambda dt: [torch.randn(1, 3, 19, 37, dtype=dt)], 1),
    "batch_norm_training": (
        batch_norm_training,
        lambda dt: [torch.randn(4, 3, 13, 17, dtype=dt), torch.randn(3, dtype=dt), torch.randn(3, dtype=dt)],
        1,
    ),
    "var_mean_of_all": (var_mean_of_all, lambda dt: [torch.randn(1001, dtype=dt) + 3], 1),
    "softmax_of_one_row": (softmax_of_one_row, lambda dt: [torch.randn(1, 1001, dtype=dt)], 2),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", list(CHAINS))
def test_reduction_chains_over_few_long_rows_split_every_reduction(name, dtype, tiny_splits):
    fn, make_inputs, reductions = CHAINS[name]
    program, got, want = compiled(fn, lambda: make_inputs(dtype))
    kernels = reduction_kernels(program)
    assert len(kernels) == reductions
    assert all(dict(k.attrs).get("split", 0) >= 2 for k in kernels), [k.attrs for k in kernels]
    assert splits(program.code) == reductions
    check(got, want, F32 if dtype == torch.float32 else HALF)


def test_the_refusal_reason_is_in_the_fusion_dump(tiny_splits):
    program = tirc.compile(norm_divide, [torch.randn(3, 7, 37)], backend="triton")
    reasons = [r.reason for r in program.compiled.module.refusals]
    assert any(r.startswith("[split] ") and "per element, a second pass" in r for r in reasons), reasons


def test_without_a_split_the_chain_fuses_as_before():
    # Rows too many or too short to split: the division stays in the reduction's kernel.
    program = tirc.compile(norm_divide, [torch.randn(3, 7, 37)], backend="triton")
    assert len(program.compiled.module.kernels) == 1 and not split_kernels(program)


def test_the_cpp_backend_keeps_multi_pass_kernels(tiny_splits):
    # cpp_split.py chunks every pass of one kernel across threads: no rule, no attribute.
    program, got, want = compiled(var_mean_of_all, lambda: [torch.randn(70001) + 3], backend="cpp")
    assert len(program.compiled.module.kernels) == 1 and not split_kernels(program)
    check(got, want, F32)
