"""Every kind of kernel plan through the Triton backend: reductions (with their
identities, NaN and first-occurrence rules), scans, indirect and clamped
indices, pooling. Programs are compiled on example inputs and run on fresh
random inputs at odd sizes, against eager PyTorch; a few are also checked
against the C++ backend on the same inputs. Runs under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import codegen.triton_configs
import tirc
from matching import assert_matches
from codegen import load_output_code
from ir_text import parse
from lowering import interpret
from tirc.cli import main

# The Triton interpreter warns about lanes that are masked off or hold NaN on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def ties_and_nans(shape, dim, dtype=torch.float32):
    """A 2-D input for reducing along `dim`: small integers (many ties), NaNs
    scattered in the even slices across `dim` (the odd ones have none), slice 1
    all -inf and slice 3 all +inf."""
    x = torch.randint(0, 4, shape).to(dtype)
    nan = torch.rand(shape) < 0.15
    keep = [slice(None)] * len(shape)
    keep[1 - dim] = slice(1, None, 2)
    nan[tuple(keep)] = False
    x[nan] = float("nan")
    x.select(1 - dim, 1).fill_(float("-inf"))
    x.select(1 - dim, 3).fill_(float("inf"))
    return x


def near_one(*shape):
    return torch.rand(*shape) * 0.5 + 0.75


# name -> (function, make_inputs); make_inputs runs once for the example inputs
# and once for the fresh inputs the result is checked on.
PROGRAMS = {
    "sum_last_dim": (lambda x: x.sum(-1), lambda: [torch.randn(37, 129)]),
    "sum_first_dim": (lambda x: x.sum(0), lambda: [torch.randn(129, 37)]),
    "sum_all": (lambda x: x.sum(), lambda: [torch.randn(37, 29)]),
    "sum_one_element": (lambda x: x.sum(1), lambda: [torch.randn(37, 1)]),
    "sum_empty_dim": (lambda x: x.sum(1) + 1, lambda: [torch.randn(5, 0)]),
    "no_rows_to_reduce_or_scan": (lambda x: (x.sum(1), torch.cumsum(x, 1)), lambda: [torch.randn(0, 5)]),
    "mean_1000_keepdim": (lambda x: x.mean(-1, keepdim=True), lambda: [torch.randn(7, 1000)]),
    "mean_middle_dim": (lambda x: x.mean(1), lambda: [torch.randn(3, 37, 5)]),
    "prod": (lambda x: x.prod(1), lambda: [near_one(13, 37)]),
    "amax_nan": (lambda x: x.amax(1), lambda: [ties_and_nans((37, 29), 1)]),
    "amin_nan_first_dim": (lambda x: x.amin(0), lambda: [ties_and_nans((29, 37), 0)]),
    "argmax_ties_nan": (lambda x: x.argmax(1), lambda: [ties_and_nans((37, 29), 1)]),
    "argmin_ties_nan_first_dim": (lambda x: x.argmin(0), lambda: [ties_and_nans((29, 37), 0)]),
    "argmax_flat": (lambda x: x.argmax(), lambda: [torch.randint(0, 3, (5, 37)).float()]),
    "argmin_int": (lambda a: a.argmin(1), lambda: [torch.randint(-3, 3, (37, 29))]),
    "max_dim_both_outputs": (lambda x: x.max(1), lambda: [ties_and_nans((37, 29), 1)]),
    "any_all": (lambda x: ((x > 1.5).any(1), (x > -1.5).all(0)), lambda: [torch.randn(37, 29)]),
    "int32_sum": (lambda a: a.sum(1), lambda: [torch.randint(-100, 100, (37, 129), dtype=torch.int32)]),
    "var_two_pass": (lambda x: torch.var(x, 1), lambda: [torch.randn(37, 129) * 3 + 5]),
    "softmax": (lambda x: torch.softmax(x, -1), lambda: [torch.randn(37, 129) * 4]),
    "log_softmax_first_dim": (lambda x: torch.log_softmax(x, 0), lambda: [torch.randn(37, 29)]),
    "layer_norm": (
        lambda x, w, b: F.layer_norm(x, (129,), w, b),
        lambda: [torch.randn(37, 129) * 2 + 1, torch.randn(129), torch.randn(129)],
    ),
    "f16_sum": (lambda x: x.sum(-1), lambda: [torch.randn(37, 129).half()]),
    "bf16_sum": (lambda x: x.sum(0), lambda: [torch.randn(129, 37).bfloat16()]),
    "f16_softmax": (lambda x: torch.softmax(x, -1), lambda: [torch.randn(37, 129).half()]),
    "bf16_softmax": (lambda x: torch.softmax(x, -1), lambda: [torch.randn(37, 129).bfloat16()]),
    "cumsum_each_dim": (
        lambda x: (torch.cumsum(x, 0), torch.cumsum(x, 1), torch.cumsum(x, 2)),
        lambda: [torch.randn(5, 37, 7)],
    ),
    "cumprod_each_dim": (
        lambda x: (torch.cumprod(x, 0), torch.cumprod(x, 1)),
        lambda: [near_one(37, 29)],
    ),
    "cumsum_int32_to_int64": (
        lambda a: torch.cumsum(a, 1),
        lambda: [torch.randint(-9, 9, (5, 129), dtype=torch.int32)],
    ),
    "cumsum_1000": (lambda x: torch.cumsum(x, 0), lambda: [torch.randn(1000)]),
    "gather": (
        lambda x, i: torch.gather(x, 1, i),
        lambda: [torch.randn(37, 29), torch.randint(0, 29, (37, 5))],
    ),
    "index_select": (
        lambda x, i: torch.index_select(x, 0, i),
        lambda: [torch.randn(37, 29), torch.randint(0, 37, (13,))],
    ),
    "embedding": (
        lambda w, i: F.embedding(i, w),
        lambda: [torch.randn(37, 29), torch.randint(0, 37, (5, 7))],
    ),
    "advanced_indexing_negative": (
        lambda x, i: x[i] * 2,
        lambda: [torch.randn(37, 29), torch.randint(-37, 37, (13,))],
    ),
    "cat": (
        lambda x, y: torch.cat([x, y * 2], 1),
        lambda: [torch.randn(37, 29), torch.randn(37, 5)],
    ),
    "constant_pad_nd": (lambda x: F.pad(x, (1, 2, -1, 3), value=0.5), lambda: [torch.randn(5, 37, 29)]),
    "max_pool2d_with_indices": (
        lambda x: F.max_pool2d_with_indices(x, 3, 2, 1),
        lambda: [torch.randn(2, 3, 13, 11)],
    ),
    "avg_pool2d_padding_exclude_pad": (
        lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
        lambda: [torch.randn(2, 3, 13, 11)],
    ),
    "avg_pool2d_ceil_mode": (
        lambda x: F.avg_pool2d(x, 2, 2, 0, ceil_mode=True),
        lambda: [torch.randn(2, 3, 13, 11)],
    ),
    "adaptive_avg_pool2d": (
        lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
        lambda: [torch.randn(2, 3, 13, 11)],
    ),
}


def run(backend, fn, make_inputs):
    """The compiled program's results and eager's, on fresh inputs."""
    torch.manual_seed(0)
    compiled = tirc.compile(fn, make_inputs(), backend=backend)
    torch.manual_seed(1)
    fresh = make_inputs()
    return compiled(*[x.clone() for x in fresh]), fn(*fresh)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_eager(name):
    assert_matches(*run("triton", *PROGRAMS[name]))


@pytest.mark.parametrize(
    "name", ["argmax_ties_nan", "amin_nan_first_dim", "max_pool2d_with_indices", "cumsum_each_dim", "prod"]
)
def test_program_matches_cpp(name):
    triton_out, _ = run("triton", *PROGRAMS[name])
    cpp_out, _ = run("cpp", *PROGRAMS[name])
    assert_matches(triton_out, cpp_out)


@pytest.mark.parametrize(
    "name", ["sum_last_dim", "argmax_ties_nan", "argmin_ties_nan_first_dim", "cumsum_each_dim"]
)
def test_reductions_and_scans_over_several_chunks(name, monkeypatch):
    # Small blocks, so the loops run over several chunks of RBLOCK and carry state.
    monkeypatch.setattr(codegen.triton_configs, "RBLOCK_MAX", 8)
    monkeypatch.setattr(codegen.triton_configs, "TILE_MAX", 32)
    monkeypatch.setattr(codegen.triton_configs, "PERSISTENT_MAX", 4)
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")  # its key does not see the patch
    assert_matches(*run("triton", *PROGRAMS[name]))


def compile_dump(text: str, tmp_path, capsys):
    """Compile a hand-written lower-stage module; the generated module and its source."""
    source = tmp_path / "kinds.tir"
    source.write_text(text)
    out = tmp_path / "out"
    assert (
        main(["compile", str(source), "--dump-after=memplan", "--dump-dir", str(out)]) == 0
    ), capsys.readouterr().err
    code = (out / "output_code.py").read_text()
    return load_output_code(code), code


HEADER = """tirc 0.1 stage=lower source="kinds.tir"
options {backend = "triton", device = "cpu", fusion = true, max_fusion_size = 64}
"""


def reduction(k: int, reduce: str, source: str, rsize: int, dtype: str) -> str:
    load_dtype = "b8" if source == "p" else "f32"
    return f"""%buf{k} = loop.reduction [i0 < 37; r0 < {rsize}] : {dtype}[37] strides [1] {{
  %0 = load %{source}[5*i0 + r0] : {load_dtype}
  %1 = reduce(%0) {{reduction = {reduce}}} : {dtype}
  store %1
}}
"""


def test_boolean_and_empty_reductions(tmp_path, capsys):
    # Written by hand: lowering sends these to ATen or never meets them.
    nodes = [
        ("max", "p", 5, "b8"),
        ("min", "p", 5, "b8"),
        ("argmax", "x", 5, "i64"),  # of b8 the verifier refuses, as ATen does
        ("max", "x", 0, "f32"),
        ("argmin", "x", 0, "i64"),
        ("prod", "x", 0, "f32"),
        ("all", "p", 0, "b8"),
        ("any", "p", 0, "b8"),
    ]
    text = HEADER + (
        'input %p : b8[37, 5] {device = "cpu", seed = 0, strides = [5, 1]}\n'
        'input %x : f32[37, 5] {device = "cpu", seed = 1, strides = [5, 1]}\n\n'
    )
    text += "".join(reduction(k, *node) for k, node in enumerate(nodes))
    text += f"return ({', '.join(f'%buf{k}' for k in range(len(nodes)))})\n"
    module, _ = compile_dump(text, tmp_path, capsys)
    p, x = torch.rand(37, 5) > 0.5, torch.randn(37, 5)
    expected = [
        p.any(1),
        p.all(1),
        x.argmax(1),
        torch.full((37,), float("-inf")),
        torch.zeros(37, dtype=torch.int64),
        torch.ones(37),
        torch.ones(37, dtype=torch.bool),
        torch.zeros(37, dtype=torch.bool),
    ]
    for actual, want in zip(module.call([p, x]), expected):
        torch.testing.assert_close(actual, want, rtol=0, atol=0)


def test_floordiv_and_mod_of_negative_index_round_as_python(tmp_path, capsys):
    # Triton's // and % truncate toward zero; IR indices round toward -inf.
    text = HEADER + """input %x : f32[10] {device = "cpu", seed = 0, strides = [1]}

