"""Per-channel pointwise kernels (codegen/triton_tiling.py): BatchNorm2d in
eval, a bias per channel, on NCHW, NCDHW and channels-last tensors. The
tiling follows the bytes each access moves (a per-channel parameter never
decides it), an NCHW plan with per-channel operands runs on rows (y = n, c;
x = h*w at stride 1), and an operand that does not vary along a tile axis
is loaded once per row or column ([YBLOCK, 1], [1, XBLOCK]). Programs run on
fresh random inputs at odd sizes against eager PyTorch, under
TRITON_INTERPRET=1."""

from __future__ import annotations

import re

import pytest
import sympy
import torch
import torch.nn.functional as F

from codegen import load_output_code, triton_configs, triton_tiling
from codegen.kernel_plan import KernelPlan, Load, Store
from matching import assert_matches, compiled
from tirc.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
PARAMS = ("p_m", "p_v", "p_w", "p_b")  # the per-channel parameters of bn_relu


def bn_relu(x, m, v, w, b):
    return F.batch_norm(x, m, v, w, b, False, 0.1, 1e-5).relu()


def bn_inputs(shape, dtype, channels_last=False):
    def make():
        x = torch.randn(shape).to(dtype)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        c = shape[1]
        return [x] + [
            t.to(dtype) for t in (torch.randn(c), torch.rand(c) + 0.5, torch.randn(c), torch.randn(c))
        ]

    return make


def tiled(code: str) -> bool:
    return "yindex = (pid // xprograms) * YBLOCK" in code


def loaded_with(code: str, param: str) -> str:
    """The mask a parameter's load uses: `ymask` for one load per tile row."""
    match = re.search(rf"tl\.load\({param} \+ \([^\n]*?\), (\w+), other=0\)", code)
    assert match, code
    return match.group(1)


def per_element_division(code: str) -> bool:
    return bool(re.search(r"xindex\)? (//|%)", code))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", [(3, 37, 9, 13), (2, 19, 8, 17)])
def test_nchw_batch_norm_runs_on_rows_with_one_parameter_load_per_row(shape, dtype):
    program, actual, expected = compiled(bn_relu, bn_inputs(shape, DTYPES[dtype]))
    assert tiled(program.code), program.code
    assert all(loaded_with(program.code, p) == "ymask" for p in PARAMS)
    assert "tl.zeros([YBLOCK, XBLOCK]" not in program.code
    assert not per_element_division(program.code), program.code
    assert_matches(actual, expected)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_nchw_batch_norm_with_short_rows_keeps_a_1d_block(dtype):
    # Rows of 5 x 7: a 1-D block is contiguous already, rows would waste lanes.
    program, actual, expected = compiled(bn_relu, bn_inputs((2, 129, 5, 7), DTYPES[dtype]))
    assert not tiled(program.code) and "XBLOCK=" in program.code
    assert_matches(actual, expected)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", [(3, 37, 9, 13), (2, 129, 5, 7)])
def test_channels_last_batch_norm_loads_parameters_once_per_column(shape, dtype):
    # A channels-last input into an NCHW output: a transpose with c along x,
    # the parameters [1, XBLOCK], the spatial side (h*w) along y.
    program, actual, expected = compiled(bn_relu, bn_inputs(shape, DTYPES[dtype], channels_last=True))
    assert tiled(program.code), program.code
    assert all(loaded_with(program.code, p) == "xmask" for p in PARAMS)
    assert "tl.zeros([YBLOCK, XBLOCK]" not in program.code
    assert_matches(actual, expected)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_bias_per_channel_on_ncdhw_runs_on_rows(dtype):
    program, actual, expected = compiled(
        lambda x, b: x + b[None, :, None, None, None],
        lambda: [torch.randn(2, 37, 3, 5, 7).to(DTYPES[dtype]), torch.randn(37).to(DTYPES[dtype])],
    )
    assert tiled(program.code) and loaded_with(program.code, "p_b") == "ymask", program.code
    assert not per_element_division(program.code), program.code
    assert_matches(actual, expected)


def test_operand_broadcast_along_rows_is_one_load_per_column():
    program, actual, expected = compiled(
        lambda x, b: (x * b).sigmoid(), lambda: [torch.randn(37, 129), torch.randn(129)]
    )
    assert tiled(program.code) and loaded_with(program.code, "p_b") == "xmask", program.code
    assert_matches(actual, expected)


def test_scalar_tensor_operand_keeps_a_1d_block():
    program, actual, expected = compiled(
        lambda x, s: x * s + 1, lambda: [torch.randn(37, 129), torch.randn(())]
    )
    assert not tiled(program.code)
    assert_matches(actual, expected)


