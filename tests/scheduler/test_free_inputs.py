"""The free_inputs option: a program that owns its inputs (a training graph,
called in AOTAutograd's boxed convention) frees each after its last use,
empties the list it was given, never writes over an input's storage, and
still matches eager. A hand-edited free of an input is checked."""

from __future__ import annotations

import pytest
import torch

import tirc
from ir_text import TircError, parse, print_ir
from scheduler import check_memplan, peak_memory


def program(x, w, b):
    """x is read by the first kernel only; w and b to the end."""
    h = torch.relu(x @ w)
    return torch.sigmoid(h * b + 1).sum(0) * b


def _inputs():
    torch.manual_seed(0)
    return [torch.randn(37, 129), torch.randn(129, 5), torch.randn(5)]


def _compiled(**options):
    return tirc.compile(program, _inputs(), options=options)


def test_inputs_are_freed_after_their_last_use_and_the_list_emptied():
    owned = _compiled(free_inputs=True)
    module = owned.compiled.module
    frees = [line.operands[0].hint for line in module.wrapper if line.op == "free"]
    assert {"x", "w"} <= set(frees), frees
    # x dies after the matmul, long before the end
    where = [k for k, line in enumerate(module.wrapper) if line.op == "free" and line.operands[0].hint == "x"]
    assert where[0] < len(module.wrapper) - 2
    assert "free_inputs = true" in print_ir(module)
    assert "args.clear()" in owned.code
    given = _inputs()
    arguments = list(given)
    out = owned.call_boxed(arguments)
    assert arguments == [], "the program empties the list it is given"
    torch.testing.assert_close(out, program(*given))


def test_without_the_option_no_input_is_freed():
    module = _compiled().compiled.module
    inputs = {id(i.value) for i in module.inputs}
    assert not [line for line in module.wrapper if line.op == "free" and id(line.operands[0]) in inputs]
    assert "args.clear()" not in _compiled().code


def test_an_owned_input_counts_toward_the_peak_until_freed():
    owned = _compiled(free_inputs=True).compiled.module
    kept = _compiled().compiled.module
    x_bytes = 37 * 129 * 4
    assert peak_memory(owned) >= x_bytes
    assert peak_memory(owned) <= peak_memory(kept) + x_bytes + 129 * 5 * 4 + 5 * 4


def _with_line(text: str, after: str, line: str) -> str:
    assert after in text
    return text.replace(after, f"{after}\n  {line}", 1)


def test_a_hand_written_free_of_an_input_needs_the_option():
    text = print_ir(_compiled().compiled.module)
    first_launch = next(line for line in text.splitlines() if line.strip().startswith(("launch", "extern")))
    edited = _with_line(text, first_launch, "free %x")
    with pytest.raises(TircError, match=r"\[free-input\] %x is an input"):
        check_memplan(parse(edited, "edited.tir"))


def test_an_updated_input_is_never_freed():
    def update(x, y):
        x.add_(y)
        return (y * 2,)

    compiled = tirc.compile(update, [torch.randn(7), torch.randn(7)], options={"free_inputs": True})
    module = compiled.compiled.module
    updated = {id(target) for target, _ in module.updates}
    assert not [line for line in module.wrapper if line.op == "free" and id(line.operands[0]) in updated]
    text = print_ir(module)
    last = [line for line in text.splitlines() if line.strip().startswith(("launch", "extern"))][-1]
    with pytest.raises(TircError, match=r"\[free-input\] %x is updated"):
        check_memplan(parse(_with_line(text, last, "free %x"), "edited.tir"))
    x, y = torch.randn(7), torch.randn(7)
    expected = x + y
    compiled(x, y)
    torch.testing.assert_close(x, expected)
