"""Crash reproducers and injected crashes.

When a pass raises (a compiler bug, not a problem in the input), the IR it
was given is written as `repro-PASS.tir`: the module just before the failing
pass, whose header carries the stage (so the rest of the pipeline is the one
that crashed) and the options (an injected fault included), so `tirc replay`
on that file alone runs into the same exception."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ir_text import Module, TircError, print_ir

from .dumps import write_atomic
from .options import Options


class InjectedFault(RuntimeError):
    """The crash that `--option inject_fault=PASS:crash` asks for."""


def inject_crash(options: Options, stage: str) -> None:
    """Raise inside `stage` (a stage's or a step's name) when the options ask for a crash there."""
    fault = options.fault
    if fault is not None and fault.kind == "crash" and fault.stage == stage:
        raise InjectedFault(f"injected crash in pass {stage} (inject_fault={options.inject_fault})")


@dataclass(frozen=True)
class Reproducers:
    """Where reproducers go; `source_text` is the text being re-run (replay),
    of which no copy is written."""

    directory: Path
    source_text: str | None = None

    def write(self, stage: str, module: Module, err: BaseException) -> None:
        """Write `repro-STAGE.tir` for `err`, raised by pass `stage` on `module`,
        and note on the exception where it went (the CLI prints it)."""
        text = print_ir(module)
        path = None
        if text != self.source_text:
            path = self.directory / f"repro-{stage}.tir"
            try:
                write_atomic(path, text)
            except OSError:
                path = None
        try:
            err.tirc_pass = stage
            err.tirc_reproducer = path
        except AttributeError:  # an exception type without a __dict__
            pass


def crash_report(err: BaseException) -> list[str]:
    """The lines the CLI prints for a compiler crash, after the error itself."""
    path = getattr(err, "tirc_reproducer", None)
    if path is None:
        return []
    step = getattr(err, "tirc_step", None)
    before = f"pass {err.tirc_pass}" + (f" (it crashed in step {step})" if step else "")
    return [f"tirc: wrote {path}, the IR before {before}; reproduce with: tirc replay {path}"]


def run_pass(stage: str, module: Module, options: Options, repro: Reproducers | None, fn, *args):
    """`fn(*args)`, the pass `stage` on `module`, with the injected crash and
    the reproducer around it. User errors (TircError) are not crashes."""
    try:
        inject_crash(options, stage)
        return fn(*args)
    except TircError:
        raise
    except Exception as err:
        if repro is not None:
            repro.write(stage, module, err)
        raise
