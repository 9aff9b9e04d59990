"""Capture corner cases: one tensor passed twice, tensors created inside the
program, programs fake tensors cannot trace, contradictory API arguments."""

from __future__ import annotations

import sys

import pytest
import torch

import tirc


def test_same_tensor_passed_twice_traces_two_inputs():
    x = torch.randn(3, 4)
    compiled = tirc.compile(lambda a, b: a * b + a, [x, x])
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(compiled(a, b), a * b + a)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_program_creating_tensors_compiles(backend):
    def fn(x):
        return x + torch.ones(3, 4) * 2 - torch.full((4,), 0.5)

    compiled = tirc.compile(fn, [torch.randn(3, 4)], backend=backend)
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), fn(x))


def _no_real_trace(monkeypatch):
    """Make a trace on real tensors fail: it starts by copying the inputs."""

    def refuse(x):
        raise AssertionError("traced on real tensors")

    monkeypatch.setattr(sys.modules["lowering.capture"], "copy_with_layout", refuse)


def test_plain_program_traces_without_running(monkeypatch):
    """Fake tensors trace it: the caller's values are never read."""
    _no_real_trace(monkeypatch)
    fn = lambda x, w: torch.softmax(x * w, dim=-1)  # noqa: E731
    compiled = tirc.compile(fn, [torch.randn(37, 129), torch.randn(129)])
    x, w = torch.randn(37, 129), torch.randn(129)
    torch.testing.assert_close(compiled(x, w), fn(x, w))


def positive_or_not(x):
    return x * 2 if x.sum() > 0 else x - 1


def scaled_by_max(x):
    return x / x.abs().max().item()


@pytest.mark.parametrize("fn", [positive_or_not, scaled_by_max])
def test_program_reading_values_is_refused(fn):
    """A branch on a value or `.item()`: fake tensors cannot trace it, and the
    real trace that follows refuses it, at the user's line."""
    x = torch.randn(37, 129)
    before = x.clone()
    with pytest.raises(tirc.TircError, match="the program reads a tensor's value") as info:
        tirc.compile(fn, [x])
    assert info.value.line == fn.__code__.co_firstlineno + 1
    torch.testing.assert_close(x, before)


_STATE = torch.zeros(5)


def updates_a_closure_tensor(x):
    _STATE.add_(x)
    return x * 2


def or_assigns(a, b):
    a |= b
    return a + 1


def transposes_in_place(x):
    return x.t_() * 2


class UpdatesAnAttribute(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.total = torch.zeros(5)  # a plain attribute, not a registered buffer

    def forward(self, x):
        self.total.add_(x)
        return x * 2


@pytest.mark.parametrize(
    "program, inputs, message",
    [
        (
            updates_a_closure_tensor,
            lambda: [torch.randn(5)],
            "updates in place a tensor that is not one of its inputs",
        ),
        (
            UpdatesAnAttribute(),
            lambda: [torch.randn(5)],
            "updates in place a tensor that is not one of its inputs",
        ),
        (
            or_assigns,
            lambda: [torch.ones(5, dtype=torch.long)] * 2,
            r"augmented assignment on a tensor \(__ior__\)",
        ),
        (
            transposes_in_place,
            lambda: [torch.randn(3, 4)],
            "changes the shape or strides of an input in place",
        ),
    ],
)
def test_updates_tirc_cannot_follow_get_a_message_that_says_what_to_write(program, inputs, message):
    # PyTorch's own messages here were an internal assert, a custom-operator
    # complaint, and "mutates a tensor that is not an input" about an input.
    with pytest.raises(tirc.TircError, match=message) as info:
        tirc.compile(program, inputs())
    assert "\n" not in str(info.value)


def test_program_holding_a_real_tensor_in_a_closure(monkeypatch):
    """Fake tensors trace it too; the closure's tensor becomes a constant."""
    _no_real_trace(monkeypatch)
    w = torch.randn(129)

    def fn(x):
        return torch.tanh(x) * w

    compiled = tirc.compile(fn, [torch.randn(37, 129)])
    x = torch.randn(37, 129)
    torch.testing.assert_close(compiled(x), fn(x))


def test_contradictory_backend_is_an_error():
    with pytest.raises(tirc.TircError, match="contradicts"):
        tirc.compile(torch.relu, [torch.randn(3)], backend="cpp", options={"backend": "triton"})


def test_dump_after_without_dump_dir_is_an_error():
    with pytest.raises(tirc.TircError, match="dump_dir"):
        tirc.compile(torch.relu, [torch.randn(3)], dump_after="all")
