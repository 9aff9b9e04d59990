"""Launch configurations of Triton kernels: block sizes, warps and pipelining
stages from heuristics, and the few alternatives the autotuner may time.

The first config of a launch is the heuristic's choice; it is what runs where
nothing is timed (the interpreter, kernels that write over their inputs).
Heuristics follow Inductor's (`triton_heuristics.py`) in spirit: about 8-16
elements per thread, a whole row in registers when it fits (a persistent
reduction), wide tiles along the contiguous dimension of an outer reduction.
"""

from __future__ import annotations

from dataclasses import dataclass

XBLOCK_MAX = 1024  # pointwise block of the heuristic
RBLOCK_MAX = 2048  # chunk of a looped reduction's row
TILE_MAX = 4096  # XBLOCK * RBLOCK of looped reduction and scan kernels
# A row of at most this many elements (rounded up to a power of two) lives in
# registers: one read of every input however many passes the plan makes.
PERSISTENT_MAX = 16384
PERSISTENT_TILE = 4096  # rows of a persistent block: about this many elements


@dataclass(frozen=True)
class Config:
    xblock: int
    rblock: int | None
    num_warps: int
    num_stages: int = 1

    def meta(self) -> str:
        """Keyword arguments of the launch: block sizes, warps and stages."""
        blocks = f"XBLOCK={self.xblock}" + ("" if self.rblock is None else f", RBLOCK={self.rblock}")
        return f"{blocks}, num_warps={self.num_warps}, num_stages={self.num_stages}"


@dataclass(frozen=True)
class LaunchConfig:
    """How `call` launches a kernel: cdiv(xnumel, XBLOCK) programs; reduction
    and scan kernels also take their inner extent `rnumel`. `kind` is one of
    pointwise, persistent, looped, outer (a looped reduction whose loads are
    contiguous along the rows, not along the reduction) and scan."""

    kind: str
    xnumel: int
    rnumel: int | None
    configs: tuple[Config, ...]

    @property
    def xblock(self) -> int:
        return self.configs[0].xblock

    @property
    def rblock(self) -> int | None:
        return self.configs[0].rblock


def power_of_two(n: int, limit: int) -> int:
    """The smallest power of two covering n, at most `limit`."""
    block = 1
    while block < n and block < limit:
        block *= 2
    return block


def _warps(tile: int, per_thread: int = 16, most: int = 16) -> int:
    """Warps for a block of `tile` elements at about `per_thread` each."""
    return max(1, min(most, tile // (32 * per_thread)))


def _distinct(configs) -> tuple[Config, ...]:
    out: list[Config] = []
    for c in configs:
        if c not in out:
            out.append(c)
    return tuple(out)


def pointwise(numel: int) -> LaunchConfig:
    block = max(16, power_of_two(numel, XBLOCK_MAX))
    first = Config(block, None, _warps(block, per_thread=8, most=4))
    configs = [first]
    if numel >= 2**22:
        # Large streams: more bytes in flight per program may pay.
        configs += [Config(2048, None, 8), Config(4096, None, 8)]
    return LaunchConfig("pointwise", numel, None, _distinct(configs))


def persistent_fits(rnumel: int) -> bool:
    return power_of_two(rnumel, PERSISTENT_MAX * 2) <= PERSISTENT_MAX


def persistent(xnumel: int, rnumel: int) -> LaunchConfig:
    rblock = power_of_two(rnumel, PERSISTENT_MAX)
    xblock = power_of_two(xnumel, max(1, PERSISTENT_TILE // rblock))
    tile = xblock * rblock
    warps = _warps(tile, per_thread=16, most=16)
    configs = [Config(xblock, rblock, warps)]
    if xnumel >= 1024 and tile >= 2048:
        configs += [Config(xblock, rblock, min(32, warps * 2)), Config(xblock, rblock, max(1, warps // 2))]
        if xblock == 1 and rblock <= PERSISTENT_TILE:
            # Two or four rows a program: fewer, fuller programs for mid-sized rows.
            configs += [Config(2, rblock, warps), Config(2, rblock, min(32, warps * 2))]
            configs += [Config(4, rblock, min(32, warps * 2))]
        for rows in (xblock // 2, xblock // 4):
            if rows >= 1:
                configs += [
                    Config(rows, rblock, max(1, warps // 2)),
                    Config(rows, rblock, max(1, warps // 4)),
                ]
    return LaunchConfig("persistent", xnumel, rnumel, _distinct(configs))


def looped(xnumel: int, rnumel: int) -> LaunchConfig:
    rblock = power_of_two(rnumel, RBLOCK_MAX)
    xblock = power_of_two(xnumel, min(XBLOCK_MAX, max(1, TILE_MAX // rblock)))
    warps = _warps(xblock * rblock, per_thread=8, most=8)
    configs = [Config(xblock, rblock, warps)]
    if xnumel >= 1024 and rnumel >= 4096:
        configs += [Config(1, 4096, 16), Config(1, 4096, 8), Config(1, 1024, 4)]
    return LaunchConfig("looped", xnumel, rnumel, _distinct(configs))


def outer(xnumel: int, rnumel: int) -> LaunchConfig:
    """A reduction along a strided dimension (a column sum): wide along the
    contiguous rows, a few reduced elements at a time."""
    xblock = power_of_two(xnumel, 32)
    rblock = power_of_two(rnumel, max(1, TILE_MAX // 32))
    configs = [Config(xblock, rblock, _warps(xblock * rblock, per_thread=16, most=8))]
    if xnumel >= 1024 and rnumel >= 1024:
        configs += [
            Config(32, 256, 8),
            Config(64, 128, 8),
            Config(32, 512, 16),
            Config(16, 256, 4),
            Config(32, 128, 4, 2),
            Config(64, 64, 8, 3),
        ]
    return LaunchConfig("outer", xnumel, rnumel, _distinct(configs))


def scan(xnumel: int, rnumel: int) -> LaunchConfig:
    rblock = power_of_two(rnumel, 1024)
    xblock = power_of_two(xnumel, min(XBLOCK_MAX, max(1, TILE_MAX // rblock)))
    return LaunchConfig("scan", xnumel, rnumel, (Config(xblock, rblock, 4),))
