"""Which ATen ops IR text may name: a closed set of pure ops.

A dump is untrusted input, like a model file from the internet: whatever it
names runs when it is verified (on fake tensors), replayed, reduced or
compiled with `--check`. So a graph op or an extern call read from text must
be on the allow-list `pure_ops.txt` (core ATen, the pointwise ops, and the
ops tirc's capture and lowering emit), and its schema must be functional:
nothing written through an argument (`from_file`'s shared storage filled in
place, `copy_`, `out=`), no file name, path or `shared` flag. The only
mutation a dump can express is its declared `update` lines.

Both checks run: the list keeps out ops with side effects their schemas do
not declare (`_copy_from` writes into `dst`; `_print` writes to stdout), and
the schema rule keeps a list entry honest under another torch version.
docs/security.md has the whole model.
"""

from __future__ import annotations

import functools
from pathlib import Path

from .errors import error_at

RULE = "pure-ops"
PURE_OPS_FILE = Path(__file__).with_name("pure_ops.txt")

# Argument names that open files or share memory with one (aten.from_file's
# filename and shared; save/load-like ops' path and f).
FILE_ARGUMENTS = frozenset({"filename", "path", "file", "f", "shared", "fd"})


@functools.lru_cache(maxsize=1)
def pure_ops() -> frozenset[str]:
    """The allow-list: one `namespace.op.overload` a line; `#` starts a comment."""
    entries = set()
    for line in PURE_OPS_FILE.read_text().splitlines():
        entry = line.partition("#")[0].strip()
        if entry:
            entries.add(entry)
    return frozenset(entries)


def schema_refusal(overload) -> str | None:
    """Why the ATen op `overload` is not pure by its schema, or None."""
    schema = overload._schema
    for argument in schema.arguments:
        if argument.alias_info is not None and argument.alias_info.is_write:
            return f"it writes into its argument '{argument.name}'"
        if argument.name in FILE_ARGUMENTS:
            return f"it takes a file argument '{argument.name}'"
    if schema.is_mutable:
        return "it mutates its arguments"
    return None


@functools.lru_cache(maxsize=4096)
def op_refusal(target: str) -> str | None:
    """Why IR text may not name the op `target`, or None when it may: the
    table of op_facts.py in a process without torch, else torch's answer."""
    from .op_facts import known_op

    known = known_op(target)
    return known.refusal if known is not None else live_refusal(target)


def live_refusal(target: str) -> str | None:
    """op_refusal, asked of torch. (resolve_target gives OpOverloads only:
    `aten.__class__.__init__` resolves to nothing.)"""
    from .graph_check import resolve_target

    overload = resolve_target(target)
    if target not in pure_ops():
        if overload is None:
            return f"unknown op '{target}'"
        return f"'{target}' is not on tirc's list of pure ops ({PURE_OPS_FILE.name})"
    if overload is None:
        return None  # listed, absent from this torch: 'unknown op', reported by the verifier
    problem = schema_refusal(overload)
    return f"'{target}' is not pure: {problem}" if problem else None


def named_ops(module) -> frozenset[str]:
    """The ATen ops a module's graph ops and extern calls name."""
    return frozenset(c.target for c in _calls(module))


def _calls(module) -> list:
    return list(module.graph) + [n for n in module.nodes if n.kind == "extern"]


def check_text_ops(module, trusted: frozenset[str] = frozenset()) -> None:
    """Refuse, at its position, the first graph op or extern call of a module
    read from text that names an op outside the allow-list. `trusted`: ops
    the caller vouches for (the pipeline reading back a module it printed
    from a program it traced, which may call any ATen op)."""
    for call in _calls(module):
        if call.target in trusted:
            continue
        problem = op_refusal(call.target)
        if problem is not None:
            raise error_at(call.pos, f"{problem} [rule: {RULE}]")
