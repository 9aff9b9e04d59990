"""Compiler options: one typed, frozen object, printed into every dump header."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from codegen import BACKENDS
from ir_text import TircError

from .steps import STEP_NAMES

DEVICES = ("cpu", "cuda")
# Passes a fault can be injected into (`inject_fault=PASS:crash`): every stage
# that runs on IR, and codegen, or one step of a stage (steps.py). Capture
# has no IR before it to reproduce from.
FAULT_PASSES = ("lower", "schedule", "fusion", "memplan", "codegen")
# Options for testing tirc itself: printed into a header only when set, so
# ordinary dumps never show them.
DEBUG_OPTIONS = ("check_determinism", "inject_fault", "verify_roundtrip")
# Options printed only when they differ from their default: the debug ones,
# the layout mode, whose default's decision the lower dump prints itself
# (`layout channels_last {reason = ...}`), the factoring of reductions, whose
# decisions the schedule dump shows (`factored = "[rule]"`), the call's
# CUDA graphs, and the freeing of inputs (training graphs set it).
QUIET_OPTIONS = DEBUG_OPTIONS + ("layout", "factor_reductions", "cuda_graphs", "free_inputs")
LAYOUTS = ("auto", "keep", "channels-last")


@dataclass(frozen=True)
class Options:
    backend: str = "cpp"
    device: str = "cpu"
    # Vertical fusion of pointwise nodes; off gives one kernel per node.
    fusion: bool = True
    # Most nodes one kernel may hold (as Inductor's max_fusion_size).
    max_fusion_size: int = 64
    # Apply only the first N fusions the pass decides (-1: all), to bisect a
    # miscompile down to the fusion that causes it.
    fusion_bisect_limit: int = -1
    # Compile twice, the second time in a child process under another hash
    # seed, and fail on any difference in the dumps or the generated code.
    check_determinism: bool = False
    # Print and parse back the result of every stage, and verify it, as a
    # re-fed dump would be read (tirc/pipeline.py); by default only the
    # memplan stage's, which codegen reads.
    verify_roundtrip: bool = False
    # A deliberate fault, for testing the repro tools (docs/debugging.md):
    # `PASS:crash` raises inside that pass; `codegen:miscompile[:OP[@LINE][:N]]`
    # corrupts one body op in the generated code: the first one that has a
    # corruption, or the first (N-th) named OP (in nodes from source line LINE).
    inject_fault: str = ""
    # Whether convolution graphs run channels-last (lowering/layout.py):
    # auto decides by the convolutions' kinds, keep never, channels-last always.
    layout: str = "auto"
    # Whether the schedule stage factors a reduction into partials and their
    # combine where a rule finds it pays (scheduler/factor.py).
    factor_reductions: bool = True
    # Whether a CUDA program's calls replay one CUDA graph after the first
    # two (tirc/cuda_graphs.py): no effect on the IR or the generated code.
    cuda_graphs: bool = True
    # Whether the program owns its inputs: the caller hands over the list of
    # them (AOTAutograd's boxed call, which a training graph is given), and
    # the memory plan frees each input after its last use (a backward's saved
    # activations), as it frees an intermediate buffer.
    free_inputs: bool = False

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise TircError(f"unknown backend '{self.backend}' (expected {' or '.join(BACKENDS)})")
        if self.device not in DEVICES:
            raise TircError(f"unknown device {self.device!r} (expected {' or '.join(DEVICES)})")
        devices = BACKENDS[self.backend].devices
        if self.device not in devices:
            raise TircError(f"the {self.backend} backend runs on device {' or '.join(devices)} only")
        if self.max_fusion_size < 1:
            raise TircError("max_fusion_size must be at least 1")
        if self.fusion_bisect_limit < -1:
            raise TircError("fusion_bisect_limit must be -1 (no limit) or at least 0")
        if self.inject_fault:
            parse_fault(self.inject_fault)
        if self.layout not in LAYOUTS:
            raise TircError(f"unknown layout {self.layout!r} (expected {' or '.join(LAYOUTS)})")

    @property
    def fault(self) -> "Fault | None":
        return parse_fault(self.inject_fault) if self.inject_fault else None

    def to_pairs(self) -> tuple[tuple[str, object], ...]:
        """The header's options: every field, but the debug ones only when set."""
        defaults = Options.__dataclass_fields__
        return tuple(
            (key, value)
            for key, value in sorted(dataclasses.asdict(self).items())
            if key not in QUIET_OPTIONS or value != defaults[key].default
        )

    @classmethod
    def from_pairs(cls, pairs, base: "Options | None" = None) -> "Options":
        """Options from (key, value) pairs, checked against the fields' types."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values = dataclasses.asdict(base or cls())
        for key, value in pairs:
            if key not in fields:
                raise TircError(f"unknown option '{key}' (known: {', '.join(sorted(fields))})")
            kind = type(values[key])
            if type(value) is not kind:
                raise TircError(f"option '{key}' takes {_KIND_NAMES[kind]}, got {value!r}")
            values[key] = value
        return cls(**values)

    def with_text(self, assignments: list[str]) -> "Options":
        """Apply `KEY=VALUE` strings (from `--option`)."""
        defaults = dataclasses.asdict(self)
        pairs = []
        for text in assignments:
            key, sep, raw = text.partition("=")
            if not sep:
                raise TircError(f"--option expects KEY=VALUE, got '{text}'")
            key = key.strip()
            if key not in defaults:
                raise TircError(f"unknown option '{key}' (known: {', '.join(sorted(defaults))})")
            pairs.append((key, _convert(key, raw.strip(), type(defaults[key]))))
        return Options.from_pairs(pairs, self)


_KIND_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _convert(key: str, raw: str, kind: type):
    if kind is bool:
        if raw.lower() in ("true", "1", "yes", "on"):
            return True
        if raw.lower() in ("false", "0", "no", "off"):
            return False
    elif kind is int:
        try:
            return int(raw)
        except ValueError:
            pass
    else:
        return raw
    raise TircError(f"option '{key}' takes {_KIND_NAMES[kind]}, got '{raw}'")


@dataclass(frozen=True)
class Fault:
    """An injected fault: `kind` "crash" in `stage`, or "miscompile" of a body
    op: the `nth` named `op` (of the nodes from source line `line`, when
    given), or the first with a corruption when `op` is empty."""

    stage: str
    kind: str
    op: str = ""
    nth: int = 1
    line: int | None = None


def parse_fault(text: str) -> Fault:
    parts = text.split(":")
    usage = (
        "inject_fault takes PASS:crash (PASS: "
        + ", ".join(FAULT_PASSES + STEP_NAMES)
        + ") or codegen:miscompile[:OP[@LINE][:N]] (LINE, N: 1 or more)"
    )
    if len(parts) == 2 and parts[0] in FAULT_PASSES + STEP_NAMES and parts[1] == "crash":
        return Fault(parts[0], "crash")
    if 2 <= len(parts) <= 4 and parts[:2] == ["codegen", "miscompile"]:
        op, at, line = (parts[2] if len(parts) > 2 else "").partition("@")
        nth = parts[3] if len(parts) > 3 else "1"
        numbers_ok = nth.isdigit() and int(nth) >= 1 and (not at or (line.isdigit() and int(line) >= 1))
        if (op or len(parts) == 2) and numbers_ok:
            return Fault("codegen", "miscompile", op, int(nth), int(line) if at else None)
    raise TircError(f"{usage}, got '{text}'")
