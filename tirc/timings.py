"""Compile timings: the seconds each stage of one compile took, and each
named step inside it (`lower.ops`, `fusion.print`), measured around the
calls by the driver (pipeline.py, compiler.py), never inside a pass, as
MLIR's PassInstrumentation does.

A `Timings` travels with its compile (on the pipeline's Context, on the
result): nothing is kept between compiles. Names are a stage (`capture`,
`cache`, `lower` ... `memplan`, `codegen`, `build`) or `STAGE.STEP`; a
stage's entry holds its steps' time and what runs between them, and the
stages' times do not overlap, so they sum to at most the compile's wall
time. Measuring a name again adds to it (the capture dump is written after
the code-cache lookup, and is counted under `capture`).

A long compile says how far it got: once it has run PROGRESS_AFTER_S
seconds, one line per stage on a terminal's stderr (`tirc: lower 0.4 s`),
the stages already done first; never on a file or a pipe, whose output
stays as quiet and deterministic as before. `-v` asks for every stage's
line on any stderr, from the first (`tirc: lower 0.412 s`).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Callable, Iterator, TextIO

from .steps import stage_of

# A compile shorter than this prints no progress: the one-line summary says enough.
PROGRESS_AFTER_S = 2.0


class Timings:
    """Seconds per stage and step of one compile (time.perf_counter);
    `progress`, a stream, gets the progress lines once the compile has run
    `progress_after` seconds (default PROGRESS_AFTER_S)."""

    def __init__(
        self,
        progress: TextIO | None = None,
        clock: Callable[[], float] = time.perf_counter,
        progress_after: float | None = None,
        label: str = "",
        digits: int = 1,
    ):
        self._clock = clock
        self._label = label  # before each progress line's stage (`forward: `)
        self._digits = digits  # of the seconds in progress lines (-v's: short stages too)
        self._start = clock()
        self._seconds: dict[str, float] = {}
        self._progress = progress
        self._progress_after = PROGRESS_AFTER_S if progress_after is None else progress_after
        self._held: list[str] = []  # progress lines of stages done before progress_after
        self._reported: set[str] = set()

    @classmethod
    def for_stderr(cls, verbose: bool = False, label: str = "") -> Timings:
        """The timings of a compile that reports progress on stderr when it
        is a terminal, or with `verbose` (`-v`) on any stderr, from the
        first stage on."""
        if verbose:
            return cls(progress=sys.stderr, progress_after=0.0, label=label, digits=3)
        return cls(progress=sys.stderr if sys.stderr.isatty() else None, label=label)

    @contextlib.contextmanager
    def measure(self, name: str) -> Iterator[None]:
        """Time the block under `name` (a stage, or `STAGE.STEP`), also when it raises."""
        start = self._clock()
        try:
            yield
        finally:
            seconds = self._clock() - start
            self._seconds[name] = self._seconds.get(name, 0.0) + seconds
            if name == stage_of(name):
                self._report(name, seconds)

    def as_dict(self) -> dict[str, float]:
        """name -> seconds, of what ran so far: the stages in the order they
        first ran, each followed by its steps in the order they first ran."""
        stages = dict.fromkeys(stage_of(name) for name in self._seconds)
        ordered = {}
        for stage in stages:
            if stage in self._seconds:
                ordered[stage] = self._seconds[stage]
            for name, seconds in self._seconds.items():
                if name != stage and stage_of(name) == stage:
                    ordered[name] = seconds
        return ordered

    def _report(self, stage: str, seconds: float) -> None:
        """One progress line per stage, the first time it finishes."""
        if self._progress is None or stage in self._reported:
            return
        self._reported.add(stage)
        self._held.append(f"tirc: {self._label}{stage} {seconds:.{self._digits}f} s")
        if self._clock() - self._start < self._progress_after:
            return
        for line in self._held:
            print(line, file=self._progress)
        self._held = []
        self._progress.flush()


def table(timings: dict[str, float]) -> list[str]:
    """The lines `--timings` prints: each stage, then its steps indented,
    with seconds and share of the total (the stages' sum), in `timings`'
    order, and the total."""
    total = sum(seconds for name, seconds in timings.items() if stage_of(name) == name)
    rows = [(name if stage_of(name) == name else "  " + name, seconds) for name, seconds in timings.items()]
    rows.append(("total", total))
    width = max(len(name) for name, _ in rows + [("stage", 0.0)])
    lines = ["tirc: timings", f"  {'stage':<{width}}   seconds   share"]
    for name, seconds in rows:
        share = 100.0 * seconds / total if total > 0 else 0.0
        lines.append(f"  {name:<{width}}  {seconds:8.3f}  {share:5.1f}%")
    return lines
