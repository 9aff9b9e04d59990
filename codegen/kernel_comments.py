"""The comment above each kernel in output_code.py: the kernel's nodes, then
the user's source lines they were captured from, each with the ATen ops
of its nodes (the nodes' `loc` and `origin`):

    // k0: %buf0, %buf1, %buf2, %buf3
    //   gelu_bias.py:12 aten.add.Tensor, aten.gelu.default
    //   gelu_bias.py:13 aten.sigmoid.default, aten.mul.Tensor

Files in the order of their first node, lines in increasing order, ops in
node order without repeats; nodes with no `loc` last, as `(no source line)`.
Long lists are cut (`... and 3 more`), so that a kernel of 60 nodes keeps a
comment of a dozen lines. The comment is for the reader only: the keys that
share kernels with the same code (triton_dedupe.py, and through it the
launch tuner's records) leave it out, as they leave out the node names.

A file name or an op name is any string of a dump, and the comment sits
inside a C++ line comment inside a Python raw string (`CPP_SOURCE =
r\"\"\"...\"\"\"`) or in a Python comment: `comment_text` keeps printable ASCII
but for backslashes and double quotes, so that no name can end the line (a
newline, a C++ line splice) or the string (three double quotes).
"""

from __future__ import annotations

from .kernel_plan import KernelPlan

# The most source lines a kernel's comment lists, and ops per line.
MAX_LINES = 8
MAX_OPS = 6


def kernel_comment(plan: KernelPlan, marker: str, sources: bool = True) -> list[str]:
    """The comment lines above the kernel's function, each starting with
    `marker` (`//` or `#`); `sources`: with its source lines, not only its
    nodes."""
    lines = [f"{marker} {plan.name}: {', '.join(plan.nodes)}"]
    if sources:
        lines += [f"{marker}   {text}" for text in source_lines(plan.sources)]
    return lines


def source_lines(sources) -> list[str]:
    """`file:line op, op, ...` for each source line of `sources`, the
    (Loc or None, ATen op or None) of each node in node order."""
    groups: dict = {}
    for loc, op in sources:
        ops = groups.setdefault(loc, [])
        if op is not None and op not in ops:
            ops.append(op)
    files: dict[str, int] = {}  # each file's rank: the order of its first node
    for loc in groups:
        if loc is not None:
            files.setdefault(loc.file, len(files))
    located = sorted((loc for loc in groups if loc is not None), key=lambda loc: (files[loc.file], loc.line))
    lines = [_group(f"{comment_text(loc.file)}:{loc.line}", groups[loc]) for loc in located]
    if groups.get(None):
        lines.append(_group("(no source line)", groups[None]))
    if len(lines) > MAX_LINES:
        lines = lines[: MAX_LINES - 1] + [f"... and {len(lines) - MAX_LINES + 1} more source lines"]
    return lines


def _group(where: str, ops: list[str]) -> str:
    shown = ", ".join(comment_text(str(op)) for op in ops[:MAX_OPS])  # a dump's origin may be any literal
    more = f", ... and {len(ops) - MAX_OPS} more" if len(ops) > MAX_OPS else ""
    return f"{where} {shown}{more}".rstrip()


def loc_comment(loc) -> str:
    """`  # file:line` after a statement of `call` (an extern call's), or ""
    for no Loc."""
    return "" if loc is None else f"  # {comment_text(loc.file)}:{loc.line}"


def comment_text(text: str) -> str:
    """`text` safe inside a C++ line comment in a Python raw string and in a
    Python comment: characters outside printable ASCII, backslashes and
    double quotes are `?`."""
    return "".join(c if " " <= c <= "~" and c not in '\\"' else "?" for c in text)
