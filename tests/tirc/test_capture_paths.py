"""Every way into capture, each checked against eager PyTorch on fresh random
inputs: `tirc.compile` on modules and functions, `torch.compile(backend="tirc")`
(graph breaks, fake and dynamic inputs), `.pt2` files from torch.export, and
programs that update their inputs."""

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


def bump(x):
    x.add_(1)
    return x * 2


def inplace_on_intermediate(x):
    y = x * 2
    y.relu_()
    return y + 1


def assert_all_close(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.fixture
def dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def tirc_compiles(monkeypatch):
    """The number of programs `tirc.compile` was asked to compile."""
    calls = []
    real = tirc.api.compile

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(tirc.api, "compile", counting)
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


def test_input_update_is_applied_to_the_caller_tensor(tmp_path):
    example = torch.randn(3, 5)
    before = example.clone()
    compiled = tirc.compile(bump, [example], dump_after="capture", dump_dir=tmp_path)
    torch.testing.assert_close(example, before)  # compiling does not run the update
    assert re.search(r"^update %x = %\w+$", (tmp_path / "01-capture.tir").read_text(), re.M)
    x = torch.randn(3, 5)
    eager_x = x.clone()
    assert_all_close(compiled(x), bump(eager_x))
    torch.testing.assert_close(x, eager_x)


def test_inplace_op_on_an_intermediate(tmp_path):
    compiled = tirc.compile(
        inplace_on_intermediate, [torch.randn(4, 6)], dump_after="capture", dump_dir=tmp_path
    )
    assert "update" not in (tmp_path / "01-capture.tir").read_text()
    x = torch.randn(4, 6)
    before = x.clone()
    assert_all_close(compiled(x), inplace_on_intermediate(x))
    torch.testing.assert_close(x, before)


def copy_row_sums_into(x, buf):
    buf.copy_(x.sum(0))  # a float32 [5] value into a float16 [3, 5] buffer
    return x * 2


def copy_first_row_as_double(x, buf):
    buf.copy_(x[:1].double())  # [1, 5] float64 into [3, 5] float32
    return x + 1


def train_batch_norm(x, mean, var):
    return F.batch_norm(x, mean, var, training=True, momentum=0.5)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize(
    "program, buffers",
    [
        (copy_row_sums_into, lambda: [torch.randn(3, 5).half()]),
        (copy_first_row_as_double, lambda: [torch.randn(3, 5)]),
        (train_batch_norm, lambda: [torch.randn(4).half(), torch.rand(4).half() + 0.5]),
    ],
)
def test_an_input_updated_with_another_dtype_or_shape_is_converted(program, buffers, backend):
    # copy_ converts and broadcasts, and so does the compiled program.
    x = torch.randn(3, 4, 5).half() if program is train_batch_norm else torch.randn(3, 5)
    compiled = tirc.compile(program, [x, *buffers()], backend=backend, device="cpu")
    mine = buffers()
    theirs = [b.clone() for b in mine]
    # Half batch norm: eager's CPU kernel is one ulp off in some elements where
    # tirc rounds its float32 result once (both checked against float64).
    tolerance = dict(atol=1e-3, rtol=1e-3) if x.dtype == torch.half else dict(atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(compiled(x, *mine), program(x, *theirs), **tolerance)
    for got, want in zip(mine, theirs):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


def batch_norm_then_statistics(x, mean, var):
    # The update is written below functionalization (batch norm's
    # decomposition), mid-graph: the reads after it must see the new values.
    y = F.batch_norm(x, mean, var, training=True, momentum=0.5)
    return y, mean * 2, var + 0


class TrainThenEval(torch.nn.Module):
    """One batch norm with batch statistics (`steps` times), then with the
    running statistics those calls just updated."""

    def __init__(self, steps):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(5, momentum=0.3)
        self.steps = steps

    def forward(self, x):
        self.bn.train()
        outs = [self.bn(x * (k + 1)) for k in range(self.steps)]
        self.bn.eval()
        return *outs, self.bn(x), self.bn.running_var + 0


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_reads_after_a_decomposition_updates_an_input_see_the_new_value(backend):
    x = torch.randn(37, 5) * 2 + 1
    stats = lambda: [torch.randn(5), torch.rand(5) + 0.5]  # noqa: E731
    compiled = tirc.compile(batch_norm_then_statistics, [x, *stats()], backend=backend, device="cpu")
    mine = stats()
    theirs = [t.clone() for t in mine]
    assert_all_close(compiled(x, *mine), batch_norm_then_statistics(x, *theirs))
    assert_all_close(mine, theirs)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("steps", [1, 2])
def test_a_module_that_updates_its_statistics_then_reads_them(backend, steps):
    model, eager = TrainThenEval(steps), TrainThenEval(steps)
    x = torch.randn(37, 5) * 3 - 1
    compiled = tirc.compile(model, [x], backend=backend, device="cpu")
    assert_all_close(compiled(x), eager(x))
    assert_all_close(list(model.buffers()), list(eager.buffers()))


def add_and_return(x, y):
    y.mul_(2)
    x.add_(y)
    return x, y, x + 1


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_returned_updated_input_is_the_callers_tensor(backend):
    # As in eager: `x.add_(y); return x` returns x itself, not a copy of its new value.
    compiled = tirc.compile(add_and_return, [torch.randn(37), torch.randn(37)], backend=backend, device="cpu")
    x, y = torch.randn(37), torch.randn(37)
    eager_x, eager_y = x.clone(), y.clone()
    got = compiled(x, y)
    assert got[0] is x and got[1] is y
    assert_all_close(got, add_and_return(eager_x, eager_y))
    got[0].mul_(10)
    torch.testing.assert_close(x, eager_x * 10)


def test_a_returned_updated_input_is_the_callers_tensor_through_dynamo(dynamo):
    compiled = torch.compile(add_and_return, backend="tirc")
    x, y = torch.randn(37), torch.randn(37)
    got = compiled(x, y)
    assert got[0] is x and got[1] is y


class CountingModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.tensor(0))

    def forward(self, x):
        self.count = self.count + 1
        return x * self.count


def test_a_forward_that_assigns_a_buffer_is_refused():
    # functional_call puts the buffer back after tracing: the new value would be lost.
    with pytest.raises(tirc.TircError, match=r"forward assigns a new value to 'count'.*in-place"):
        tirc.compile(CountingModule(), [torch.randn(3)])


def test_an_update_that_does_not_broadcast_is_refused():
    def program(x, buf):
        buf.copy_(x.t())
        return x

    with pytest.raises(tirc.TircError, match="must match"):
        tirc.compile(program, [torch.randn(3, 5), torch.randn(3, 5)])


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


def test_torch_compile_input_update(dynamo):
    compiled = torch.compile(bump, backend="tirc")
    x = torch.randn(8)
    eager_x = x.clone()
    assert_all_close(compiled(x), bump(eager_x))
    torch.testing.assert_close(x, eager_x)


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


# -- the command line on programs that update inputs ----------------------------------

BUMP_SOURCE = """import torch


def bump(x, y):
    x.add_(1)
    y = y * 2
    y.relu_()
    return x * y


def get_inputs():
    return [torch.randn(4, 5), torch.randn(4, 5)]
"""


def test_cli_check_of_an_input_update(cli, tmp_path):
    (tmp_path / "bump.py").write_text(BUMP_SOURCE)
    code, err = cli(
        "compile",
        tmp_path / "bump.py",
        "--entry",
        "bump",
        "--check",
        "--dump-after=all",
        "--dump-dir",
        tmp_path / "d",
    )
    assert code == 0, err
    assert "update %x = %buf" in (tmp_path / "d" / "05-memplan.tir").read_text()
    code, err = cli("replay", tmp_path / "d" / "02-lower.tir")
    assert code == 0, err


STATEFUL_UPDATE_SOURCE = """import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x, y):
        self.calls += 1  # traced once: the compiled update adds 1, the eager run 2
        x.add_(float(self.calls))
        return y * 2


def get_inputs():
    return [torch.zeros(3), torch.randn(3)]
"""


STATEFUL_BUFFER_SOURCE = """import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.calls += 1  # traced once: the compiled update adds 1, the eager run 2
        self.total.add_(float(self.calls))
        return x * 2


def get_inputs():
    return [torch.randn(3)]
"""


def test_cli_check_compares_updated_buffers(cli, tmp_path):
    # The outputs match; only the buffer's update differs.
    (tmp_path / "stateful.py").write_text(STATEFUL_BUFFER_SOURCE)
    code, err = cli("compile", tmp_path / "stateful.py", "--check")
    assert code == 1, err
    assert err.splitlines()[-1].startswith("mismatch against eager PyTorch: updated input %total: "), err


def test_cli_check_compares_updated_inputs(cli, tmp_path):
    (tmp_path / "stateful.py").write_text(STATEFUL_UPDATE_SOURCE)
    code, err = cli("compile", tmp_path / "stateful.py", "--check")
    assert code == 1, err
    assert err.splitlines()[-1].startswith("mismatch against eager PyTorch: updated input %x: "), err
