"""The Python API: `tirc.compile`, `torch.compile(backend="tirc")`, and what
the dump directory holds (manifest, no machine-specific text)."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tirc
from ir_text import parse


class Gate(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features))
        self.register_buffer("shift", torch.randn(features))

    def forward(self, x):
        return F.gelu(x * self.weight + self.shift) * torch.sigmoid(x)


def swish_bias(x, b):
    y = x + b
    return y * torch.sigmoid(y)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_module_parameters_become_inputs(backend, tmp_path):
    torch.manual_seed(0)
    model = Gate(37).eval()
    x = torch.randn(5, 37)
    compiled = tirc.compile(model, [x], backend=backend, dump_after="capture", dump_dir=tmp_path)
    torch.testing.assert_close(compiled(x), model(x))
    capture = (tmp_path / "01-capture.tir").read_text()
    inputs = re.findall(r"^input %(\w+) :", capture, re.M)
    assert inputs == ["weight", "shift", "x"], inputs
    # the parameters are read when called, not baked in
    fresh = torch.randn(5, 37)
    with torch.no_grad():
        model.weight.mul_(-2.0)
        model.shift.add_(1.0)
    torch.testing.assert_close(compiled(fresh), model(fresh))


def test_plain_function():
    torch.manual_seed(0)
    x, b = torch.randn(7, 37), torch.randn(37)
    compiled = tirc.compile(swish_bias, [x, b])
    x, b = torch.randn(7, 37), torch.randn(37)
    torch.testing.assert_close(compiled(x, b), swish_bias(x, b))


def test_dump_after_fusion_only(tmp_path):
    x, b = torch.randn(7, 37), torch.randn(37)
    tirc.compile(swish_bias, [x, b], dump_after=("fusion",), dump_dir=tmp_path / "d")
    names = sorted(p.name for p in (tmp_path / "d").iterdir())
    assert [n for n in names if n.endswith(".tir")] == ["04-fusion.tir"], names
    assert "manifest.json" in names
    module = parse((tmp_path / "d" / "04-fusion.tir").read_text(), "04-fusion.tir")
    assert module.stage == "fusion"
    # The header names the file that defines the function, and ops point into it.
    assert module.source == "test_api.py"
    assert all(node.loc is not None and node.loc.file == "test_api.py" for node in module.nodes)


@pytest.mark.parametrize(
    "options, says",
    [
        ({"fusion_bisect_limit": "x"}, "option 'fusion_bisect_limit' takes an integer, got 'x'"),
        ({"fusion": 1}, "option 'fusion' takes true or false, got 1"),
        ({"inject_fault": "capture:crash"}, "inject_fault takes PASS:crash"),
        ({"backend": "triton"}, "contradicts backend='cpp'"),
    ],
)
def test_a_bad_argument_names_tirc_compile(options, says):
    with pytest.raises(tirc.TircError) as info:
        tirc.compile(lambda x: x + 1, [torch.randn(5)], options=options)
    assert str(info.value).startswith("tirc.compile: error: ") and says in str(info.value), str(info.value)


def test_dump_after_without_dump_dir_is_refused():
    with pytest.raises((ValueError, tirc.TircError)):
        tirc.compile(swish_bias, [torch.randn(3), torch.randn(3)], dump_after=("fusion",))


def _structured(x, y):
    return {
        "sum": x + y,
        "pair": (x * y, torch.relu(x)),
        "list": [y - 1, torch.sigmoid(x), x],
    }


_Pair = collections.namedtuple("_Pair", "first second")


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, y: (x + y, x * y),
        lambda x, y: [x - y, torch.tanh(x), y * 3],
        lambda x, y: {"a": x * 2, "b": (y + 1, x - y)},
        _structured,
        lambda x, y: (x * 2, x * 2),
        lambda x, y: (x, x * y),  # an input returned as is
        lambda x, y: x * y,
        lambda x, y: (x * y,),
        lambda x, y: _Pair(x + 1, y * 2),
        lambda x, y: (x + y, None),
        lambda x, y: {"a": None, "b": [x * y, None]},
    ],
    ids=[
        "tuple",
        "list",
        "dict",
        "nested",
        "same_twice",
        "input_returned",
        "leaf",
        "one_tuple",
        "namedtuple",
        "none_in_tuple",
        "nones_nested",
    ],
)
def test_output_structure_is_kept(fn):
    torch.manual_seed(0)
    x, y = torch.randn(5, 37), torch.randn(37)
    compiled = tirc.compile(fn, [x, y])
    x, y = torch.randn(5, 37), torch.randn(37)
    actual, expected = compiled(x, y), fn(x, y)
    assert type(actual) is type(expected)
    if isinstance(expected, dict):
        assert list(actual) == list(expected)
    torch.testing.assert_close(actual, expected)


def _update_only(x, y):
    x.add_(y)
    y.mul_(torch.sigmoid(x))


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_program_that_only_updates_its_inputs_returns_none(backend):
    """No outputs, only updates (as an optimizer step): the call returns None,
    as the function does, and updates the caller's tensors as eager does."""
    torch.manual_seed(4)
    x, y = torch.randn(5, 37), torch.randn(5, 37)
    compiled = tirc.compile(_update_only, [x.clone(), y.clone()], backend=backend)
    ours = [x.clone(), y.clone()]
    assert compiled(*ours) is None
    _update_only(x, y)
    torch.testing.assert_close(ours, [x, y])
    assert tirc.compile(lambda x: None, [x], backend=backend)(x) is None


