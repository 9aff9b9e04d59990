"""The comment above each kernel of output_code.py names the user's source
lines and the ATen ops of its nodes (codegen/kernel_comments.py), on both
backends; an extern call in `call` carries its line; kernels with the same
code are still shared, whatever their comments say; and a dump's file and
op names, any strings, cannot break out of the comment."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
import torch

import tirc
from codegen.kernel_comments import MAX_LINES, MAX_OPS, comment_text, source_lines
from codegen.kernel_plan import module_plans
from codegen.triton import render_kernel
from codegen.triton_dedupe import code_key
from ir_text import Loc
from tirc.cli import main

FILE = "test_kernel_comments.py"


def two_lines(x, b):
    y = torch.nn.functional.gelu(x + b)
    return y * torch.sigmoid(y)


def _line(fn, k: int) -> int:
    """The line number of the k-th line of `fn`'s body."""
    return fn.__code__.co_firstlineno + k


@pytest.mark.parametrize(
    ("backend", "marker", "after"), [("cpp", "//", 'extern "C" void k0('), ("triton", "#", "@triton.jit")]
)
def test_the_comment_names_each_source_line_and_its_ops(backend, marker, after):
    inputs = [torch.randn(7, 37), torch.randn(37)]
    program = tirc.compile(two_lines, inputs, backend=backend)
    first, second = _line(two_lines, 1), _line(two_lines, 2)
    comment = [
        f"{marker} k0: %buf0, %buf1, %buf2, %buf3",
        f"{marker}   {FILE}:{first} aten.add.Tensor, aten.gelu.default",
        f"{marker}   {FILE}:{second} aten.sigmoid.default, aten.mul.Tensor",
    ]
    lines = program.code.splitlines()
    start = lines.index(comment[0])
    assert lines[start : start + 3] == comment
    assert lines[start + 3].startswith(after)
    torch.testing.assert_close(program(*inputs), two_lines(*inputs))


def matmul_then_relu(x, w):
    h = x @ w
    return torch.relu(h)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_an_extern_call_in_call_carries_its_source_line(backend):
    inputs = [torch.randn(8, 16), torch.randn(16, 4)]
    code = tirc.compile(matmul_then_relu, inputs, backend=backend).code
    call = code[code.index("def call(") : code.index("def benchmark(")]
    (extern,) = re.findall(r"^.*aten\.mm\.default(?:.*\n)*?.*\)  # (.*)$", call, re.M)
    assert extern == f"{FILE}:{_line(matmul_then_relu, 1)}"


def test_source_lines_group_by_line_in_order_and_cut_long_lists():
    a, b = Loc("model.py", 12), Loc("model.py", 9)
    other = Loc("layers.py", 3)
    sources = [(a, "aten.add.Tensor"), (b, "aten.mul.Tensor"), (None, "aten.neg.default")]
    sources += [(other, "aten.relu.default"), (a, "aten.add.Tensor"), (a, "aten.gelu.default"), (b, None)]
    assert source_lines(sources) == [
        "model.py:9 aten.mul.Tensor",
        "model.py:12 aten.add.Tensor, aten.gelu.default",
        "layers.py:3 aten.relu.default",
        "(no source line) aten.neg.default",
    ]
    many_ops = [(a, f"aten.op{k}.default") for k in range(MAX_OPS + 3)]
    (line,) = source_lines(many_ops)
    assert line.endswith(f"aten.op{MAX_OPS - 1}.default, ... and 3 more")
    many_lines = [(Loc("model.py", k), "aten.add.Tensor") for k in range(60)]
    lines = source_lines(many_lines)
    assert len(lines) == MAX_LINES
    assert lines[-1] == f"... and {60 - MAX_LINES + 1} more source lines"


# ---- kernels with the same code are shared: the comment is not part of the key


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.linear(x) + x)


class TwoBlocks(torch.nn.Module):
    """Two identical blocks, each followed by the same op on a line of its
    own: the kernels share code but not their comments."""

    def __init__(self):
        super().__init__()
        self.a, self.b = Block(), Block()

    def forward(self, x):
        y = self.a(x)
        y = torch.sigmoid(y * 2.0)
        y = self.b(y)
        y = torch.sigmoid(y * 2.0)
        return y


