"""Launch configurations of Triton kernels: block sizes, warps and pipelining
stages from heuristics, and the few alternatives the autotuner may time.

The first config of a launch is the heuristic's choice; it is what runs where
nothing is timed (the interpreter, kernels that write over their inputs).
Heuristics follow Inductor's (`triton_heuristics.py`) in spirit: about 8-16
elements per thread, a whole row in registers when it fits (a persistent
reduction), wide tiles along the contiguous dimension of an outer reduction,
and a long reduction into few rows split over many programs (as Inductor's
split reductions).
"""

from __future__ import annotations

from dataclasses import dataclass

XBLOCK_MAX = 1024  # pointwise block of the heuristic
TILED_TUNED_MIN = 2**20  # elements of a tiled kernel worth timing alternative tiles for
RBLOCK_MAX = 2048  # chunk of a looped reduction's row
TILE_MAX = 4096  # XBLOCK * RBLOCK of looped reduction and scan kernels
# A row of at most this many elements (rounded up to a power of two) lives in
# registers: one read of every input however many passes the plan makes.
PERSISTENT_MAX = 16384
PERSISTENT_TILE = 4096  # rows of a persistent block: about this many elements
# A reduction into fewer rows than SPLIT_MAX_ROWS, each of at least
# SPLIT_MIN_RNUMEL elements, would leave most SMs idle with a program per row:
# each row is split into chunks reduced by programs of their own, and a second
# kernel combines the partials (triton_split.py). The scheduler keeps such a
# reduction's kernel one pass (triton_split.rule gives it these thresholds).
# 256: about two rows per SM of an H100 or H200, below which Inductor splits
# too; at 64, GroupNorm(32) at batch 2 (64 rows of 65536) ran a looped
# program per row, 1.40x Inductor's time.
SPLIT_MAX_ROWS = 256
SPLIT_MIN_RNUMEL = 2**16
# Programs of a split reduction's first kernel, over all rows, at most (each
# also reduces at least SPLIT_MIN_CHUNK elements): enough waves of programs
# on the 132 SMs of an H100 or H200 to keep reads in flight, as Inductor
# sizes its splits by the device's threads (measured against 256 and 1024:
# docs/design-notes.md, "Triton kernels").
SPLIT_PROGRAMS = 4096
SPLIT_MIN_CHUNK = 8192  # elements a program reduces at least: fewer, and launching costs more than reading
SPLIT_MAX_COUNT = 65535  # chunks per row: the launch grid's second dimension, as CUDA allows
# An outer reduction's program takes a column tile of up to OUTER_XBLOCK rows,
# so more rows than SPLIT_MAX_ROWS can still launch fewer programs than SMs:
# split it too when its rows fill fewer than this many column tiles, each of
# at least SPLIT_MIN_RNUMEL elements. Restormer's L2 norms of q and k over
# 128 x 128 pixels of an NHWC map (768 rows of 16384) ran 24 programs, 0.56 ms
# on an H200; NAFNet's channel-attention pool (the mean over 256 x 256 of an
# NHWC map, 16 x 32 rows) launched 16 programs: 0.59 ms, where Inductor's
# split takes 0.13.
SPLIT_MAX_PROGRAMS = 128
OUTER_XBLOCK = 32  # rows of an outer reduction's column tile (the heuristic's first config)