def test_calls_run_without_autograd_and_restore_it():
    w = torch.randn(37, requires_grad=True)
    compiled = tirc.compile(lambda x, w: torch.tanh(x) * w, [torch.randn(5, 37), w])
    out = compiled(torch.randn(5, 37), w)
    assert not out.requires_grad and torch.is_grad_enabled()
    with pytest.raises(ValueError):
        compiled(torch.randn(4, 37), w)  # a wrong shape: the mode is restored all the same
    assert torch.is_grad_enabled()
    with torch.no_grad():
        compiled(torch.randn(5, 37), w)
        assert not torch.is_grad_enabled()
    # An extern (ATen) call would record a graph: it runs with autograd off.
    m = torch.randn(37, 3, requires_grad=True)
    compiled = tirc.compile(lambda x, m: torch.relu(x @ m), [torch.randn(5, 37), m])
    out = compiled(torch.randn(5, 37), m)
    assert "runtime.extern_call(" in compiled.code
    assert not out.requires_grad and out.grad_fn is None and torch.is_grad_enabled()


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_torch_compile_backend(backend, monkeypatch):
    import tirc.api

    calls = []
    real = tirc.api.compile_program

    def counting(fn, inputs, opts, *args, **kwargs):
        calls.append(opts.backend)
        return real(fn, inputs, opts, *args, **kwargs)

    monkeypatch.setattr(tirc.api, "compile_program", counting)
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Gate(37).eval()
    compiled = torch.compile(model, backend="tirc", options={"backend": backend})
    x = torch.randn(5, 37)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        x = torch.randn(5, 37)
        torch.testing.assert_close(compiled(x), model(x))
    assert calls == [backend], calls
    torch._dynamo.reset()


def test_torch_compile_function():
    torch._dynamo.reset()
    compiled = torch.compile(swish_bias, backend="tirc")
    x, b = torch.randn(7, 37), torch.randn(37)
    torch.testing.assert_close(compiled(x, b), swish_bias(x, b))
    torch._dynamo.reset()