def test_kernels_with_the_same_code_share_it_whatever_their_comments(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    torch.manual_seed(0)
    model, x = TwoBlocks().eval(), torch.randn(8, 16)
    program = tirc.compile(model, [x], backend="triton")
    # One definition, one alias: the same count of distinct codes as before
    # the comments named source lines.
    ((defined, shared, alias),) = re.findall(
        r"^def (k\w+)\(.*^(k\w+) = (k\w+)  # ", program.code, re.M | re.S
    )
    assert alias == defined
    assert len(re.findall(r"^def k\w+\(|^k\w+ = k\w+", program.code, re.M)) == 2
    first, second = (_line(TwoBlocks.forward, k) for k in (2, 4))
    definition = program.code[program.code.index(f"# {defined}: ") : program.code.index(f"def {defined}(")]
    assert f"#   {FILE}:{first} aten.mul.Tensor, aten.sigmoid.default" in definition
    aliased = program.code[program.code.index(f"# {shared}: ") : program.code.index(f"{shared} = {alias}")]
    assert f"#   {FILE}:{second} aten.mul.Tensor, aten.sigmoid.default" in aliased
    with torch.no_grad():
        torch.testing.assert_close(program(x), model(x))


def test_the_code_key_leaves_the_comment_out():
    program = tirc.compile(two_lines, [torch.randn(7, 37), torch.randn(37)], backend="triton")
    ((_, plan),) = module_plans(program.compiled.module)
    moved = replace(
        plan, sources=tuple((Loc("elsewhere.py", 99), "aten.other.default") for _ in plan.sources)
    )
    assert render_kernel(plan) != render_kernel(moved), "the comments differ"
    assert code_key(plan, render_kernel(plan)) == code_key(moved, render_kernel(moved))
    assert "elsewhere.py" not in code_key(moved, render_kernel(moved))


# ---- hostile names: inert text in the comment

# A newline (ends a comment: the rest would be code), three double quotes
# (end CPP_SOURCE's raw string), `*/`, a raw ESC, a non-ASCII letter; the
# op name ends in a backslash, which would splice the next line (the C++
# function's first line) into the comment.
HOSTILE_FILE = 'evil\\n\\"\\"\\"); import os #*/\x1b\u00e9.py'
HOSTILE_OP = "aten.add.Tensor\\\\"
DUMP = f"""tirc 0.1 stage=lower source="evil.py"
options {{backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}}
input %a : f32[4, 4] {{device = "cpu", seed = 0, strides = [4, 1]}}
input %b : f32[4, 4] {{device = "cpu", seed = 1, strides = [4, 1]}}

%buf0 = extern aten.mm.default(%a, %b) : f32[4, 4] strides [4, 1] loc("{HOSTILE_FILE}":3)
%buf1 = loop.pointwise [i0 < 4, i1 < 4] {{origin = "{HOSTILE_OP}"}} : f32[4, 4] strides [4, 1] {{
  %0 = load %buf0[4*i0 + i1] : f32
  %1 = load %a[4*i0 + i1] : f32
  %2 = add(%0, %1) : f32
  store %2
}} loc("{HOSTILE_FILE}":4)
return (%buf1)
"""
SAFE_FILE = "evil????); import os #*/??.py"


@pytest.mark.parametrize(("backend", "marker"), [("cpp", "//"), ("triton", "#")])
def test_hostile_file_and_op_names_stay_inside_the_comment(backend, marker, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "evil.tir").write_text(DUMP)
    status = main(["compile", "evil.tir", "--backend", backend, "--dump-dir", "out", "--check"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert err.splitlines()[-1].startswith("ok: outputs match")  # the kernel built and ran
    code = (tmp_path / "out" / "output_code.py").read_text()
    compile(code, "output_code.py", "exec")
    assert f"{marker}   {SAFE_FILE}:4 aten.add.Tensor?\n" in code
    assert f")  # {SAFE_FILE}:3\n" in code
    assert code.isascii()  # the ESC and the letter are `?` too


def test_comment_text_is_printable_ascii_without_backslashes_or_double_quotes():
    assert comment_text('a\nb"""c\\\x1b\u2028d*/e') == "a?b???c???d*/e"
    assert comment_text("model.py") == "model.py"
