"""Every way into capture, each checked against eager PyTorch on fresh random
inputs: `tirc.compile` on modules and functions, `torch.compile(backend="tirc")`
(graph breaks, fake and dynamic inputs) and `.pt2` files from torch.export.
Programs that update their inputs are tested in test_capture_paths_mutations.py."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import tirc
import tirc.api
from tirc.dynamo import tirc_backend
from tirc.sources import load_exported


class ConvBlock(torch.nn.Module):
    """Parameters (linear), buffers (batch norm running stats) and two outputs."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(12, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = self.bn(self.lin(x))
        return F.relu(y), y.sum(-1)


class Counter(torch.nn.Module):
    """Updates a buffer and a user input (mutations through torch.export)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(6))

    def forward(self, x, y):
        self.count.add_(1)
        y.mul_(2)
        return torch.sigmoid(x) + self.count, y - x


def gated(x, w, b):
    h = x * w + b
    return torch.tanh(h), h.amax(-1)


class Gated(torch.nn.Module):
    def forward(self, x, w, b):
        return gated(x, w, b)


def assert_all_close(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.fixture
def tirc_compiles(monkeypatch):
    """The programs tirc compiled (`tirc.compile`'s, and a training graph's)."""
    calls = []
    real = tirc.api.compile_program

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(tirc.api, "compile_program", counting)
    return calls


# -- tirc.compile --------------------------------------------------------------------


def test_module_with_parameters_and_buffers():
    torch.manual_seed(0)
    model = ConvBlock().eval()
    compiled = tirc.compile(model, [torch.randn(5, 12)])
    x = torch.randn(5, 12)
    assert_all_close(compiled(x), model(x))


def test_function_with_several_inputs_and_outputs():
    torch.manual_seed(0)
    compiled = tirc.compile(gated, [torch.randn(4, 9), torch.randn(9), torch.randn(4, 1)])
    args = [torch.randn(4, 9), torch.randn(9), torch.randn(4, 1)]
    assert_all_close(compiled(*args), gated(*args))


# -- torch.compile(backend="tirc") ---------------------------------------------------


def test_torch_compile_module(dynamo, tirc_compiles):
    torch.manual_seed(0)
    model = ConvBlock().eval()
    compiled = torch.compile(model, backend="tirc")
    for _ in range(2):
        x = torch.randn(5, 12)
        assert_all_close(compiled(x), model(x))
    assert len(tirc_compiles) == 1


def test_torch_compile_function(dynamo):
    compiled = torch.compile(gated, backend="tirc")
    args = [torch.randn(4, 9), torch.randn(9), torch.randn(4, 1)]
    assert_all_close(compiled(*args), gated(*args))


@pytest.mark.parametrize("brk", ["print", "graph_break"])
def test_torch_compile_graph_break_makes_two_graphs(dynamo, tirc_compiles, brk, capsys):
    def program(x, y):
        a = torch.sigmoid(x) * y
        if brk == "print":
            print("between the graphs")
        else:
            torch._dynamo.graph_break()
        return a.cos() + x, a

    compiled = torch.compile(program, backend="tirc")
    x, y = torch.randn(6, 7), torch.randn(7)
    assert_all_close(compiled(x, y), program(x, y))
    assert len(tirc_compiles) == 2


def test_torch_compile_new_sizes_compile_again(dynamo, tirc_compiles):
    # The second size makes Dynamo mark the graph dynamic; tirc specialises per size.
    compiled = torch.compile(gated, backend="tirc")
    for n in (4, 6, 9, 6):
        args = [torch.randn(n, 5), torch.randn(5), torch.randn(n, 1)]
        assert_all_close(compiled(*args), gated(*args))
    assert len(tirc_compiles) == 3


def test_backend_given_fake_example_inputs():
    gm = torch.fx.symbolic_trace(gated)
    mode = FakeTensorMode()
    w = torch.randn(9, 3).t()  # a non-contiguous input keeps its strides
    args = [torch.randn(3, 9), w, torch.randn(3, 1)]
    compiled = tirc_backend(gm, [mode.from_tensor(a) for a in args])
    assert_all_close(compiled(*args), gated(*args))


# -- .pt2 files ----------------------------------------------------------------------


@pytest.fixture
def exported(tmp_path):
    """`exported(model, args)`: the path of a .pt2 file saved by torch.export.save."""

    def save(model, args, name="model.pt2"):
        path = tmp_path / name
        torch.export.save(torch.export.export(model, tuple(args)), path)
        return path

    return save


def test_pt2_through_the_cli_as_a_process(exported, tirc_run, tmp_path):
    torch.manual_seed(0)
    path = exported(ConvBlock().eval(), [torch.randn(5, 12)])
    proc = tirc_run(["compile", path.name, "--check"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr  # no warnings from torch.export
    assert re.fullmatch(
        r"tirc: compiled model.pt2 through memplan \(\d+ kernel\(s\)(, \d+ extern call\(s\))?, backend cpp\)",
        lines[0],
    )
    assert lines[1] == "ok: outputs match eager PyTorch"


def test_pt2_dump_names_state_inputs_and_user_lines(exported, cli, tmp_path):
    torch.manual_seed(0)
    path = exported(ConvBlock().eval(), [torch.randn(5, 12)])
    code, err = cli("compile", path, "--check", "--dump-after=capture", "--dump-dir", tmp_path / "d")
    assert code == 0, err
    text = (tmp_path / "d" / "01-capture.tir").read_text()
    assert 'source="model.pt2"' in text
    names = re.findall(r"^input %([\w.]+) :", text, re.M)
    assert names[:6] == [
        "lin.weight",
        "lin.bias",
        "bn.weight",
        "bn.bias",
        "bn.running_mean",
        "bn.running_var",
    ]
    assert names[-1] == "x"
    line = next(k for k, s in enumerate(open(__file__).read().splitlines(), 1) if "self.bn(self.lin(x))" in s)
    assert f'loc("{__file__.rsplit("/", 1)[-1]}":{line})' in text


def test_pt2_updates_of_buffers_and_inputs(exported, cli, tmp_path):
    path = exported(Counter(), [torch.randn(6), torch.randn(6)])
    code, err = cli("compile", path, "--check", "--dump-after=capture", "--dump-dir", tmp_path / "d")
    assert code == 0, err
    text = (tmp_path / "d" / "01-capture.tir").read_text()
    assert re.search(r"^update %count = ", text, re.M) and re.search(r"^update %y = ", text, re.M)


def test_pt2_through_tirc_compile(exported):
    torch.manual_seed(0)
    path = exported(Counter(), [torch.randn(6), torch.randn(6)])
    program = load_exported(str(path))
    ep = torch.export.load(str(path))
    compiled = tirc.compile(program.fn, program.inputs)
    reference = ep.module()
    for _ in range(2):
        x, y = torch.randn(6), torch.randn(6)
        eager_y = y.clone()
        assert_all_close(compiled(x, y), reference(x, eager_y))
        torch.testing.assert_close(y, eager_y)
    # the compiled program updated its own copy of the buffer, as eager did its own
    torch.testing.assert_close(program.fn.state_dict["count"], torch.full((6,), 2.0))


def test_pt2_eager_reference_of_a_loaded_program(exported):
    torch.manual_seed(0)
    model = ConvBlock().eval()
    x = torch.randn(5, 12)
    program = load_exported(str(exported(model, [x])))
    assert program.name == "model.pt2"
    torch.testing.assert_close(program.inputs, [x])
    assert_all_close(list(program.eager(program.inputs)), list(model(x)))


class KeywordInputs(torch.nn.Module):
    def forward(self, x, *, scale, bias):
        return x * scale + bias


def test_pt2_keyword_inputs_in_the_programs_order(tmp_path, cli, recwarn):
    x, scale, bias = torch.randn(5), torch.randn(5), torch.randn(5)
    ep = torch.export.export(KeywordInputs(), (x,), {"bias": bias, "scale": scale})
    torch.export.save(ep, tmp_path / "kw.pt2")
    program = load_exported(str(tmp_path / "kw.pt2"))
    assert torch.equal(torch.stack(program.inputs), torch.stack([x, bias, scale]))
    code, err = cli("compile", tmp_path / "kw.pt2", "--check")
    assert code == 0, err
    ours = [w for w in recwarn if "/tirc/" in w.filename or "/lowering/" in w.filename]
    assert not ours, [str(w.message) for w in ours]


def test_pt2_dynamic_shapes_are_an_error(tmp_path, cli):
    ep = torch.export.export(
        Gated(),
        (torch.randn(4, 9), torch.randn(9), torch.randn(4, 1)),
        dynamic_shapes=({0: torch.export.Dim("n")}, None, {0: torch.export.Dim("n")}),
    )
    torch.export.save(ep, tmp_path / "dyn.pt2")
    code, err = cli("compile", tmp_path / "dyn.pt2")
    assert code == 2
    assert err.strip().endswith(
        "has a dynamic shape; tirc compiles static shapes (export without dynamic_shapes)"
    )


NONZERO_SOURCE = """import torch


