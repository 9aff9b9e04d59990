"""Compiler options: one typed, frozen object, printed into every dump header."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ir_text import TircError

BACKENDS = ("cpp", "triton")
DEVICES = ("cpu", "cuda")


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

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise TircError(f"unknown backend '{self.backend}' (expected {' or '.join(BACKENDS)})")
        if self.device not in DEVICES:
            raise TircError(f"unknown device '{self.device}' (expected {' or '.join(DEVICES)})")
        if self.backend == "cpp" and self.device != "cpu":
            raise TircError("the cpp backend runs on device cpu only")
        if self.max_fusion_size < 1:
            raise TircError("max_fusion_size must be at least 1")
        if self.fusion_bisect_limit < -1:
            raise TircError("fusion_bisect_limit must be -1 (no limit) or at least 0")

    def to_pairs(self) -> tuple[tuple[str, object], ...]:
        return tuple(sorted(dataclasses.asdict(self).items()))

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
                raise TircError(f"option '{key}' takes a {kind.__name__}, got {value!r}")
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
    raise TircError(f"option '{key}' takes a {kind.__name__}, got '{raw}'")
