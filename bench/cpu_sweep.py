"""Row ops across shapes and dtypes on the C++ backend, against eager: where
tirc is slower off the fixed suite of bench/cpu.py.

    python bench/cpu_sweep.py [--ops layer_norm,softmax,...] [--budget 0.6]

Per op, dtype (float32, bfloat16) and shape (short rows to a few long ones,
and an odd 1000x1000): the medians of eager's and tirc's times in
interleaved rounds (common.py) and their ratio, marked when tirc is more
than 3% slower. Prints only; run on an otherwise idle machine (minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import medians  # noqa: E402

import tirc  # noqa: E402

# name: (program, number of inputs: the rows, then vectors of the row's length)
OPS = {
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b), 3),
    "softmax": (lambda x: torch.softmax(x, -1), 1),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), 1),
    "rms_norm": (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, 2),
    "sum": (lambda x: x.sum(-1), 1),
    "var": (lambda x: x.var(-1), 1),
    "gelu": (lambda x: F.gelu(x), 1),
}
SHAPES = [(8192, 256), (2048, 1024), (1000, 1000), (512, 4096), (256, 8192), (64, 32768), (8, 262144)]
DTYPES = [torch.float32, torch.bfloat16]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated: " + ", ".join(OPS))
    parser.add_argument("--budget", type=float, default=0.6, help="seconds of rounds per row")
    args = parser.parse_args(argv)
    names = args.ops.split(",")
    unknown = [n for n in names if n not in OPS]
    if unknown:
        parser.error(f"unknown op(s): {', '.join(unknown)}")
    os.environ.setdefault("TIRC_CACHE_DIR", tempfile.mkdtemp(prefix="tirc-sweep-"))
    for name in names:
        fn, count = OPS[name]
        for dtype in DTYPES:
            for rows, cols in SHAPES:
                torch.manual_seed(0)
                inputs = [torch.randn(rows, cols).to(dtype)]
                inputs += [torch.randn(cols).to(dtype) for _ in range(count - 1)]
                compiled = tirc.compile(fn, inputs)
                calls = {
                    "eager": lambda fn=fn, inputs=inputs: fn(*inputs),
                    "tirc": lambda compiled=compiled, inputs=inputs: compiled(*inputs),
                }
                times = medians(calls, budget_s=args.budget)
                ratio = times["tirc"] / times["eager"]
                mark = "  <- slower" if ratio > 1.03 else ""
                print(
                    f"{name:12s} {str(dtype)[6:]:9s} {rows}x{cols:<7d} eager {times['eager'] * 1e3:8.3f} ms"
                    f"  tirc {times['tirc'] * 1e3:8.3f} ms  tirc/eager {ratio:.2f}{mark}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