def test_torch_compile_with_a_changing_float_and_an_update_of_a_view():
    """A Python float that changes between calls reaches the graph as a 0-d
    tensor read by `.item()` (compiled once per value); an in-place op on a
    view of an input traces without Dynamo's symbolic shapes."""

    def scaled(x, a):
        return x * a + a

    def update_column(x):
        x[:, 0].mul_(2)
        return x.sum(1)

    torch._dynamo.reset()
    scaled_c, update_c = torch.compile(scaled, backend="tirc"), torch.compile(update_column, backend="tirc")
    x = torch.randn(5, 37)
    for a in (2.0, 3.0, 2.0, -0.5):
        torch.testing.assert_close(scaled_c(x, a), scaled(x, a))
    for shape in ((3, 37), (5, 37)):
        x = torch.randn(shape)
        mine, theirs = x.clone(), x.clone()
        torch.testing.assert_close(update_c(mine), update_column(theirs))
        torch.testing.assert_close(mine, theirs)
    torch._dynamo.reset()


def test_per_value_compiles_are_bounded(monkeypatch):
    """A graph that reads an input's value compiles once per value, up to
    SPECIALIZATION_LIMIT values; later values run eagerly, with one warning."""
    from tirc import dynamo

    class Scaled(torch.nn.Module):
        def forward(self, x, a):
            return (x * a.item() + 1,)

    monkeypatch.setattr(dynamo, "SPECIALIZATION_LIMIT", 2)
    gm = torch.fx.symbolic_trace(Scaled())
    x = torch.randn(3, 37)
    compiled = dynamo.tirc_backend(gm, [x, torch.tensor(2.0)])
    with pytest.warns(UserWarning, match="compiled for 2 different") as caught:
        for a in (2.0, 3.0, 2.0, -0.5, 7.0):
            (got,) = compiled(x, torch.tensor(a))
            torch.testing.assert_close(got, x * a + 1)
    assert len(caught) == 1
    assert len(compiled.compiled) == 2


def test_tirc_is_a_registered_dynamo_backend():
    assert "tirc" in torch._dynamo.list_backends()


# -- the dump directory ------------------------------------------------------------

STAGE_FILES = ["01-capture.tir", "02-lower.tir", "03-schedule.tir", "04-fusion.tir", "05-memplan.tir"]


def _count(text, stage):
    """Ops, buffers and kernels of a dump, counted from its text."""
    lines = text.splitlines()
    if stage == "capture":
        ops = sum(1 for line in lines if re.match(r"%\w+ = aten\.", line))
    else:
        ops = sum(1 for line in lines if re.match(r"  (%\w+ = \w+|store )", line))
    return {
        "ops": ops,
        "buffers": sum(1 for line in lines if re.match(r"%buf\d+ = loop\.", line)),
        "kernels": sum(1 for line in lines if re.match(r"\s*kernel @", line)),
    }


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("api_dumps") / "dumps"
    torch.manual_seed(0)
    model = Gate(37).eval()
    tirc.compile(model, [torch.randn(5, 37)], backend="triton", dump_after="all", dump_dir=directory)
    return directory


