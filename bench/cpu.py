"""The CPU benchmark: eager PyTorch, Inductor (torch.compile) and tirc's C++
backend side by side in one process, on a fixed suite at CPU sizes.

    python bench/cpu.py [--write bench/RESULTS.md] [--only NAME,...] [--quick]

Per workload: the median time of each (interleaved rounds, see common.py),
tirc/Inductor and tirc/eager, how many of tirc's `omp simd` loops g++ reports
as vectorized (vectorization.py), and compile times, cold (empty caches: a fresh
TIRC_CACHE_DIR, Inductor under `fresh_cache()`; tirc's is the median of
COLD_RUNS compiles, each with a cache of its own, as one compile on this
2-core machine varies by tens of percent; Inductor's is its first compile,
as a later one may reuse what the first loaded into the process)
and warm (the same graph again with the cache filled). Both compilers first compile an unrelated
graph, so process start-up (Inductor's is about 30 s here) is reported
apart, not charged to the first row. Every tirc result is checked against
eager on the benchmark's random inputs.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import geomean, medians, table, write_section  # noqa: E402
from vectorization import cpp_source, report as vectorization_report  # noqa: E402

import tirc  # noqa: E402

ROWS, COLS = 2048, 2048


def chain(x, y):
    """Eleven elementwise ops."""
    h = x * 1.5 + y
    h = torch.relu(h) - 0.25
    h = torch.abs(h) * y
    h = torch.sqrt(torch.abs(h) + 1.0)
    return torch.tanh(h - x)


def gelu_bias(x, b):
    return F.gelu(x + b)


def swiglu(a, b):
    return F.silu(a) * b


def softmax(x):
    return torch.softmax(x, -1)


def log_softmax(x):
    return torch.log_softmax(x, -1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def add_layer_norm(x, r, w, b):
    h = x + r
    return h, F.layer_norm(h, (h.shape[-1],), w, b)


def row_sum(x):
    return x.sum(-1)


def column_sum(x):
    return x.sum(0)


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


class MLP(torch.nn.Module):
    def __init__(self, d=512, hidden=2048):
        super().__init__()
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class Block(torch.nn.Module):
    """A pre-norm transformer block: attention written out, then an MLP."""

    def __init__(self, d=256, heads=4):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.norm2 = torch.nn.LayerNorm(d)
        self.mlp = MLP(d, 4 * d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.mlp(self.norm2(x))


def _randn(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def suite():
    """(name, shape text, program, inputs builder): the fixed suite."""
    r, c = ROWS, COLS
    return [
        ("elementwise chain", f"{r}x{c}", chain, lambda: [_randn(r, c), _randn(r, c)]),
        ("gelu(x + b)", f"{r}x{c}", gelu_bias, lambda: [_randn(r, c), _randn(c)]),
        ("swiglu", f"{r}x{c}", swiglu, lambda: [_randn(r, c), _randn(r, c)]),
        ("softmax", f"{r}x{c}", softmax, lambda: [_randn(r, c)]),
        ("softmax bf16", f"{r}x{c}", softmax, lambda: [_randn(r, c, dtype=torch.bfloat16)]),
        ("log_softmax", f"{r}x{c}", log_softmax, lambda: [_randn(r, c)]),
        ("layer norm", f"{r}x1024", layer_norm, lambda: [_randn(r, 1024), _randn(1024), _randn(1024)]),
        ("rms norm", f"{r}x1024", rms_norm, lambda: [_randn(r, 1024), _randn(1024)]),
        (
            "add + layer norm",
            f"{r}x1024",
            add_layer_norm,
            lambda: [_randn(r, 1024), _randn(r, 1024), _randn(1024), _randn(1024)],
        ),
        ("row sum", f"{r}x{c}", row_sum, lambda: [_randn(r, c)]),
        ("column sum", f"{r}x{c}", column_sum, lambda: [_randn(r, c)]),
        (
            "cross-entropy",
            "1024x8192",
            cross_entropy,
            lambda: [_randn(1024, 8192), torch.randint(0, 8192, (1024,))],
        ),
        ("mlp block", "256x512, 2048", MLP().eval(), lambda: [_randn(256, 512)]),
        ("transformer block", "4x128x256", Block().eval(), lambda: [_randn(4, 128, 256)]),
    ]


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _tirc_compile(program, inputs, cache: str):
    os.environ["TIRC_CACHE_DIR"] = cache
    compiled = tirc.compile(program, inputs)
    compiled(*inputs)
    return compiled


def _inductor_compile(program, inputs):
    torch._dynamo.reset()
    compiled = torch.compile(program)
    compiled(*inputs)
    return compiled


def _check(name: str, got, want) -> str:
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    try:
        for g, w in zip(got, want, strict=True):
            tol = 2e-2 if w.dtype in (torch.bfloat16, torch.float16) else 1e-4
            torch.testing.assert_close(g, w, rtol=tol, atol=tol, equal_nan=True)
    except (AssertionError, ValueError) as err:
        return f"{name}: MISMATCH {str(err).splitlines()[0]}"
    return ""


# tirc's cold compiles per workload; their median is reported. With 3, two
# slow compiles of 3 (other load on the 2 cores) put a median at 1.5-2x the
# usual twice in 12 runs (the mlp block 0.30 s against 0.15-0.18).
COLD_RUNS = 5
LOAD_WARNING = 0.5  # a load average above this makes OpenMP timings meaningless


def _cold(compile_once) -> float:
    """Median seconds of COLD_RUNS compiles, `compile_once(k)` each with empty caches
    (tirc keeps nothing of a compile in memory that a later one could reuse)."""
    return statistics.median([_timed(functools.partial(compile_once, k)) for k in range(COLD_RUNS)])


def _measure(workload, cache: str) -> dict:
    """Compile times (cold, then warm), correctness, vectorization and the
    median times of one workload; Inductor's cold compile runs inside the
    caller's `fresh_cache()`."""
    name, _, program, make_inputs = workload
    inputs = make_inputs()
    want = program(*inputs)
    out: dict = {"tirc_cold": _cold(lambda k: _tirc_compile(program, inputs, f"{cache}-{k}"))}
    start = time.perf_counter()
    ours = _tirc_compile(program, inputs, f"{cache}-0")
    out["tirc_warm"] = time.perf_counter() - start
    # Inductor's first compile only: a later one under a fresh on-disk cache
    # may still reuse what the first loaded into this process (compiled
    # modules stay loaded), so it would not be cold.
    out["inductor_cold"] = _timed(lambda: _inductor_compile(program, inputs))
    start = time.perf_counter()
    theirs = _inductor_compile(program, inputs)
    out["inductor_warm"] = time.perf_counter() - start
    out["problem"] = _check(name, ours(*inputs), want)
    out["vectorization"] = vectorization_report(cpp_source(ours.code))
    out["times"] = medians(
        {
            "eager": lambda: program(*inputs),
            "inductor": lambda: theirs(*inputs),
            "tirc": lambda: ours(*inputs),
        }
    )
    return out


