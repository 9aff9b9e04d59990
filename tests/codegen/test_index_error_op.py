"""A kernel that finds a value eager PyTorch raises on (an index out of
range, an integer division by zero) names the op it belongs to, by the site
the kernel records in its error slot, not every op fused into the kernel:
on the C++ backend, on interpreted Triton, and in the reference
interpreter, which replay compares with. Compiled for a GPU, the device
assert's message names the op."""

from __future__ import annotations

import ast
import inspect

import pytest
import torch
import torch.nn.functional as F

import codegen.wrapper
import lowering
import tirc
from ir_text import parse

W = torch.randn(19, 7)
V = torch.randn(13, 7)


def embed_then_sum(w, i):
    emb = F.embedding(i, w)
    y = emb.sum(-1) * 2
    # An integer division in the same kernel: a second checked op (C++).
    return y + (i // 3).float()


def two_gathers(w, v, i, j):
    a = F.embedding(i, w)
    b = v.index_select(0, j.flatten()).view(*j.shape, 7)
    return (a * 2 + b).sum(-1)


def divide_beside_a_gather(w, i, d):
    y = F.embedding(i, w).sum(-1)
    return y * (i // d)


def _line(fn, text: str) -> int:
    """The source line of `fn` that contains `text`."""
    lines, first = inspect.getsourcelines(fn)
    (k,) = [k for k, line in enumerate(lines) if text in line]
    return first + k


def _where(fn, origin: str, text: str) -> str:
    return f"(in {origin} at test_index_error_op.py:{_line(fn, text)})"


def _indices(high: int, shape=(5, 3)) -> torch.Tensor:
    return torch.randint(0, high, shape)


def _compile(fn, inputs, backend: str, tmp_path):
    device = "cpu" if backend == "triton" else None
    return tirc.compile(fn, inputs, backend=backend, device=device, dump_after="all", dump_dir=tmp_path)


def _kernel_count(tmp_path) -> int:
    module = parse((tmp_path / "05-memplan.tir").read_text(), "05-memplan.tir")
    return len(module.kernels)


def _interpreter_error(tmp_path, inputs) -> str:
    module = parse((tmp_path / "02-lower.tir").read_text(), "02-lower.tir")
    with pytest.raises(IndexError) as info:
        lowering.interpret(module, inputs)
    return str(info.value)


BACKENDS = ["cpp", "triton"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the Triton interpreter's masked-off lanes
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fused_embedding_out_of_range_names_the_embedding(backend, tmp_path):
    i = _indices(19)
    compiled = _compile(embed_then_sum, [W, i], backend, tmp_path)
    assert _kernel_count(tmp_path) == 1
    torch.testing.assert_close(compiled(W, i), embed_then_sum(W, i))
    bad = i.clone()
    bad[3, 1] = 19
    with pytest.raises(IndexError) as info:
        compiled(W, bad)
    where = _where(embed_then_sum, "aten.embedding.default", "F.embedding(i, w)")
    assert str(info.value) == f"index 19 is out of bounds for a dimension of size 19 {where}"
    assert str(info.value).endswith(where) and _interpreter_error(tmp_path, [W, bad]).endswith(where)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("second_bad", [True, False])
def test_of_two_fused_gathers_the_one_out_of_range_is_named(backend, second_bad, tmp_path):
    i, j = _indices(19), _indices(13)
    compiled = _compile(two_gathers, [W, V, i, j], backend, tmp_path)
    assert _kernel_count(tmp_path) == 1
    torch.testing.assert_close(compiled(W, V, i, j), two_gathers(W, V, i, j))
    i_bad, j_bad = i.clone(), j.clone()
    if second_bad:
        j_bad[4, 2] = -1  # index_select takes no negative index
        value, size, where = -1, 13, _where(two_gathers, "aten.index_select.default", "v.index_select")
    else:
        i_bad[0, 0] = 25
        value, size, where = 25, 19, _where(two_gathers, "aten.embedding.default", "F.embedding(i, w)")
    with pytest.raises(IndexError) as info:
        compiled(W, V, i_bad, j_bad)
    assert str(info.value) == f"index {value} is out of bounds for a dimension of size {size} {where}"
    assert _interpreter_error(tmp_path, [W, V, i_bad, j_bad]).endswith(where)
    # The slot is fresh on each call: in-range indices run clean after.
    torch.testing.assert_close(compiled(W, V, i, j), two_gathers(W, V, i, j))


def test_a_division_by_zero_beside_a_gather_names_the_division(tmp_path):
    """C++ kernels check integer divisions too, with a site of their own."""
    i, d = _indices(19), torch.randint(1, 5, (5, 3))
    compiled = _compile(divide_beside_a_gather, [W, i, d], "cpp", tmp_path)
    assert _kernel_count(tmp_path) == 1
    torch.testing.assert_close(compiled(W, i, d), divide_beside_a_gather(W, i, d))
    d[2, 2] = 0
    with pytest.raises(ZeroDivisionError) as info:
        compiled(W, i, d)
    where = _where(divide_beside_a_gather, "aten.div.Tensor_mode", "i // d")
    assert str(info.value) == f"integer division by zero {where}"


def _memplan(fn, inputs, tmp_path) -> str:
    tirc.compile(fn, inputs, backend="triton", device="cpu", dump_after="memplan", dump_dir=tmp_path)
    return (tmp_path / "05-memplan.tir").read_text()


def test_gpu_device_asserts_name_their_op(tmp_path):
    """Compiled for a GPU (run by tests/gpu/gpu_indices.py), each gather's
    device assert names its op."""
    text = _memplan(two_gathers, [W, V, _indices(19), _indices(13)], tmp_path)
    code = codegen.wrapper.generate(parse(text, "05-memplan.tir"), "triton", "cuda")
    flat = " ".join(code.split())
    assert 'p_error, 0, "index out of bounds in aten.embedding.default"' in flat
    assert 'p_error, 1, "index out of bounds in aten.index_select.default"' in flat
    assert "tl.device_assert(~bad, message)" in code


@pytest.mark.parametrize("backend, device", [("triton", "cuda"), ("triton", "cpu"), ("cpp", "cpu")])
def test_an_origin_from_a_dump_cannot_break_the_generated_code(backend, device, tmp_path):
    """A dump is untrusted: an origin is rendered as a Python string and, in a
    device assert, reduced to the characters of ATen names."""
    text = _memplan(embed_then_sum, [W, _indices(19)], tmp_path)
    hostile = 'aten.x") ; import os #\\n"'
    text = text.replace('origin = "aten.embedding.default"', f"origin = {_ir_string(hostile)}")
    code = codegen.wrapper.generate(parse(text, "05-memplan.tir"), backend, device)
    tree = ast.parse(code)  # valid Python whatever the origin
    if device == "cuda":
        assert '"index out of bounds in aten.x_____import_os___n_"' in code
        return
    (sites,) = [
        ast.literal_eval(node.args[1])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "runtime.check_values"
    ]
    assert sites[0] == f"{hostile} at test_index_error_op.py:{_line(embed_then_sum, 'F.embedding(i, w)')}"


def _ir_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
