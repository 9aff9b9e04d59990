"""Dumps of the graphs torch.compile hands to tirc: where each graph's go.

`torch.compile(model, backend="tirc", options={"dump_dir": D, "dump_after":
"fusion,memplan", "report": True})`, or the environment variables
TIRC_DUMP_DIR, TIRC_DUMP_AFTER and TIRC_REPORT (for a program whose
torch.compile call one cannot edit), give every graph its own directory
under D, named by Dynamo's compile id: `graph0` for the first frame's graph,
`graph1` for the graph after a break (Dynamo compiles the rest of the
function as a frame of its own), `graph0.1` for the first frame's second
compile (a recompile after a guard failed). A training graph's forward and
backward go to `forward/` and `backward/` inside it, as with `tirc compile
--train`; a graph compiled once per set of sizes puts each compile in
`shapeK/` inside its directory. A crash writes its reproducer into the
graph's directory (else the current one), and the error names it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from ir_text import TircError

from .compiler import parse_dump_after
from .crash import crash_report

# The option keys that say where dumps go, not how to compile.
DUMP_OPTIONS = ("dump_dir", "dump_after", "report")
ENVIRONMENT = {"dump_dir": "TIRC_DUMP_DIR", "dump_after": "TIRC_DUMP_AFTER", "report": "TIRC_REPORT"}


@dataclass(frozen=True)
class GraphDumps:
    """Where one graph's dumps go (`directory` None: nowhere), which stages,
    and whether a report is written beside them."""

    directory: Path | None = None
    stages: frozenset = frozenset()
    report: bool = False

    def inside(self, name: str) -> GraphDumps:
        """The dumps of a part of this graph (a shape's compile) in `name/`."""
        if self.directory is None:
            return self
        return dataclasses.replace(self, directory=self.directory / name)


def graph_dumps(options: dict) -> GraphDumps:
    """The dumps that torch.compile's `options` (whose dump keys it removes)
    or the environment ask for, for the graph being compiled now."""
    asked = {key: options.pop(key) for key in DUMP_OPTIONS if key in options}
    for key, variable in ENVIRONMENT.items():
        if key not in asked and os.environ.get(variable):
            asked[key] = os.environ[variable]
    root = asked.get("dump_dir")
    report = _flag(asked.get("report", False))
    if root is None:
        if "dump_after" in asked or report:
            raise TircError("torch.compile options: dump_after and report need a dump_dir (or TIRC_DUMP_DIR)")
        return GraphDumps()
    stages = frozenset(parse_dump_after(asked.get("dump_after") or "all"))
    return GraphDumps(Path(root) / _graph_name(Path(root)), stages, report)


def _flag(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise TircError(f"report = {value!r}: expected true or false")


def _graph_name(root: Path) -> str:
    """`graphF` (or `graphF.N` for a frame's N-th recompile) from Dynamo's
    compile id; outside Dynamo (the backend called directly), the first
    `graphK` not yet in `root`."""
    compile_id = torch._guards.CompileContext.current_compile_id()
    frame = getattr(compile_id, "frame_id", None)
    if frame is not None:
        again = getattr(compile_id, "frame_compile_id", None) or 0
        return f"graph{frame}" + (f".{again}" if again else "")
    k = 0
    while (root / f"graph{k}").exists():
        k += 1
    return f"graph{k}"


def named_reproducer(err: BaseException) -> BaseException:
    """`err`, a crash in a pass that wrote a reproducer, as an exception
    whose message names it: torch.compile shows only the message of the
    error a backend raised. Other errors are returned as they are."""
    lines = crash_report(err)
    if not lines:
        return err
    return CompilerCrash(f"{type(err).__name__}: {err}\n" + "\n".join(lines))


class CompilerCrash(RuntimeError):
    """A compiler bug under torch.compile; the message names the reproducer
    it wrote, and the original exception is its cause."""