%buf0 = loop.pointwise [i0 < 8] : f32[8] strides [1] {
  %0 = load %x[mod(i0 - 3, 5) + floordiv(i0 - 3, 2) + 2] : f32
  store %0
}
%buf1 = loop.pointwise [i0 < 8] : i64[8] strides [1] {
  %0 = index [floordiv(i0 - 3, 2) + mod(i0 - 5, 3)] : i64
  store %0
}
return (%buf0, %buf1)
"""
    module, _ = compile_dump(text, tmp_path, capsys)
    x = torch.randn(10)
    expected = interpret(parse(text, "kinds.tir"), [x.clone()])
    for actual, want in zip(module.call([x]), expected):
        torch.testing.assert_close(actual, want, rtol=0, atol=0)


def test_offsets_beyond_int32_use_int64(tmp_path, capsys):
    # A few elements 2**31 apart: small kernels whose offsets overflow int32.
    text = HEADER + """input %x : f32[4294967301] {device = "cpu", seed = 0, strides = [1]}

%buf0 = loop.pointwise [i0 < 3] : f32[3] strides [1] {
  %0 = load %x[2147483648*i0] : f32
  store %0
}
%buf1 = loop.reduction [i0 < 3; r0 < 5] : f32[3] strides [1] {
  %0 = load %x[2147483648*i0 + r0] : f32
  %1 = reduce(%0) {reduction = sum} : f32
  store %1
}
return (%buf0, %buf1)
"""
    _, code = compile_dump(text, tmp_path, capsys)
    # Fused or not, every kernel computes its offsets in int64.
    kernels = code.count("xindex = tl.program_id(0)")
    assert kernels >= 1
    assert code.count("xindex = tl.program_id(0).to(tl.int64) * XBLOCK") == kernels
    assert "rindex = tl.arange(0, RBLOCK)[None, :].to(tl.int64)" in code
