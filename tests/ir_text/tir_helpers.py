"""Helpers of the IR-text tests: every stage's dump of a program, located
errors, and small edits of dump text."""

from __future__ import annotations

import torch

from ir_text import TircError, parse
from tirc.compiler import capture_program
from tirc.compiler import options_of
from tirc.options import Options
from tirc.pipeline import Context, check_module, run_stages

STAGE_ORDER = ("capture", "lower", "schedule", "fusion", "memplan")


def stage_texts(fn, inputs, options: Options | None = None, source: str = "prog.py", path=None) -> dict:
    """The text of every stage (capture .. memplan) for `fn` on `inputs`."""
    options = options or Options()
    module, text, _, _ = capture_program(fn, list(inputs), source, path, options)
    texts = {"capture": text}
    run_stages(module, Context(options), None, lambda name, _m, t: texts.__setitem__(name, t))
    assert tuple(texts) == STAGE_ORDER
    return texts


def check_text(text: str, filename: str = "edited.tir"):
    """Parse and check a dump as `tirc verify` does; the TircError it raises (located), or None."""
    try:
        module = parse(text, filename)
        check_module(module, Context(options_of(module)))
    except TircError as err:
        return err.located(filename)
    return None


def line_of(text: str, needle: str) -> int:
    """The 1-based number of the one line of `text` that contains `needle`."""
    hits = [k for k, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1, f"{needle!r} is on lines {hits}"
    return hits[0]


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


# ---- programs shared by several test files


def chain4(x):
    """A 4-op pointwise chain: one kernel when fused."""
    a = x + 1
    b = torch.relu(a)
    c = b * 2
    return torch.sigmoid(c)


def two_sizes(x, b):
    """Two nodes with different iteration sizes (5 and 20); `y` is returned,
    so it is computed once, not inlined into its broadcasting reader."""
    y = b * 2
    return x + y, y
