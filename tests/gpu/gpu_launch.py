"""GPU check of the direct Triton launches (codegen/triton_runtime.Launches),
run by hand on an NVIDIA machine, not by pytest:

    python tests/gpu/gpu_launch.py

After a kernel's first launch through JITFunction.run, later launches call
the compiled kernel directly; a compiled kernel is specialised on its
pointers' 16-byte alignment, so an input that is a slice one element in
(misaligned) must get a kernel of its own, and the aligned one its own
again. Every call is checked against eager, alternating aligned and
misaligned inputs, over pointwise, reduction and split kernels; the host
time of a launch is printed. Exits 1 on any mismatch or error.
"""

import sys
import time

import torch

import tirc
from codegen import triton_runtime

PROGRAMS = {
    "pointwise": (lambda x: torch.sigmoid(x) * 2 + 1, (1000, 1000)),
    "rows": (lambda x: x.softmax(-1), (1000, 1000)),
    "split": (lambda x: x / x.abs().sum(), (1 << 22,)),
}


def _misaligned(shape):
    """A tensor of `shape`, contiguous, whose data starts 4 bytes past 16-byte alignment."""
    flat = torch.randn(int(torch.tensor(shape).prod()) + 1, device="cuda")[1:]
    assert flat.data_ptr() % 16 != 0
    return flat.view(shape)


def main() -> int:
    failures = 0
    if triton_runtime.Launches().knobs is None:
        print("FAIL: this Triton's launches take the JIT path")
        failures += 1
    for name, (fn, shape) in PROGRAMS.items():
        program = tirc.compile(fn, [torch.randn(shape, device="cuda")], backend="triton", device="cuda")
        for k in range(6):
            x = _misaligned(shape) if k % 2 else torch.randn(shape, device="cuda")
            got, want = program(x), fn(x)
            if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
                print(f"FAIL {name} call {k}: max error {(got - want).abs().max().item():.3g}")
                failures += 1
        x = torch.randn(shape, device="cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(200):
            program(x)
        host = (time.perf_counter() - start) / 200 * 1e6
        torch.cuda.synchronize()
        print(f"ok   {name}: {host:.1f} us of host time a call")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
