"""Programs that update their inputs, through each way into capture, checked
against eager PyTorch: the caller's tensors updated as eager updates them,
updates that convert or broadcast, reads after an update, updates refused,
and `tirc compile --check` comparing updated inputs and buffers."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import tirc


def bump(x):
    x.add_(1)
    return x * 2


def inplace_on_intermediate(x):
    y = x * 2
    y.relu_()
    return y + 1


def assert_all_close(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


# -- tirc.compile --------------------------------------------------------------------


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


def test_torch_compile_input_update(dynamo):
    compiled = torch.compile(bump, backend="tirc")
    x = torch.randn(8)
    eager_x = x.clone()
    assert_all_close(compiled(x), bump(eager_x))
    torch.testing.assert_close(x, eager_x)


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