def _row(workload, m: dict) -> list[str]:
    times, vec = m["times"], m["vectorization"]
    slower = times["tirc"] > times["eager"]
    cold = m["inductor_cold"] / m["tirc_cold"]
    return [
        workload[0],
        workload[1],
        f"{times['eager'] * 1e3:.3f}",
        f"{times['inductor'] * 1e3:.3f}",
        f"{times['tirc'] * 1e3:.3f}",
        f"{times['tirc'] / times['inductor']:.2f}",
        f"{times['tirc'] / times['eager']:.2f}" + (" (slower)" if slower else ""),
        f"{m['inductor_cold']:.2f} / {m['tirc_cold']:.2f} ({cold:.1f}x)",
        f"{m['inductor_warm']:.2f} / {m['tirc_warm']:.2f}",
        f"{vec.vectorized}/{vec.loops}",
    ]


def run(selected, scratch: str) -> tuple[list[list[str]], list[str], dict]:
    from torch._inductor.utils import fresh_cache

    load = os.getloadavg()[0]
    if load > LOAD_WARNING:
        print(f"warning: load average {load:.2f}: other processes will skew every time", file=sys.stderr)
    warm_up = [torch.randn(64, 64)]
    startup = {
        "tirc": _timed(lambda: _tirc_compile(lambda x: x * 2 + 1, warm_up, f"{scratch}/warm")),
        "inductor": _timed(lambda: _inductor_compile(lambda x: x * 2 + 1, warm_up)),
    }
    rows, problems, missed_loops = [], [], []
    ratios, cold_ratios, warm_times = [], [], []
    for k, workload in enumerate(selected):
        torch.manual_seed(k)
        with torch.no_grad(), fresh_cache():
            m = _measure(workload, f"{scratch}/tirc-{k}")
        if m["problem"]:
            problems.append(m["problem"])
        missed_loops += [f"{workload[0]}: {loop}" for loop in m["vectorization"].missed]
        times = m["times"]
        ratios.append(times["tirc"] / times["inductor"])
        cold_ratios.append(m["inductor_cold"] / m["tirc_cold"])
        warm_times.append(m["tirc_warm"])
        rows.append(_row(workload, m))
        print(" | ".join(rows[-1]), flush=True)
    summary = {
        "geomean": geomean(ratios),
        "slower_than_eager": [r[0] for r in rows if "slower" in r[6]],
        "min_cold_speedup": min(cold_ratios),
        "max_warm": max(warm_times),
        "startup": startup,
        "load": load,
        "missed_loops": missed_loops,
    }
    return rows, problems, summary


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()
    return (
        f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"{cxx[0] if cxx else 'no g++'}, Python {platform.python_version()}"
    )