def nonzero_rows(x):
    return torch.nonzero(x > 0) * 2


def get_inputs():
    return [torch.randn(5, 7)]
"""


def test_data_dependent_shape_is_an_error(tmp_path, cli):
    """nonzero's result size depends on the values: one located line, exit 2."""
    (tmp_path / "nz.py").write_text(NONZERO_SOURCE)
    code, err = cli("compile", tmp_path / "nz.py", "--entry", "nonzero_rows")
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert err.rstrip().endswith(
        "nz.py:5: error: aten.nonzero.default gives a result that has a shape that "
        "depends on the data ([u0, 2]); tirc compiles static shapes only"
    ), err


UNTRACEABLE_SOURCE = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            return y
        return y @ torch.ones(3, 3)


def get_inputs():
    return [torch.randn(5, 7)]
"""


def test_untraceable_programs_are_one_located_line(tmp_path, cli, tirc_run):
    """A branch on a value, and an op that refuses its shapes: one line at the
    user's line (in a real process: no log of the failed fake trace), exit 2."""
    (tmp_path / "branch.py").write_text(UNTRACEABLE_SOURCE)
    (tmp_path / "shapes.py").write_text(
        UNTRACEABLE_SOURCE.replace("if y.sum() > 0:", "if True:").replace("return y\n", "pass\n", 1)
    )
    code, err = cli("compile", tmp_path / "branch.py")
    assert code == 2
    assert err.strip() == (
        "branch.py:7: error: the program reads a tensor's value (`.item()`, a tensor in an `if` "
        "or a Python number made from a tensor); tirc compiles programs whose control flow "
        "does not depend on the data"
    ), err
    proc = tirc_run(["compile", "shapes.py"], tmp_path)
    code, err = proc.returncode, proc.stderr
    assert code == 2
    assert err.strip() == (
        "shapes.py:9: error: tracing failed: RuntimeError: mat1 and mat2 shapes cannot be "
        "multiplied (5x7 and 3x3)"
    ), err


def test_pt2_that_is_not_an_export_is_an_error(tmp_path, cli):
    (tmp_path / "junk.pt2").write_bytes(b"not a zip file")
    code, err = cli("compile", tmp_path / "junk.pt2")
    assert code == 2
    assert err.startswith(f"{tmp_path / 'junk.pt2'}: error: cannot load it with torch.export.load"), err
    assert len(err.strip().splitlines()) == 1
