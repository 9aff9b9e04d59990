"""Convolution time channels-last over NCHW on the GPU, by rank and kind:
the data behind the layout decision's ratios (lowering/layout.py). Each
convolution runs on inputs and weights already in the layout, as tirc runs
them, so cuDNN's own conversions are in the time.

    python bench/conv_layouts.py [--dtype f32|bf16]
"""

from __future__ import annotations

import argparse

import torch
from torch.nn import functional as F
from triton.testing import do_bench

# (name, input shape, weight shape, padding, groups)
CASES = [
    ("2d dense 3x3", (32, 64, 56, 56), (64, 64, 3, 3), 1, 1),
    ("2d dense 1x1", (32, 256, 56, 56), (64, 256, 1, 1), 0, 1),
    ("2d depthwise 3x3", (32, 144, 56, 56), (144, 1, 3, 3), 1, 144),
    ("3d dense 3x3x3", (8, 64, 16, 56, 56), (64, 64, 3, 3, 3), 1, 1),
    ("3d dense 1x3x3", (8, 64, 8, 56, 56), (144, 64, 1, 3, 3), (0, 1, 1), 1),
    ("3d dense 3x1x1", (8, 144, 8, 56, 56), (64, 144, 3, 1, 1), (1, 0, 0), 1),
    ("3d dense 1x1x1", (8, 256, 8, 28, 28), (64, 256, 1, 1, 1), 0, 1),
    ("3d depthwise 3x3x3", (8, 128, 8, 28, 28), (128, 1, 3, 3, 3), 1, 128),
]
FORMATS = {4: torch.channels_last, 5: torch.channels_last_3d}
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def _time(x, w, padding, groups) -> float:
    conv = F.conv2d if x.dim() == 4 else F.conv3d
    return do_bench(lambda: conv(x, w, padding=padding, groups=groups), rep=200)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    dtype = DTYPES[parser.parse_args().dtype]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {dtype}")
    print("| convolution | input | NCHW ms | channels-last ms | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, shape, weight_shape, padding, groups in CASES:
        x = torch.randn(shape, device="cuda", dtype=dtype)
        w = torch.randn(weight_shape, device="cuda", dtype=dtype)
        plain = _time(x, w, padding, groups)
        fmt = FORMATS[x.dim()]
        last = _time(x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt), padding, groups)
        size = "x".join(map(str, shape))
        print(f"| {name} | {size} | {plain:.3f} | {last:.3f} | {last / plain:.2f} |", flush=True)


if __name__ == "__main__":
    main()