def test_manifest_lists_every_file_with_its_sha256_and_counts(dump_dir):
    manifest = json.loads((dump_dir / "manifest.json").read_text())
    files = manifest["files"]
    assert [e["file"] for e in files] == [*STAGE_FILES, "output_code.py"]
    assert [e["stage"] for e in files] == ["capture", "lower", "schedule", "fusion", "memplan", "codegen"]
    assert sorted(p.name for p in dump_dir.iterdir()) == sorted(
        [*STAGE_FILES, "output_code.py", "manifest.json"]
    )
    for entry in files:
        data = (dump_dir / entry["file"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), entry["file"]
        if entry["stage"] == "codegen":
            continue
        counted = _count(data.decode(), entry["stage"])
        assert {k: entry[k] for k in ("ops", "buffers", "kernels")} == counted, entry["file"]
    assert manifest["options"]["backend"] == "triton"
    by_stage = {e["stage"]: e for e in files}
    assert by_stage["lower"]["buffers"] > 0 and by_stage["fusion"]["kernels"] > 0


def test_no_machine_specific_text_in_dumps(dump_dir):
    home = str(Path.home())
    needles = {str(dump_dir.parent), str(Path(__file__).parent), os.getcwd()}
    if home not in ("/", ""):
        needles.add(home)
    host = os.uname().nodename
    for path in sorted(dump_dir.iterdir()):
        text = path.read_text()
        for needle in needles:
            assert needle not in text, f"{path.name} contains {needle!r}"
        assert not re.search(
            r"(?<![\w.-])/(tmp|home|root|work|usr|var)/", text
        ), f"{path.name}: absolute path"
        if host:
            assert not re.search(
                rf"(?<![\w.-]){re.escape(host)}(?![\w.-])", text
            ), f"{path.name} names the host"
        assert not re.search(r"0x[0-9a-f]{8,}", text), f"{path.name}: an address"


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda: torch.randn(4, 37), "input x: expected torch.float32 [5, 37], got torch.float32 [4, 37]"),
        (
            lambda: torch.randn(5, 37).double(),
            "input x: expected torch.float32 [5, 37], got torch.float64 [5, 37]",
        ),
        (lambda: [[1.0] * 37] * 5, "input x: expected a tensor, got list"),
        (lambda: torch.empty(5, 37, device="meta"), "input x: expected a tensor on cpu, got one on meta"),
    ],
    ids=["shape", "dtype", "not_a_tensor", "device"],
)
def test_inputs_unlike_the_compiled_ones_are_refused(bad, message):
    compiled = tirc.compile(lambda x: torch.tanh(x) * 2, [torch.randn(5, 37)])
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        compiled(bad())


def test_a_call_with_the_wrong_number_of_inputs_is_refused():
    compiled = tirc.compile(torch.nn.Linear(37, 3), [torch.randn(5, 37)])  # lifted weight and bias
    with pytest.raises(TypeError, match=re.escape("the compiled program takes 1 input tensor(s), got 2")):
        compiled(torch.randn(5, 37), torch.randn(5, 37))
    with pytest.raises(TypeError, match=re.escape("takes 1 input tensor(s), got 0")):
        compiled()


class ScaledInTraining(torch.nn.Module):
    def forward(self, x):
        return x * 2 if self.training else x


@pytest.mark.parametrize("inner", [lambda: torch.nn.BatchNorm1d(5), ScaledInTraining])
def test_switching_train_and_eval_after_compiling_is_refused(inner):
    # A module traces to one program per mode (batch norm's statistics, a
    # user's `if self.training`); only modules whose forward reads the flag
    # are checked at a call.
    model = torch.nn.Sequential(torch.nn.Linear(5, 5), inner()).train()
    compiled = tirc.compile(model, [torch.randn(37, 5)])
    assert [type(m) for m, _ in compiled._modes] == [type(model[1])]
    x = torch.randn(37, 5)
    compiled(x)
    model[1].eval()
    with pytest.raises(RuntimeError, match="traced in training mode and is in eval mode now"):
        compiled(x)
    model.train()
    compiled(x)


def test_replaced_parameters_are_seen_at_the_next_call():
    """In-place updates share storage; a parameter replaced by another tensor
    is read again (a new layout is copied into the compiled one, as any
    input's; a removed one is a clear error)."""
    model = torch.nn.Sequential(torch.nn.Linear(37, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).eval()
    x = torch.randn(4, 37)
    compiled = tirc.compile(model, [x])
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        model[0].weight = torch.nn.Parameter(torch.randn(5, 37))
        torch.testing.assert_close(compiled(x), model(x))
        model[2].bias.add_(1)
        torch.testing.assert_close(compiled(x), model(x))
        model[2].bias.data = torch.randn(3)  # the same parameter, new storage
        torch.testing.assert_close(compiled(x), model(x))
        model[2].weight = torch.nn.Parameter(torch.randn(5, 3).t())  # another layout: copied at each call
        torch.testing.assert_close(compiled(x), model(x))
        model[2].weight = torch.nn.Parameter(torch.randn(3, 5))
        model[2].bias = None
        with pytest.raises(TypeError, match=re.escape("module's 2.bias is no longer a tensor (NoneType)")):
            compiled(x)
