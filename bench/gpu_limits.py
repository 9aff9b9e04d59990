"""What simple hand-written Triton kernels reach at the GPU benchmark's sizes:
the practical ceiling for tirc's layer norm and cross-entropy rows.

    python bench/gpu_limits.py [--write bench/RESULTS.md]

Times are medians of triton.testing.do_bench (L2 cleared before each run),
as bench/gpu.py takes them, and "% of copy" is over the same 1 GiB
device-to-device copy. Rows:

- a copy of the layer norm's bytes (bf16 8192x4096 read and written) by
  torch, and by a Triton kernel that copies one row a program: the most a
  one-row-a-program norm could reach;
- layer norm by hand, one row a program, two reductions (as tirc's);
- a row copy and the layer norm on a persistent grid (a few programs per
  multiprocessor looping over rows, the next rows' loads pipelined);
- a read of cross-entropy's float32 4096x32000 logits (a row sum), by eager
  and by a looped Triton kernel: the most a one-pass kernel could reach;
- cross-entropy's per-row loss by hand (online softmax, as tirc's looped
  kernel), without the mean over rows that tirc runs as a second kernel;
- tirc's layer norm and cross-entropy (mean), compiled as bench/gpu.py does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tirc  # noqa: E402
from common import table, write_section  # noqa: E402
from gpu import copy_bandwidth  # noqa: E402


@triton.jit
def _row_copy(X, Y, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(Y + offsets, tl.load(X + offsets))


@triton.jit
def _layer_norm(X, W, B, Y, N: tl.constexpr):
    cols = tl.arange(0, N)
    x = tl.load(X + tl.program_id(0) * N + cols).to(tl.float32)
    mean = tl.sum(x, 0) / N
    centered = x - mean
    rstd = tl.rsqrt(tl.sum(centered * centered, 0) / N + 1e-5)
    w = tl.load(W + cols).to(tl.float32)
    b = tl.load(B + cols).to(tl.float32)
    tl.store(Y + tl.program_id(0) * N + cols, (centered * rstd * w + b).to(tl.bfloat16))


@triton.jit
def _row_copy_persistent(X, Y, rows, N: tl.constexpr, STAGES: tl.constexpr):
    """A row copy on a grid of a few programs per multiprocessor, each
    looping over its rows with the next rows' loads in flight (STAGES)."""
    cols = tl.arange(0, N)
    for row in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
        tl.store(Y + row * N + cols, tl.load(X + row * N + cols))


@triton.jit
def _layer_norm_persistent(X, W, B, Y, rows, N: tl.constexpr, STAGES: tl.constexpr):
    cols = tl.arange(0, N)
    w = tl.load(W + cols).to(tl.float32)
    b = tl.load(B + cols).to(tl.float32)
    for row in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
        x = tl.load(X + row * N + cols).to(tl.float32)
        mean = tl.sum(x, 0) / N
        centered = x - mean
        rstd = tl.rsqrt(tl.sum(centered * centered, 0) / N + 1e-5)
        tl.store(Y + row * N + cols, (centered * rstd * w + b).to(tl.bfloat16))


@triton.jit
def _row_sum(X, OUT, n, BLOCK: tl.constexpr):
    row = X + tl.program_id(0) * n
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(row + cols, cols < n, other=0, eviction_policy="evict_first")
    tl.store(OUT + tl.program_id(0), tl.sum(acc, 0))