HEADER = """tirc 0.1 stage=lower source="rows.tir"
options {backend = "triton", device = "cpu", fusion = true, max_fusion_size = 64}
"""


def test_channels_last_in_and_out_runs_on_rows_along_the_channel(tmp_path, capsys):
    # A conv epilogue in channels-last (strides [H*W*C, 1, W*C, C]) in and out:
    # a 1-D block in the plan's NCHW order would read and write at stride C.
    n, c, h, w = 2, 37, 5, 7
    strides = f"[{h * w * c}, 1, {w * c}, {c}]"
    text = HEADER + (
        f'input %x : f32[{n}, {c}, {h}, {w}] {{device = "cpu", seed = 0, strides = {strides}}}\n'
        f'input %b : f32[{c}] {{device = "cpu", seed = 1, strides = [1]}}\n\n'
        f"%buf0 = loop.pointwise [i0 < {n}, i1 < {c}, i2 < {h}, i3 < {w}] : f32[{n}, {c}, {h}, {w}]"
        f" strides {strides} {{\n"
        f"  %0 = load %x[{h * w * c}*i0 + i1 + {w * c}*i2 + {c}*i3] : f32\n"
        "  %1 = load %b[i1] : f32\n"
        "  %2 = add(%0, %1) : f32\n"
        "  %3 = constant() {value = 0.0} : f32\n"
        "  %4 = maximum(%2, %3) : f32\n"
        "  store %4\n}\nreturn (%buf0)\n"
    )
    (tmp_path / "rows.tir").write_text(text)
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "rows.tir"), "--dump-after=memplan", "--dump-dir", str(out)]) == 0
    code = (out / "output_code.py").read_text()
    assert tiled(code) and loaded_with(code, "p_b") == "xmask", code
    assert "xindex + 37 * yindex" in code.replace("(", "").replace(")", "")  # one stride-1 run per row
    x = torch.randn(n, c, h, w).contiguous(memory_format=torch.channels_last)
    b = torch.randn(c)
    (actual,) = load_output_code(code).call([x, b])
    assert actual.stride() == x.stride()
    assert_matches(actual, (x + b[:, None, None]).relu())


def plan(shape, strides, params=1):
    """out = x + p[c] (+ ...) over an f32 tensor of `shape`, x and out at `strides`."""
    flat = " + ".join(f"{s}*i{k}" for k, s in enumerate(strides))
    loads = [Load("t0", "x", sympy.sympify(flat), "f32")]
    loads += [Load(f"t{k + 1}", f"p{k}", sympy.sympify("i1"), "f32") for k in range(params)]
    return KernelPlan(
        name="k",
        ranges=shape,
        reduction=(),
        params=(("x", "f32"), *((f"p{k}", "f32") for k in range(params)), ("out", "f32")),
        num_inputs=1 + params,
        steps=(*loads, Store("out", sympy.sympify(flat), "t0", "f32")),
        nodes=("%out",),
    )


def test_a_large_nchw_activation_decides_the_tiling_not_its_parameters():
    # The issue: four per-channel parameters of 256 elements, contiguous along
    # c, tiled the kernel with c along x and the activation at a stride of H*W.
    chosen = triton_tiling.choose(plan((32, 256, 56, 56), (802816, 3136, 56, 1), params=4))
    assert chosen == triton_tiling.Tiling((("i2", 56), ("i3", 56)), (("i0", 32), ("i1", 256)), "rows"), chosen


def test_a_large_channels_last_activation_runs_on_rows_along_the_channel():
    chosen = triton_tiling.choose(plan((32, 256, 56, 56), (802816, 1, 14336, 256), params=4))
    assert chosen == triton_tiling.Tiling(
        (("i1", 256),), (("i0", 32), ("i2", 56), ("i3", 56)), "rows"
    ), chosen
    # Even without a parameter: the plan's own order would be strided.
    assert triton_tiling.choose(plan((2, 256, 7, 7), (12544, 1, 1792, 256), params=0)).kind == "rows"


@pytest.mark.parametrize("xnumel, ynumel", [(3136, 8192), (117, 111), (256, 100352), (35, 258), (1, 1)])
def test_row_configs_fill_a_block_and_waste_few_lanes(xnumel, ynumel):
    for config in triton_configs.rows(xnumel, ynumel).configs:
        xblock, yblock = config.xblock, config.rblock
        assert xblock * yblock <= 4096 and config.second == "YBLOCK"
        assert (-(-xnumel // xblock) * xblock - xnumel) * 8 <= xnumel
        assert yblock <= max(1, 2 * ynumel)
