"""Printing loses nothing: `parse(print_ir(m))` is structurally equal to the
module each pass built in memory (DESIGN.md, text format principle 2)."""

from __future__ import annotations

import concurrent.futures

import pytest
import torch

from ir_text import parse, print_ir, structurally_equal
from lowering import capture, lower
from scheduler import fuse, plan_memory, schedule
from tirc.options import Options
from tirc.pipeline import Context

PROGRAMS = {
    "gelu_bias": (
        lambda x, b: torch.nn.functional.gelu(x + b) * 0.5,
        [torch.randn(37, 129), torch.randn(129)],
    ),
    "mixed_dtypes": (
        lambda x, n: (torch.where(x > 0, x, x * 0.1).half(), n // 3, torch.logical_not(x < 1)),
        [torch.randn(5, 7), torch.randint(-9, 9, (5, 7), dtype=torch.int32)],
    ),
    "two_sizes": (lambda x, v: (torch.relu(x) + 1, v.exp()), [torch.randn(4, 5), torch.randn(9)]),
}


def _in_memory_stages(fn, inputs, options):
    """Each pass's own output, not re-parsed."""
    ctx = Context(options)
    captured, _, _ = capture(fn, inputs, "prog.py", None, options.to_pairs())
    lowered = lower(captured, ctx)
    scheduled = schedule(lowered, ctx)
    fused = fuse(scheduled, ctx)
    return {
        "capture": captured,
        "lower": lowered,
        "schedule": scheduled,
        "fusion": fused,
        "memplan": plan_memory(fused, ctx),
    }


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_parse_of_print_equals_the_pass_output(program, fusion):
    fn, inputs = PROGRAMS[program]
    for stage, module in _in_memory_stages(fn, inputs, Options(fusion=fusion)).items():
        again = parse(print_ir(module), f"{stage}.tir")
        assert structurally_equal(again, module), f"{program}/{stage}: printing lost something"


def test_renaming_is_not_a_difference_but_a_changed_constant_is():
    text = print_ir(_in_memory_stages(*PROGRAMS["gelu_bias"], Options())["lower"])
    renamed = text.replace("%x", "%input_x")
    assert structurally_equal(parse(text), parse(renamed))
    changed = text.replace("{value = 0.5}", "{value = 0.25}", 1)
    assert changed != text
    assert not structurally_equal(parse(text), parse(changed))


def test_swapped_operands_differ():
    text = print_ir(_in_memory_stages(*PROGRAMS["gelu_bias"], Options())["lower"])
    swapped = text.replace("add(%0, %1)", "add(%1, %0)", 1)
    assert swapped != text
    assert not structurally_equal(parse(text), parse(swapped))


def _positions(module):
    """Every `pos` in the module's ops, kernels and lines."""
    found = []

    def walk(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif hasattr(x, "__dataclass_fields__"):
            for name in x.__dataclass_fields__:
                if name == "pos" or name.endswith("_pos"):
                    found.append(getattr(x, name))
                else:
                    walk(getattr(x, name))

    walk(module)
    return found


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_parse_without_positions_is_the_same_module(program):
    """The pipeline reads its own text back without source positions
    (tirc/pipeline.py read_back): the same module, fewer positions in it."""
    fn, inputs = PROGRAMS[program]
    for stage, module in _in_memory_stages(fn, inputs, Options()).items():
        text = print_ir(module)
        fast = parse(text, f"{stage}.tir", positions=False)
        assert structurally_equal(fast, parse(text, f"{stage}.tir")), f"{program}/{stage}"
        assert print_ir(fast) == text
        # Rule positions are left out (tokens keep theirs: they cost nothing).
        missing = sum(p is None for p in _positions(fast))
        assert missing > sum(p is None for p in _positions(parse(text))), f"{program}/{stage}"


def test_parses_without_positions_in_threads_at_once_stay_apart():
    """The fast path shares one builder (its names) between parses: threads
    parsing different modules at once each get their own module."""
    texts = []
    for fn, inputs in PROGRAMS.values():
        texts += [print_ir(m) for m in _in_memory_stages(fn, inputs, Options()).values()]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        modules = list(pool.map(lambda text: parse(text, positions=False), texts * 4))
    assert [print_ir(m) for m in modules] == texts * 4


@pytest.mark.parametrize(
    "old, new, wanted",
    [
        ("add(%0, %1)", "add(%0, %missing)", "%missing"),  # fails in the parser
        ("load %buf1[129*i0 + i1] : f32", "load %buf1[129*i0 + i1] : f16", "f16"),  # in the verifier
    ],
)
def test_read_back_of_a_bad_text_reports_the_position(old, new, wanted):
    """A pass whose text does not verify is reported at FILE:LINE:COL: the
    unpositioned read or its check fails, and the text is read again with
    positions."""
    from ir_text import TircError
    from tirc.pipeline import read_back

    text = print_ir(_in_memory_stages(*PROGRAMS["gelu_bias"], Options())["lower"])
    lines = text.splitlines()
    line = next(k for k, ln in enumerate(lines) if old in ln)
    lines[line] = lines[line].replace(old, new)
    with pytest.raises(TircError) as err:
        read_back("\n".join(lines) + "\n", "02-lower.tir", Context(Options()))
    assert err.value.line == line + 1 and err.value.col is not None
    assert wanted in str(err.value)