@triton.jit
def _cross_entropy_rows(X, T, OUT, n, BLOCK: tl.constexpr):
    """Online logsumexp: one exp an element, each lane its own max and sum."""
    row = X + tl.program_id(0) * n
    peak = tl.full([BLOCK], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(row + cols, mask, other=float("-inf"), eviction_policy="evict_first")
        e = tl.exp(-tl.abs(x - peak))
        grown = tl.where(x > peak, total * e + 1.0, total + e)
        total = tl.where(mask & (tl.maximum(peak, x) != float("-inf")), grown, total)
        peak = tl.maximum(peak, x)
    top = tl.max(peak, 0)
    lse = tl.log(tl.sum(total * tl.exp(peak - top), 0)) + top
    target = tl.load(T + tl.program_id(0))
    tl.store(OUT + tl.program_id(0), lse - tl.load(row + target))


def _bench(fn) -> float:
    from triton.testing import do_bench

    return do_bench(fn, warmup=50, rep=200, return_mode="median")


def _check(got, want, what: str) -> None:
    error = ((got.float() - want.float()).norm() / want.float().norm()).item()
    if error > 1e-2:
        raise SystemExit(f"gpu_limits: {what} differs from eager (relative error {error:.1e})")


def _norm_rows(copy_bw: float) -> list[list[str]]:
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    w, b = (torch.randn(4096, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    y = torch.empty_like(x)
    moved = 2 * x.numel() * x.element_size()
    want = F.layer_norm(x, (4096,), w, b)
    rows = [("torch copy", lambda: y.copy_(x))]
    rows += [
        (f"Triton row copy, {k} warps", _launch(_row_copy, 8192, (x, y), dict(N=4096, num_warps=k)))
        for k in (4, 8, 16)
    ]
    for warps in (4, 8):
        norm = _launch(_layer_norm, 8192, (x, w, b, y), dict(N=4096, num_warps=warps))
        norm()
        _check(y, want, "hand-written layer norm")
        rows.append((f"layer norm by hand, {warps} warps", norm))
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    for per_sm, warps, stages in ((2, 8, 2), (4, 4, 2), (4, 8, 3), (8, 4, 3)):
        shape = f"{per_sm} a multiprocessor, {warps} warps, {stages} stages"
        meta = dict(N=4096, STAGES=stages, num_warps=warps)
        rows.append(
            (f"persistent row copy, {shape}", _launch(_row_copy_persistent, per_sm * sms, (x, y, 8192), meta))
        )
        norm = _launch(_layer_norm_persistent, per_sm * sms, (x, w, b, y, 8192), meta)
        norm()
        _check(y, want, "persistent layer norm")
        rows.append((f"persistent layer norm, {shape}", norm))
    program = tirc.compile(
        lambda a, c, d: F.layer_norm(a, (4096,), c, d), [x, w, b], backend="triton", device="cuda"
    )
    _check(program(x, w, b), want, "tirc's layer norm")
    rows.append(("tirc layer norm", lambda: program(x, w, b)))
    return [_row("bf16 8192x4096", name, fn, moved, copy_bw) for name, fn in rows]


def _cross_entropy_rows_table(copy_bw: float) -> list[list[str]]:
    x = torch.randn(4096, 32000, device="cuda")
    t = torch.randint(0, 32000, (4096,), device="cuda")
    out = torch.empty(4096, device="cuda")
    moved = x.numel() * x.element_size()
    rows = [("eager row sum", lambda: x.sum(1))]
    rows += [
        (
            f"Triton row sum, BLOCK {n}, {k} warps",
            _launch(_row_sum, 4096, (x, out, 32000), dict(BLOCK=n, num_warps=k)),
        )
        for n, k in ((1024, 8), (4096, 16))
    ]
    want = F.cross_entropy(x, t, reduction="none")
    for block, warps in ((1024, 4), (1024, 8), (2048, 8)):
        rows_ce = _launch(_cross_entropy_rows, 4096, (x, t, out, 32000), dict(BLOCK=block, num_warps=warps))
        rows_ce()
        _check(out, want, "hand-written cross-entropy")
        rows.append((f"cross-entropy rows by hand, BLOCK {block}, {warps} warps", rows_ce))
    torch._dynamo.reset()
    program = tirc.compile(lambda a, c: F.cross_entropy(a, c), [x, t], backend="triton", device="cuda")
    _check(program(x, t), F.cross_entropy(x, t), "tirc's cross-entropy")
    rows.append(("tirc cross-entropy (mean: two kernels)", lambda: program(x, t)))
    return [_row("fp32 4096x32000", name, fn, moved, copy_bw) for name, fn in rows]


def _launch(kernel, programs: int, args, meta: dict):
    return lambda: kernel[(programs,)](*args, **meta)


def _row(shape: str, name: str, fn, moved: int, copy_bw: float) -> list[str]:
    ms = _bench(fn)
    return [shape, name, f"{ms * 1e3:.1f}", f"{moved / (ms * 1e-3) / copy_bw * 100:.1f}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="markdown file whose `gpu-limits` section gets the table")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU")
    copy_bw = copy_bandwidth("cuda", _bench, False)
    rows = _norm_rows(copy_bw) + _cross_entropy_rows_table(copy_bw)
    lines = [
        f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; triton {triton.__version__}",
        f"Device-to-device copy: {copy_bw / 1e12:.2f} TB/s (bytes read + written)",
        "",
        table(["shape", "kernel", "us", "% of copy"], rows),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write is not None:
        heading = "## GPU: what simple kernels reach at the benchmark's sizes (bench/gpu_limits.py)\n\n"
        write_section(args.write, "gpu-limits", heading + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