def report(rows, problems, summary) -> str:
    header = [
        "workload",
        "shape",
        "eager ms",
        "inductor ms",
        "tirc ms",
        "tirc/inductor",
        "tirc/eager",
        "cold compile s: inductor / tirc",
        "warm compile s: inductor / tirc",
        "simd loops vectorized",
    ]
    verdict = [
        f"- geometric mean tirc/inductor: {summary['geomean']:.3f} (criterion: at most 1.0)",
        f"- slower than eager: {', '.join(summary['slower_than_eager']) or 'none'}",
        f"- smallest cold-compile speed-up over Inductor: {summary['min_cold_speedup']:.1f}x (criterion: at least 5x)",
        f"- slowest warm tirc compile: {summary['max_warm']:.3f} s (criterion: under 0.3 s)",
        f"- load average at the start: {summary['load']:.2f} (timings are only meaningful below {LOAD_WARNING})",
        f"- process start-up (first graph, not in the table): inductor {summary['startup']['inductor']:.1f} s, "
        f"tirc {summary['startup']['tirc']:.1f} s",
        f"- correctness against eager: {'; '.join(problems) or 'all match'}",
        "- simd loops g++ did not vectorize (its -fopt-info-vec report): "
        + ("; ".join(summary["missed_loops"]) or "none"),
    ]
    return "\n".join(
        [
            "## CPU: eager vs Inductor vs tirc (C++ backend)",
            "",
            f"Machine: {machine()}.",
            "Times are medians of interleaved runs (bench/common.py); compile times include the first call.",
            "",
            table(header, rows),
            "",
            *verdict,
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="put the report into this markdown file (its CPU section)")
    parser.add_argument("--only", help="comma-separated workload names")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    selected = suite()
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        selected = [w for w in selected if w[0] in wanted]
        if not selected:
            parser.error(f"no workload named {args.only!r}")
    with tempfile.TemporaryDirectory(prefix="tirc-bench-") as scratch:
        rows, problems, summary = run(selected, scratch)
    text = report(rows, problems, summary)
    print()
    print(text)
    if args.write:
        write_section(args.write, "cpu", text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
