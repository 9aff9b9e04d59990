"""GPU check of tiled pointwise kernels (run by hand on an NVIDIA machine, not by pytest):

    python tests/gpu/gpu_tiled.py

Compiles transposes and permutes (codegen/triton_tiling.py) for device cuda
with the Triton backend, at real and odd sizes and several dtypes, on fresh
random inputs; checks that the kernel is tiled where it should be and
compares with eager PyTorch. Exits 1 on any mismatch.
"""

import sys

import torch

import tirc
from checks import close_to_eager

PROGRAMS = {
    # name: (fn, shapes of the inputs for one size, tiled?)
    "transpose": (lambda x: x.t().contiguous(), lambda n, m: [(n, m)], True),
    "add_transposed": (lambda x, y: x + y.t(), lambda n, m: [(n, m), (m, n)], True),
    "two_outputs": (lambda x, y: (x * y.t(), (x - 1).t().contiguous()), lambda n, m: [(n, m), (m, n)], True),
    "to_channels_last": (lambda x: x.permute(0, 2, 3, 1).contiguous() * 2, lambda n, m: [(2, m, 7, n)], True),
    "from_channels_last_bias": (
        lambda x, b: torch.relu(x.permute(0, 3, 1, 2) + b[:, None, None]),
        lambda n, m: [(2, 5, n, m), (m,)],
        True,
    ),
    "rotate_3d": (lambda x: x.permute(2, 0, 1).contiguous(), lambda n, m: [(3, n, m)], True),
    "split_heads": (lambda x: x.transpose(1, 2).contiguous(), lambda n, m: [(2, n, 4, 64)], False),
}
SIZES = [(37, 129), (1000, 1337), (4096, 4096), (8192, 2048)]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def tiled(program) -> bool:
    return "yindex = (pid // xprograms) * YBLOCK" in program.code


def main() -> int:
    torch.manual_seed(0)
    failures = 0
    for name, (fn, shapes, want_tiled) in PROGRAMS.items():
        for n, m in SIZES:
            for dtype in DTYPES:
                label = f"{name} {n}x{m} {str(dtype).removeprefix('torch.')}"
                example = [torch.randn(s, device="cuda").to(dtype) for s in shapes(n, m)]
                fresh = [torch.randn(s, device="cuda").to(dtype) for s in shapes(n, m)]
                try:
                    program = tirc.compile(fn, example, backend="triton")
                    if tiled(program) != want_tiled:
                        raise AssertionError(f"tiled: {tiled(program)}, expected {want_tiled}")
                    got, want = program(*fresh), fn(*fresh)
                    got = got if isinstance(got, tuple) else (got,)
                    want = want if isinstance(want, tuple) else (want,)
                    exact = fn(*[x.double() for x in fresh])
                    exact = exact if isinstance(exact, tuple) else (exact,)
                    for g, w, e in zip(got, want, exact):
                        close_to_eager(g, w, e)
                    print(f"ok   {label}", flush=True)
                except Exception as err:  # report every case, then fail
                    failures += 1
                    print(f"FAIL {label}: {type(err).__name__}: {err}", flush=True)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
