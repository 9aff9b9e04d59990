"""Dumps under torch.compile: `options={"dump_dir": ..., "dump_after": ...}`
or TIRC_DUMP_DIR / TIRC_DUMP_AFTER give each graph Dynamo hands over its
own directory, named by its compile id (tirc/graph_dumps.py); a training
graph's forward and backward are kept apart; a crash names its reproducer."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

from ir_text import parse, print_ir
from tirc.dynamo import tirc_backend

STAGE_FILES = ["01-capture.tir", "02-lower.tir", "03-schedule.tir", "04-fusion.tir", "05-memplan.tir"]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class WithBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(37, 29)
        self.b = nn.Linear(29, 5)

    def forward(self, x):
        y = torch.relu(self.a(x))
        torch._dynamo.graph_break()
        return torch.tanh(self.b(y))


def _files(directory):
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


def test_options_give_each_graph_of_a_break_its_directory(tmp_path):
    model = WithBreak().eval()
    x = torch.randn(7, 37)
    compiled = torch.compile(model, backend=tirc_backend, options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    graphs = sorted(p.name for p in tmp_path.iterdir())
    assert graphs == ["graph0", "graph1"]
    for name in graphs:
        files = _files(tmp_path / name)
        assert files == sorted(STAGE_FILES + ["manifest.json", "output_code.py"]), files
        for stage in STAGE_FILES:  # each dump is canonical text that parses
            text = (tmp_path / name / stage).read_text()
            assert print_ir(parse(text, stage)) == text
    # The first graph holds the first Linear (37 -> 29), the second the other.
    assert "f32[7, 29]" in (tmp_path / "graph0" / "05-memplan.tir").read_text()
    assert "f32[7, 5]" in (tmp_path / "graph1" / "05-memplan.tir").read_text()
    # Ops point at this file's lines, and inputs keep Dynamo's names.
    first = (tmp_path / "graph0" / "04-fusion.tir").read_text()
    line = WithBreak.forward.__code__.co_firstlineno + 1  # y = torch.relu(self.a(x))
    assert f'loc("test_dynamo_dumps.py":{line})' in first, first
    assert "input %l_x_ : f32[7, 37]" in first, first


def test_environment_dumps_a_training_graph_forward_and_backward_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("TIRC_DUMP_AFTER", "fusion,memplan")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(37, 64), nn.GELU(), nn.Linear(64, 3))
    reference = [p.detach().clone().requires_grad_() for p in model.parameters()]
    x = torch.randn(9, 37)
    compiled = torch.compile(model, backend=tirc_backend)
    compiled(x).sum().backward()
    eager = torch.func.functional_call(
        model, dict(zip([n for n, _ in model.named_parameters()], reference)), (x,)
    )
    eager.sum().backward()
    for p, r in zip(model.parameters(), reference):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph0"]
    files = _files(tmp_path / "graph0")
    for kind in ("forward", "backward"):
        for name in ("04-fusion.tir", "05-memplan.tir", "manifest.json", "output_code.py"):
            assert f"{kind}/{name}" in files, files
        assert f"{kind}/01-capture.tir" not in files  # only the stages asked for
    manifest = json.loads((tmp_path / "graph0" / "manifest.json").read_text())
    assert manifest["training"]["graphs"] == ["forward", "backward"]
    assert manifest["training"]["saved"], manifest


def test_a_graph_compiled_per_size_puts_each_compile_apart(tmp_path):
    def program(x):
        return torch.softmax(x * 2, dim=-1)

    compiled = torch.compile(program, backend=tirc_backend, options={"dump_dir": str(tmp_path)})
    for rows in (5, 6, 8):  # the second size makes Dynamo mark the graph dynamic
        x = torch.randn(rows, 37)
        torch.testing.assert_close(compiled(x), program(x))
    dynamic = [p for p in tmp_path.iterdir() if (p / "shape0").is_dir()]
    assert len(dynamic) == 1, _files(tmp_path)
    assert sorted(p.name for p in dynamic[0].iterdir()) == ["shape0", "shape1"]
    assert "f32[8, 37]" in (dynamic[0] / "shape1" / "01-capture.tir").read_text()


def test_a_crash_names_the_reproducer_it_wrote(tmp_path):
    options = {"dump_dir": str(tmp_path), "inject_fault": "fusion:crash"}
    compiled = torch.compile(lambda x: torch.relu(x) + 1, backend=tirc_backend, options=options)
    with pytest.raises(Exception) as info:
        compiled(torch.randn(37))
    reproducer = tmp_path / "graph0" / "repro-fusion.tir"
    assert reproducer.is_file()
    message = str(info.value)
    assert f"tirc replay {reproducer}" in message and "injected crash in pass fusion" in message, message


@pytest.mark.parametrize(
    "options, message",
    [
        ({"dump_after": "fusion"}, "dump_after and report need a dump_dir"),
        ({"dump_dir": "d", "dump_after": "fusoin"}, "fusoin"),
        ({"dump_dir": "d", "report": "maybe"}, "expected true or false"),
        ({"dump_dirr": "d"}, "dump_dirr"),
    ],
)
def test_bad_dump_options_are_one_clear_error(tmp_path, monkeypatch, options, message):
    monkeypatch.chdir(tmp_path)
    compiled = torch.compile(lambda x: x * 3, backend=tirc_backend, options=options)
    with pytest.raises(Exception, match=message):
        compiled(torch.randn(5))
    assert not (tmp_path / "d").exists()


def test_report_true_writes_each_graphs_report_with_this_file(tmp_path):
    """report=True writes report.html in every graph's directory, inference
    and training alike, embedding the user's file the ops point at."""
    model = WithBreak()
    compiled = torch.compile(model, backend=tirc_backend, options={"dump_dir": str(tmp_path), "report": True})
    compiled(torch.randn(7, 37)).sum().backward()
    with torch.no_grad():
        compiled(torch.randn(7, 37))
    reports = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("report.html"))
    assert reports == [
        "graph0.1/report.html",
        "graph0/report.html",
        "graph1.1/report.html",
        "graph1/report.html",
    ]
    training = tmp_path / "graph0"
    assert (training / "forward").is_dir() and (training / "backward").is_dir()
    marker = "y = torch.relu(self.a(x))"
    for report in reports:
        page = (tmp_path / report).read_text()
        assert marker.replace(">", "\\u003e") in page or marker in page, report
