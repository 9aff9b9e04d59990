"""Source locations of captured ops: which frame of a node's (or a
traceback's) stack is the user's line, in the traced program's own file or,
for an exported program that names no file, the innermost frame outside torch."""

from __future__ import annotations

import os
import re
import traceback

import torch

from ir_text import Loc

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__))
# tirc's own packages: a frame there (the interpreter that runs a graph for
# capture to trace) is never the user's line.
_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_TIRC_DIRS = tuple(
    os.path.join(_ROOT, name) + os.sep
    for name in ("ir_text", "lowering", "scheduler", "codegen", "repro", "tirc")
)


def _frames(node) -> list[tuple[str, int]]:
    return [(f, int(line)) for f, line in _FRAME.findall(node.meta.get("stack_trace") or "")]


def _source_locator(source: str, source_path: str | None):
    """Locations of nodes (from their stack traces) in the traced program's own file."""
    want = os.path.realpath(source_path) if source_path else None
    return lambda node: _in_source(_frames(node), source, want)


def graph_locator(source: str, source_path: str | None):
    """Locations of the nodes of a graph that torch traced from the user's
    program (Dynamo's, AOTAutograd's forward and backward): the innermost
    frame in the program's own file where it is known, else the innermost
    frame outside torch and tirc."""
    in_source = _source_locator(source, source_path)

    def locate(node) -> Loc | None:
        found = in_source(node)
        if found is not None:
            return found
        for filename, line in reversed(_frames(node)):
            path = os.path.realpath(filename)
            if not path.startswith(_TORCH_DIR + os.sep) and not path.startswith(_TIRC_DIRS):
                return Loc(os.path.basename(filename), line)
        return None

    return locate


def _in_source(frames, source: str, want: str | None) -> Loc | None:
    """The innermost of (file, line) `frames` in the program's own file (by
    its real path `want`, else by name)."""
    for filename, line in reversed(frames):
        if want and os.path.realpath(filename) == want:
            return Loc(source, line)
    for filename, line in reversed(frames):
        if os.path.basename(filename) == source:
            return Loc(source, line)
    return None


def _exported_loc(node) -> Loc | None:
    """An exported program names no source file: the innermost frame outside
    torch itself is the user's line (`self.lin(x)`, not nn.Linear's forward)."""
    for filename, line in reversed(_frames(node)):
        if not os.path.realpath(filename).startswith(_TORCH_DIR + os.sep):
            return Loc(os.path.basename(filename), line)
    return None


def _traceback_loc(tb, source: str, source_path: str | None) -> Loc | None:
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(tb) if f.lineno is not None]
    return _in_source(frames, source, os.path.realpath(source_path) if source_path else None)


def graph_source_files(gm: torch.fx.GraphModule) -> list[str]:
    """The user's files (outside torch and tirc) that the stack traces of a
    graph's nodes name, by real path, sorted: where the `loc(...)` lines of
    a graph torch traced come from, for the report to show."""
    files = set()
    for node in gm.graph.nodes:
        for filename, _ in _frames(node):
            path = os.path.realpath(filename)
            if not path.startswith(_TORCH_DIR + os.sep) and not path.startswith(_TIRC_DIRS):
                files.add(path)
    return sorted(f for f in files if os.path.isfile(f))
