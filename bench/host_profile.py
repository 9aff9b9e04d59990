"""The host side of a compiled model's call on the GPU: cProfile of many
calls (which Python functions the wrapper spends its time in), for
bench/model_zoo.py models; writes each model's output_code.py to DIR.

    python bench/host_profile.py mobilenet_v2 DIR
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tirc  # noqa: E402
import model_zoo  # noqa: E402


def main() -> None:
    names, out = sys.argv[1].split(","), Path(sys.argv[2])
    specs = {s.name: s for s in model_zoo.suite()}
    for name in names:
        spec = specs[name]
        model = spec.build().to("cuda")
        inputs = [torch.randn(s, device="cuda") for s in spec.shapes["cuda"]]
        with torch.no_grad():
            fn = tirc.compile(
                model, inputs, backend="triton", device="cuda", dump_after="memplan", dump_dir=out / name
            )
            for _ in range(5):
                fn(*inputs)
            torch.cuda.synchronize()
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(50):
                fn(*inputs)
            torch.cuda.synchronize()
            profile.disable()
        print(f"== {name}: 50 calls")
        pstats.Stats(profile).sort_stats("tottime").print_stats(22)


if __name__ == "__main__":
    main()
