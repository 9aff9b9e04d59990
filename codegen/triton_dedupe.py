"""Kernels with the same code: the same conv epilogue in every block of a
ResNet stage is one kernel per block in the IR, on other buffers, but the
same Triton code. output_code.py defines it once and names the others as
aliases, each under its own comment (kernel_comments.py):

    # k9: %buf30, %buf31
    #   model.py:14 aten.add.Tensor, aten.relu.default
    k9 = k6  # k6's code

so Triton compiles it once (its cache key is the function's text and
line), and the launch tuner (triton_tune.py) times it once: its records
are keyed by `code_key`.

Two kernels share code when their sources agree once the kernel's name
and its pointer parameters' names (`p_<value>`) are replaced by their
positions, and the comments are dropped: the one above the function (its
nodes, source lines and ATen ops, which differ between kernels that share
code) and any in its body. String literals (eviction policies, a device
assert's message) are compared as they are. A source with two functions
(a split reduction) is never shared.
"""

from __future__ import annotations

import re

from .kernel_comments import kernel_comment
from .kernel_plan import KernelPlan

_NAME = re.compile(r"\bp_\w+\b")


def code_key(plan: KernelPlan, source: str) -> str | None:
    """`source` (the kernel's rendering, triton.render_kernel) less its names;
    None for a kernel that is never shared."""
    lines = source.split("\n")
    defs = [k for k, line in enumerate(lines) if line.startswith("def ")]
    if len(defs) != 1:
        return None
    positions = {f"p_{name}": f"P{k}" for k, (name, _) in enumerate(plan.params)}
    first = defs[0]  # the comment and the decorator above it are left out
    body = [line for line in lines[first:] if not line.lstrip().startswith("#")]
    body[0] = body[0].replace(f"def {plan.name}(", "def K(", 1)
    return "\n".join(_renamed(line, positions) for line in body)


def _renamed(line: str, positions: dict[str, str]) -> str:
    """`line` with its parameter names replaced, outside string literals
    (the generated code quotes with double quotes only)."""
    parts = line.split('"')
    parts[::2] = [_NAME.sub(lambda m: positions.get(m.group(0), m.group(0)), part) for part in parts[::2]]
    return '"'.join(parts)


def shared(plans: list[KernelPlan], sources: list[str]) -> tuple[list[str], list[str]]:
    """The sources to define (the first kernel of each code) and the alias
    lines of the rest (each under its comment), in the plans' order."""
    first: dict[str, str] = {}
    defs, aliases = [], []
    for plan, source in zip(plans, sources):
        key = code_key(plan, source)
        if key is not None and key in first:
            aliases += [*kernel_comment(plan, "#"), f"{plan.name} = {first[key]}  # {first[key]}'s code"]
            continue
        if key is not None:
            first[key] = plan.name
        defs.append(source)
    return defs, aliases