@dataclass(frozen=True)
class Config:
    """Block sizes, warps and stages. `rblock` is the second block: a
    reduction's or scan's RBLOCK, a tiled pointwise kernel's YBLOCK
    (`second` names it), None for a 1-D pointwise block."""

    xblock: int
    rblock: int | None
    num_warps: int
    num_stages: int = 1
    second: str = "RBLOCK"

    def kwargs(self) -> dict[str, int]:
        """Keyword arguments of the launch: block sizes, warps and stages."""
        blocks = (
            {"XBLOCK": self.xblock}
            if self.rblock is None
            else {"XBLOCK": self.xblock, self.second: self.rblock}
        )
        return {**blocks, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def meta(self) -> str:
        """The launch's keyword arguments as generated code spells them."""
        return ", ".join(f"{key}={value}" for key, value in self.kwargs().items())


@dataclass(frozen=True)
class Split:
    """A split reduction: each row in `count` chunks of `chunk` elements (a
    multiple of the first kernel's RBLOCK, so chunks never share a block);
    `combine` is the config of the second kernel, which reduces the `count`
    partials of XBLOCK rows at a time (RBLOCK >= count)."""

    count: int
    chunk: int
    combine: Config


@dataclass(frozen=True)
class LaunchConfig:
    """How `call` launches a kernel: cdiv(xnumel, XBLOCK) programs; reduction
    and scan kernels also take their inner extent `rnumel`, a tiled
    pointwise kernel its y extent (and cdiv(xnumel, XBLOCK) x
    cdiv(rnumel, YBLOCK) programs). `kind` is one of pointwise, tiled,
    persistent, looped, outer (a looped reduction whose loads are
    contiguous along the rows, not along the reduction), split (two kernels:
    cdiv(xnumel, XBLOCK) x `split.count` programs reduce a chunk each, then
    one combines each row's partials) and scan."""

    kind: str
    xnumel: int
    rnumel: int | None
    configs: tuple[Config, ...]
    split: Split | None = None

    def programs(self, config: Config) -> int:
        """The programs `config` launches (but a split's first kernel's):
        one per XBLOCK, and for a tiled kernel one per XBLOCK x YBLOCK tile."""
        programs = -(-self.xnumel // config.xblock)
        if self.kind == "tiled":
            programs *= -(-self.rnumel // config.rblock)
        return programs

    def grid(self, config: Config) -> str:
        """The launch grid as generated code spells it: a number, as every
        size is known here. `triton.cdiv` in the generated call went through
        Triton's JIT function call on every launch, host time a call of a
        CNN pays many times (measured: docs/design-notes.md, "Triton
        kernels")."""
        return f"({self.programs(config)},)"

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


def tiled(xnumel: int, ynumel: int) -> LaunchConfig:
    """A pointwise kernel on YBLOCK x XBLOCK tiles (triton_tiling.py): square
    tiles of up to 64 x 64, about 16 elements a thread; the alternatives
    trade the tile's shape and warps."""
    xblock, yblock = power_of_two(xnumel, 64), power_of_two(ynumel, 64)
    configs = [Config(xblock, yblock, _warps(xblock * yblock, per_thread=16, most=8), second="YBLOCK")]
    if xnumel * ynumel >= TILED_TUNED_MIN:
        for x, y, warps in ((32, 32, 4), (64, 64, 4), (64, 32, 4), (32, 64, 4), (64, 16, 2)):
            configs.append(Config(min(x, xblock), min(y, yblock), warps, second="YBLOCK"))
    return LaunchConfig("tiled", xnumel, ynumel, _distinct(configs))


def rows(xnumel: int, ynumel: int) -> LaunchConfig:
    """A pointwise kernel on rows (triton_tiling.py): XBLOCK along the
    contiguous row, the widest power of two (up to a 1-D block's) whose
    last block of a row leaves at most 1/8 of its lanes idle; YBLOCK rows
    fill a block of XBLOCK_MAX elements. The alternatives hold more rows."""
    xblock = power_of_two(xnumel, XBLOCK_MAX)
    while xblock > 1 and (-(-xnumel // xblock) * xblock - xnumel) * 8 > xnumel:
        xblock //= 2
    configs = []
    for tile, warps in ((XBLOCK_MAX, 4), (2048, 8), (4096, 8)):
        yblock = power_of_two(ynumel, max(1, tile // xblock))
        configs.append(
            Config(xblock, yblock, min(warps, _warps(xblock * yblock, per_thread=8)), second="YBLOCK")
        )
        if xnumel * ynumel < 2**22:
            break  # alternatives only for large streams, as pointwise's
    return LaunchConfig("tiled", xnumel, ynumel, _distinct(configs))


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
        # One row per program: long rows (cross-entropy's 32000 classes) ran
        # faster so (measured: docs/design-notes.md, "Triton kernels").
        configs += [Config(1, 4096, 16), Config(1, 4096, 8), Config(1, 1024, 8), Config(1, 1024, 4)]
    if xnumel >= 1024 and rnumel > PERSISTENT_MAX:
        # Rows past the persistent bound (vocabularies of 32000 to 50257):
        # programs of 16-32 warps, few an SM, keep the rows a multi-pass
        # kernel reads again in L2 (log-softmax over 50257 in f32: 0.79 ms
        # at 8192 elements and 32 warps against 0.98 at 4096 and 16, H100;
        # docs/design-notes.md, "Triton kernels").
        configs += [Config(1, 16384, 32), Config(1, 8192, 32), Config(1, 8192, 16)]
    return LaunchConfig("looped", xnumel, rnumel, _distinct(configs))


def outer(xnumel: int, rnumel: int) -> LaunchConfig:
    """A reduction along a strided dimension (a column sum): wide along the
    contiguous rows, a few reduced elements at a time."""
    xblock = power_of_two(xnumel, OUTER_XBLOCK)
    rblock = power_of_two(rnumel, max(1, TILE_MAX // OUTER_XBLOCK))
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
    if xnumel >= 1024 and rnumel >= 64:
        # Small tiles, many programs in flight, as Inductor's outer
        # reductions: a cosine similarity over the 256 channels of two bf16
        # maps ran 0.074 ms in 32x128 and in 64x256 (persistent) tiles,
        # Inductor's 64x8 0.053 (H100).
        configs += [Config(64, 8, 4), Config(128, 8, 4), Config(64, 16, 4)]
    return LaunchConfig("outer", xnumel, rnumel, _distinct(configs))


def splits(base: LaunchConfig) -> bool:
    """Whether a one-pass reduction launched as `base` (looped or outer) is
    worth splitting: few rows, each long; or an outer reduction's few column
    tiles, each long (scheduler/split.py's SplitRule says the same)."""
    if base.xnumel <= 0:
        return False
    if base.xnumel < SPLIT_MAX_ROWS and base.rnumel >= SPLIT_MIN_RNUMEL:
        return True
    width = _split_first(base).xblock
    return (
        base.kind == "outer"
        and base.xnumel < SPLIT_MAX_PROGRAMS * width
        and base.rnumel * width >= SPLIT_MIN_RNUMEL
    )


def split_count(base: LaunchConfig) -> int:
    """The heuristic's chunks per row of the looped or outer launch `base`:
    about SPLIT_PROGRAMS programs in all, each reducing at least
    SPLIT_MIN_CHUNK elements (an outer reduction's program: of all the rows
    of its column tile), no chunk left empty."""
    xnumel, rnumel, first = base.xnumel, base.rnumel, _split_first(base)
    rows = -(-xnumel // first.xblock)
    width = first.xblock if base.kind == "outer" else 1
    count = max(2, min(SPLIT_PROGRAMS // rows, rnumel * width // SPLIT_MIN_CHUNK))
    return -(-rnumel // _chunk(rnumel, count, first.rblock))


def split(base: LaunchConfig, count: int) -> LaunchConfig:
    """The looped or outer launch `base` split along the reduction into
    `count` chunks per row (the kernel's `split` attribute, which a person
    may edit: chunks past the row's end reduce nothing). It has one config:
    never timed."""
    xnumel, rnumel, first = base.xnumel, base.rnumel, _split_first(base)
    chunk = _chunk(rnumel, count, first.rblock)
    rblock = power_of_two(count, count)
    xblock = power_of_two(xnumel, max(1, TILE_MAX // rblock))
    combine = Config(xblock, rblock, _warps(xblock * rblock, per_thread=8, most=4))
    return LaunchConfig("split", xnumel, rnumel, (first,), Split(count, chunk, combine))


def _split_first(base: LaunchConfig) -> Config:
    """The config of a split's first kernel: the base's, but an outer
    reduction's, which has few rows: a column tile as wide as the rows, as
    long as the tile allows."""
    first = base.configs[0]
    if base.kind != "outer":
        return first
    rblock = power_of_two(base.rnumel, max(1, TILE_MAX // first.xblock))
    return Config(first.xblock, rblock, _warps(first.xblock * rblock, per_thread=16, most=8))


def _chunk(rnumel: int, count: int, rblock: int) -> int:
    """Elements of a row's chunk: a whole number of RBLOCKs, so that chunks never share a block."""
    chunk = -(-rnumel // count)
    return -(-chunk // rblock) * rblock


def scan(xnumel: int, rnumel: int) -> LaunchConfig:
    rblock = power_of_two(rnumel, 1024)
    xblock = power_of_two(xnumel, min(XBLOCK_MAX, max(1, TILE_MAX // rblock)))
    return LaunchConfig("scan", xnumel, rnumel, (Config(xblock, rblock, 4),))
