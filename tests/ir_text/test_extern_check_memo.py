"""The verifier's extern-call check (ir_text/graph_check.py) remembers what
ATen answered for a call's layouts and literals: verifying the same calls
again (every stage after lowering does) runs no fake tensor, and a remembered
answer still checks each module's own declared types and still reports a
call ATen refuses, at the call's line, every time."""

from __future__ import annotations

import pytest

from ir_text import TircError, parse, verify
from ir_text import graph_check

HEADER = (
    'tirc 0.1 stage=lower source="memo.py"\n'
    'options {backend = "cpp", device = "cpu"}\n'
    'input %a : f32[3, 4] {device = "cpu", seed = 0, strides = [4, 1]}\n'
    'input %b : f32[{k}, 5] {device = "cpu", seed = 1, strides = [5, 1]}\n'
)


def module_text(k=4, result="f32[3, 5] strides [5, 1]"):
    return (
        HEADER.replace("{k}", str(k)) + f"%buf0 = extern aten.mm.default(%a, %b) : {result}\nreturn (%buf0)\n"
    )


@pytest.fixture
def counted_calls(monkeypatch):
    """Counts the fake-tensor calls; the remembered answers start empty."""
    monkeypatch.setattr(graph_check, "_OUTCOMES", graph_check._Outcomes())
    calls = []
    real = graph_check.Shapes.call

    def call(self, overload, args, kwargs):
        calls.append(str(overload))
        return real(self, overload, args, kwargs)

    monkeypatch.setattr(graph_check.Shapes, "call", call)
    return calls


def test_a_verified_call_is_not_run_again(counted_calls):
    verify(parse(module_text(), "a.tir"))
    verify(parse(module_text(), "b.tir"))
    assert counted_calls == ["aten.mm.default"]


def test_a_remembered_answer_still_checks_the_declared_type(counted_calls):
    verify(parse(module_text(), "a.tir"))
    with pytest.raises(TircError, match=r"gives f32\[3, 5\], but the type says f32\[3, 6\]"):
        verify(parse(module_text(result="f32[3, 6] strides [6, 1]"), "b.tir"))
    assert counted_calls == ["aten.mm.default"]


def test_a_refused_call_is_reported_each_time_at_its_line(counted_calls):
    for name in ("a.tir", "b.tir"):
        with pytest.raises(TircError) as err:
            verify(parse(module_text(k=7), name))
        assert err.value.line == 5 and "aten.mm.default: " in str(err.value)
        assert "must have same reduction dim" in str(err.value)
    assert counted_calls == ["aten.mm.default"]


def test_other_layouts_are_asked_again(counted_calls):
    verify(parse(module_text(), "a.tir"))
    transposed = module_text().replace(
        '%b : f32[4, 5] {device = "cpu", seed = 1, strides = [5, 1]}',
        '%b : f32[4, 5] {device = "cpu", seed = 1, strides = [1, 4]}',
    )
    verify(parse(transposed, "b.tir"))
    assert counted_calls == ["aten.mm.default"] * 2
