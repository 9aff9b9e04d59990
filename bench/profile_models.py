"""Where a model's time goes on the GPU, eager vs Inductor vs tirc: the
CUDA kernels by total time (torch.profiler) and the host time of one call
measured with the GPU idle (synchronised), for bench/model_zoo.py models.

    python bench/profile_models.py resnet18,mobilenet_v2 [--dtype f32] [--layout auto|keep]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tirc  # noqa: E402
from tirc.options import Options  # noqa: E402
import heldout2_zoo  # noqa: E402
import heldout3_zoo  # noqa: E402
import heldout4_zoo  # noqa: E402
import heldout5_zoo  # noqa: E402
import heldout6_zoo  # noqa: E402
import heldout7_zoo  # noqa: E402
import heldout_zoo  # noqa: E402
import model_zoo  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def _specs():
    return {
        s.name: s
        for s in model_zoo.suite()
        + heldout_zoo.suite()
        + heldout2_zoo.suite()
        + heldout3_zoo.suite()
        + heldout4_zoo.suite()
        + heldout5_zoo.suite()
        + heldout6_zoo.suite()
        + heldout7_zoo.suite()
    }


def host_ms(fn, runs: int = 20) -> float:
    """Median wall time of one call that starts with the GPU idle."""
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    return sorted(times)[len(times) // 2] * 1e3


def kernels(fn, top: int, ops: bool = False) -> str:
    """The top CUDA kernels by GPU time; with `ops`, the host-side ops
    (aten::copy_, ...) by the GPU time they launch instead."""
    fn()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA] + [torch.profiler.ProfilerActivity.CPU] * ops
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    kind = torch.autograd.DeviceType.CPU if ops else torch.autograd.DeviceType.CUDA
    events = [e for e in prof.key_averages() if e.device_type == kind and e.device_time_total > 0]
    events.sort(key=lambda e: -e.device_time_total)
    total = sum(e.device_time_total for e in events) / 5
    lines = [f"  GPU total {total / 1e3:.3f} ms per call, {sum(e.count for e in events) // 5} kernels"]
    for e in events[:top]:
        lines.append(f"  {e.device_time_total / 5 / 1e3:8.3f} ms {e.count // 5:4d}x {e.key[:110]}")
    return "\n".join(lines)


def _dumps(root: Path | None, name: str) -> dict:
    return {"dump_after": "fusion,memplan", "dump_dir": str(root / name)} if root else {}


def _options(assignments: list[str]) -> dict:
    """`KEY=VALUE` pairs read as `tirc compile --option` reads them."""
    chosen = Options().with_text(assignments)
    keys = [text.partition("=")[0].strip() for text in assignments]
    return {key: getattr(chosen, key) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models")
    parser.add_argument("--dtype", default="f32")
    parser.add_argument("--layout", default="auto")
    parser.add_argument("--option", action="append", default=[], help="KEY=VALUE for tirc (repeatable)")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--ops", action="store_true", help="host ops by the GPU time they launch")
    parser.add_argument(
        "--dump-dir", type=Path, help="write tirc's fusion and memplan dumps and code here, by model"
    )
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    for name in args.models.split(","):
        spec = _specs()[name]
        model = spec.build().to("cuda", dtype)
        inputs = [torch.randn(s, device="cuda", dtype=dtype) for s in spec.shapes["cuda"]]
        with torch.no_grad():
            compiled = {
                "eager": model,
                "inductor": torch.compile(model),
                "tirc": tirc.compile(
                    model,
                    inputs,
                    backend="triton",
                    device="cuda",
                    options={"layout": args.layout, **_options(args.option)},
                    **_dumps(args.dump_dir, name),
                ),
            }
            for label, fn in compiled.items():
                call = lambda fn=fn, inputs=inputs: fn(*inputs)  # noqa: E731
                call()
                print(f"{name} {args.dtype} {label}: host {host_ms(call):.3f} ms (GPU idle at the start)")
                print(kernels(call, args.top, args.ops), flush=True)


if __name__ == "__main__":
    main()
