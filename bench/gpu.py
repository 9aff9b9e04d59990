"""The GPU benchmark: eager PyTorch, Inductor (torch.compile, default mode) and
tirc's Triton backend on one NVIDIA GPU, in one run.

    python bench/gpu.py [--write bench/RESULTS.md] [--only softmax,layer_norm] [--small]
                        [--suite issue|layouts|train]

Measures a device-to-device copy first (bytes read plus bytes written over
time), then per workload the median time of each implementation
(triton.testing.do_bench, which clears the L2 cache before every run), the
ratio tirc / Inductor, and tirc's bytes moved over time as a fraction of the
copy's. "Bytes moved" is the least any implementation must move: each input
read once, each output written once. A last column compares tirc with a
copy of the same number of bytes (the practical limit at that size: a copy
of 134 MB reaches only 85-87% of the 1 GiB copy's rate on an H200). Every implementation is compiled on one
set of random inputs and checked and timed on a fresh set; a result further
from eager than the dtype allows marks the row FAIL. Prints the table and
writes it, with the GPU name and the torch and triton versions, as markdown.

`--suite layouts` runs transposes and permutes instead of the issue's suite
(tiled pointwise kernels, codegen/triton_tiling.py) into the section
`gpu-layouts`, with no pass/fail bars.

`--suite train` runs bench/train.py on the GPU: one training step (forward,
loss, backward) of eager, Inductor and tirc per model, with peak memory.

`--small` runs tiny shapes (and, with no GPU, tirc through the Triton
interpreter, with no Inductor) as a smoke test of the script itself.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tirc  # noqa: E402
from common import write_section  # noqa: E402

# ||out - eager|| / ||eager|| allowed per output dtype: bf16 rounding of the
# output alone gives about 2e-3; float32 differs only in summation order.
REL_TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-4}


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable
    make: Callable  # (device, small) -> inputs
    memory_bound: bool = True
    note: str = ""


def _randn(shape, dtype, device, scale=1.0):
    return torch.randn(shape, dtype=torch.float32, device=device).mul_(scale).to(dtype)


def softmax(x):
    return torch.softmax(x, -1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rms_norm(x, w):
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + 1e-6)).to(x.dtype) * w


def gelu_bias(x, b):
    return F.gelu(x + b, approximate="tanh")


def swiglu(a, b):
    return F.silu(a) * b


def cross_entropy(x, t):
    return F.cross_entropy(x, t)


def add_layer_norm(x, r, w, b):
    h = x + r
    return h, F.layer_norm(h, (h.shape[-1],), w, b)


def column_sum(x):
    return x.sum(0)


def elementwise_chain(x):
    # Ten elementwise ops.
    y = x * 1.5
    y = torch.sigmoid(y) * x
    y = y - x * 0.5
    y = torch.abs(y) + 1.0
    y = torch.sqrt(y) * torch.tanh(x)
    return y


def attention_softmax(s, mask):
    return torch.softmax(s * 0.125 + mask, -1)


def mlp(x, w1, b1, w2):
    return F.gelu(x @ w1 + b1, approximate="tanh") @ w2


def _sizes(small: bool, big, tiny):
    return tiny if small else big


def _workloads() -> list[Workload]:
    bf16, f32 = torch.bfloat16, torch.float32

    def rows_cols(big, tiny, dtype, extra=()):
        def make(device, small):
            n, c = _sizes(small, big, tiny)
            inputs = [_randn((n, c), dtype, device)]
            return inputs + [maker(n, c, device) for maker in extra]

        return make

    def vec(dtype):
        return lambda n, c, device: _randn((c,), dtype, device)

    def same(dtype):
        return lambda n, c, device: _randn((n, c), dtype, device)

    def targets(n, c, device):
        return torch.randint(0, c, (n,), device=device)

    def chain_input(device, small):
        return [_randn((_sizes(small, 64 * 2**20, 1000),), f32, device)]

    def attention_inputs(device, small):
        b, h, s = _sizes(small, (32, 16, 1024), (2, 3, 129))
        return [_randn((b, h, s, s), bf16, device), _randn((1, 1, s, s), bf16, device)]

    def mlp_inputs(device, small):
        n = _sizes(small, 4096, 64)
        scale = n**-0.5
        return [
            _randn((n, n), bf16, device),
            _randn((n, n), bf16, device, scale),
            _randn((n,), bf16, device),
            _randn((n, n), bf16, device, scale),
        ]

    return [
        Workload("softmax", softmax, rows_cols((8192, 8192), (37, 1000), bf16), note="bf16 8192x8192"),
        Workload(
            "layer_norm",
            layer_norm,
            rows_cols((8192, 4096), (37, 1000), bf16, (vec(bf16), vec(bf16))),
            note="bf16 8192x4096, weight and bias",
        ),
        Workload(
            "rms_norm",
            rms_norm,
            rows_cols((8192, 4096), (37, 1000), bf16, (vec(bf16),)),
            note="bf16 8192x4096",
        ),
        Workload(
            "gelu_bias",
            gelu_bias,
            rows_cols((8192, 8192), (37, 1000), bf16, (vec(bf16),)),
            note="bf16 8192x8192, tanh",
        ),
        Workload(
            "swiglu", swiglu, rows_cols((8192, 8192), (37, 1000), bf16, (same(bf16),)), note="bf16 8192x8192"
        ),
        Workload(
            "cross_entropy",
            cross_entropy,
            rows_cols((4096, 32000), (37, 1000), f32, (targets,)),
            note="fp32 4096x32000, mean",
        ),
        Workload(
            "add_layer_norm",
            add_layer_norm,
            rows_cols((8192, 4096), (37, 1000), bf16, (same(bf16), vec(bf16), vec(bf16))),
            note="bf16 8192x4096, both outputs",
        ),
        Workload("column_sum", column_sum, rows_cols((8192, 8192), (1000, 37), f32), note="fp32 8192x8192"),
        Workload("elementwise_chain", elementwise_chain, chain_input, note="fp32 64M elements, 10 ops"),
        Workload("attention_softmax", attention_softmax, attention_inputs, note="bf16 32x16x1024x1024"),
        Workload("mlp", mlp, mlp_inputs, memory_bound=False, note="bf16 4096, matmuls extern"),
    ]


def transpose(x):
    return x.t().contiguous()


def add_transposed(x, y):
    return x + y.t()


def to_channels_last(x):
    return x.permute(0, 2, 3, 1).contiguous()


def from_channels_last_bias_relu(x, b):
    return torch.relu(x.permute(0, 3, 1, 2) + b[:, None, None])


def split_heads(x):
    # Contiguous along the head dimension on both sides: a 1-D block.
    return x.transpose(1, 2).contiguous()


def _layout_workloads() -> list[Workload]:
    bf16, f32 = torch.bfloat16, torch.float32

    def tensors(*specs):
        def make(device, small):
            return [_randn(_sizes(small, big, tiny), dtype, device) for big, tiny, dtype in specs]

        return make

    square = ((8192, 8192), (37, 129))
    return [
        Workload("transpose", transpose, tensors((*square, f32)), note="fp32 8192x8192"),
        Workload(
            "add_transposed",
            add_transposed,
            tensors((*square, bf16), ((8192, 8192), (129, 37), bf16)),
            note="bf16 8192x8192",
        ),
        Workload(
            "to_channels_last",
            to_channels_last,
            tensors(((64, 256, 56, 56), (2, 19, 17, 33), bf16)),
            note="bf16 64x256x56x56",
        ),
        Workload(
            "from_channels_last",
            from_channels_last_bias_relu,
            tensors(((32, 56, 56, 256), (2, 17, 33, 19), f32), ((256,), (19,), f32)),
            note="fp32 32x56x56x256, + bias, relu",
        ),
        Workload(
            "split_heads",
            split_heads,
            tensors(((32, 2048, 16, 64), (2, 37, 3, 64), bf16)),
            note="bf16 32x2048x16x64",
        ),
    ]


SUITES = {
    "issue": (_workloads, "gpu", "## GPU (Triton backend)"),
    "layouts": (
        _layout_workloads,
        "gpu-layouts",
        "## GPU: transposes and permutes (`bench/gpu.py --suite layouts`)",
    ),
}


def _flat(result) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for r in result for t in _flat(r)]


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _rel_error(got, want) -> float:
    """||got - want|| / ||want|| over every output (inf on NaN or a shape change)."""
    worst = 0.0
    for g, w in zip(_flat(got), _flat(want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return math.inf
        g, w = g.double(), w.double()
        if not torch.equal(g.isnan(), w.isnan()):
            return math.inf
        g, w = g.nan_to_num(), w.nan_to_num()
        err = (g - w).norm().item() / max(w.norm().item(), 1e-30)
        worst = max(worst, err)
    return worst


def _tolerance(result) -> float:
    return max(REL_TOL.get(t.dtype, 0.0) for t in _flat(result))


def _timer(device: str):
    """Median milliseconds of fn(): do_bench on a GPU, a wall clock otherwise."""
    if device == "cuda":
        from triton.testing import do_bench

        return lambda fn: do_bench(fn, warmup=50, rep=200, return_mode="median")

    def wall(fn):
        fn()
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    return wall


def copy_bandwidth(device: str, timer, small: bool) -> float:
    """Bytes per second of a device-to-device copy (bytes read plus written)."""
    n = 2**20 if small else 2**28  # 1 GiB of float32
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / (ms * 1e-3)


@dataclass
class Row:
    name: str
    note: str
    memory_bound: bool
    bytes: int
    eager_ms: float
    inductor_ms: float | None
    tirc_ms: float | None
    error: float | None
    status: str
    copy_ms: float | None = None  # a copy of the same bytes (half read, half written)


def run_workload(w: Workload, device: str, small: bool, timer, inductor: bool) -> Row:
    torch.manual_seed(0)
    example = w.make(device, small)
    torch.manual_seed(1)
    fresh = w.make(device, small)
    want = w.fn(*fresh)
    moved = _nbytes(fresh) + _nbytes(_flat(want))
    eager_ms = timer(lambda: w.fn(*fresh))
    status = "ok"
    inductor_ms = None
    if inductor:
        torch._dynamo.reset()
        compiled = torch.compile(w.fn)
        compiled(*example)
        if _rel_error(compiled(*fresh), want) > _tolerance(want):
            status = "inductor mismatch"
        inductor_ms = timer(lambda: compiled(*fresh))
    tirc_ms = error = None
    try:
        program = tirc.compile(w.fn, example, backend="triton", device=device)
        got = program(*fresh)
        error = _rel_error(got, want)
        if error > _tolerance(want):
            status = "FAIL"
        tirc_ms = timer(lambda: program(*fresh))
    except Exception as err:  # one row per workload, whatever breaks
        status = f"FAIL {type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}"
    copy_ms = same_size_copy(moved, device, timer) if w.memory_bound else None
    return Row(w.name, w.note, w.memory_bound, moved, eager_ms, inductor_ms, tirc_ms, error, status, copy_ms)


def same_size_copy(moved: int, device: str, timer) -> float:
    """Milliseconds of a device-to-device copy moving as many bytes as a
    workload must: a copy this small pays the launch and the ramp up and
    down that a 1 GiB one hides, so it is the workload's practical limit."""
    src = torch.empty(max(moved // 2, 1), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return timer(lambda: dst.copy_(src))


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def table(rows: list[Row], copy_bw: float, bars: bool = True) -> list[str]:
    lines = [
        "| workload | shape | eager ms | Inductor ms | tirc ms | tirc / Inductor | tirc % of copy "
        "| Inductor % of copy | tirc % of same-size copy | rel. error | status |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        ratio = r.tirc_ms / r.inductor_ms if r.tirc_ms and r.inductor_ms else None

        def fraction(ms, r=r):
            return 100 * r.bytes / (ms * 1e-3) / copy_bw if ms and r.memory_bound else None

        lines.append(
            f"| {r.name} | {r.note} | {_cell(r.eager_ms, '.4f')} | {_cell(r.inductor_ms, '.4f')} "
            f"| {_cell(r.tirc_ms, '.4f')} | {_cell(ratio, '.3f')} | {_cell(fraction(r.tirc_ms), '.1f')} "
            f"| {_cell(fraction(r.inductor_ms), '.1f')} "
            f"| {_cell(100 * r.copy_ms / r.tirc_ms if r.copy_ms and r.tirc_ms else None, '.0f')} "
            f"| {_cell(r.error, '.1e')} | {r.status} |"
        )
    ratios = [r.tirc_ms / r.inductor_ms for r in rows if r.tirc_ms and r.inductor_ms]
    if ratios:
        geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        criterion = " (criterion: at most 0.9)" if bars else ""
        lines += [
            "",
            f"- geometric mean of tirc / Inductor over {len(ratios)} workloads: {geomean:.3f}{criterion}",
        ]
    if not bars:
        mismatches = ", ".join(r.name for r in rows if r.status != "ok") or "none"
        return lines + [f"- results off eager beyond the dtype's tolerance: {mismatches}"]
    return lines + _criteria(rows, copy_bw)


def _criteria(rows: list[Row], copy_bw: float) -> list[str]:
    """The issue's other bars, from the unrounded figures."""
    bound = [r for r in rows if r.memory_bound and r.tirc_ms]
    low = [
        f"{r.name} {100 * r.bytes / (r.tirc_ms * 1e-3) / copy_bw:.1f}%"
        for r in bound
        if 100 * r.bytes / (r.tirc_ms * 1e-3) / copy_bw < COPY_FRACTION
    ]
    slower = [
        f"{r.name} {r.tirc_ms / r.inductor_ms:.3f}"
        for r in bound
        if r.inductor_ms and r.tirc_ms > r.inductor_ms
    ]
    speedups = [
        f"{r.name} {r.inductor_ms / r.tirc_ms:.2f}x"
        for r in rows
        if r.name in FASTER_THAN_INDUCTOR and r.tirc_ms and r.inductor_ms
    ]
    return [
        f"- memory-bound workloads below {COPY_FRACTION}% of the copy: {', '.join(low) or 'none'}",
        f"- memory-bound workloads slower than Inductor (tirc / Inductor): {', '.join(slower) or 'none'}",
        f"- speed-up over Inductor (criterion: at least 1.3x): {', '.join(speedups) or '-'}",
        f"- results off eager beyond the dtype's tolerance: {', '.join(r.name for r in rows if r.status != 'ok') or 'none'}",
    ]


# The issue's bars: tirc's share of the copy's rate on each memory-bound
# workload, and the workloads that must beat Inductor by 1.3x.
COPY_FRACTION = 85
FASTER_THAN_INDUCTOR = ("softmax", "cross_entropy")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="markdown file whose `gpu` section gets the table")
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--small", action="store_true", help="tiny shapes: a smoke test of the script")
    parser.add_argument(
        "--suite",
        choices=sorted([*SUITES, "train"]),
        default="issue",
        help="the workloads (default: issue; train: bench/train.py's training steps)",
    )
    args, rest = parser.parse_known_args(argv)
    if args.suite == "train":
        # One training step per model: bench/train.py, on the GPU.
        import train

        forwarded = ["--device", "cuda", *rest] + (["--write", str(args.write)] if args.write else [])
        forwarded += ["--only", args.only] if args.only else []
        return train.main(forwarded + (["--small"] if args.small else []))
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.small:
        parser.error("no CUDA GPU: only --small runs without one")
    import triton

    make_workloads, section, title = SUITES[args.suite]
    workloads = make_workloads()
    if args.only:
        wanted = set(args.only.split(","))
        workloads = [w for w in workloads if w.name in wanted]
    timer = _timer(device)
    copy_bw = copy_bandwidth(device, timer, args.small)
    gpu = torch.cuda.get_device_name() if device == "cuda" else "cpu (Triton interpreter)"
    header = [
        f"GPU: {gpu}; torch {torch.__version__}; triton {triton.__version__}",
        f"Device-to-device copy: {copy_bw / 1e12:.2f} TB/s (bytes read + written)",
        "",
    ]
    print("\n".join(header), flush=True)
    rows = []
    for w in workloads:
        row = run_workload(w, device, args.small, timer, inductor=device == "cuda")
        print(f"{row.name}: tirc {_cell(row.tirc_ms, '.3f')} ms, {row.status}", flush=True)
        rows.append(row)
    lines = header + table(rows, copy_bw, bars=args.suite == "issue")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write is not None:
        write_section(args.write, section, f"{title}\n\n" + text)
    return 0 if all(r.status == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
