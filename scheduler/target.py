"""What the scheduler needs to know of the backend it plans for: one record
per backend (codegen's backend table holds each backend's), read by the
fusion pass and the plan check instead of the backend's name, so that a new
backend states its capabilities once and no pass compares names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .split import SplitRule


@dataclass(frozen=True)
class Target:
    """`name` is for messages only. `loop_nests`: one kernel may run several
    loop nests one after the other (the C++ backend's OpenMP region), so the
    fusion pass may group nests of related sizes. `launch_configs`: kernels
    take a pinned launch config (`triton_config`). `channels_last`: its
    kernels gain from channels-last activations where the device's
    convolutions run faster in that layout (lowering's layout decision,
    lowering/layout.py). `split`: the rule of the
    reductions over few long rows that the backend splits into two kernels,
    built when asked (its thresholds are read then, so tests may shrink
    them); None when it splits none. `sector_bytes`: the kernels' lanes
    read memory in sectors of this many bytes, so a reduction whose input is
    contiguous only in shorter runs is factored (scheduler/factor.py,
    `[short-run]`); None where runs of any length read well enough."""

    name: str
    loop_nests: bool = False
    launch_configs: bool = False
    channels_last: bool = False
    split: Callable[[], SplitRule] | None = None
    sector_bytes: int | None = None

    def split_rule(self) -> SplitRule | None:
        return self.split() if self.split is not None else None
