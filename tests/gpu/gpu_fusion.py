"""GPU check of fused reduction kernels (run by hand on an NVIDIA machine, not by pytest):

    python tests/gpu/gpu_fusion.py

Compiles row-reduction chains (softmax, layer norm, RMS norm, cross-entropy,
column sums, ...) for device cuda with the Triton backend, at real and odd
sizes, on fresh random inputs; checks the kernel count and compares with
eager PyTorch. Exits 1 on any mismatch.
"""

import sys

import torch
import torch.nn.functional as F

import tirc
from checks import close_to_eager


def rms_norm(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w


PROGRAMS = {
    # name: (fn, input makers (rows, cols, dtype) -> tensors, loop kernels)
    "softmax": (lambda x: torch.softmax(x, -1), lambda n, c, d: [torch.randn(n, c, dtype=d)], 1),
    "softmax_dim0": (lambda x: torch.softmax(x, 0), lambda n, c, d: [torch.randn(n, c, dtype=d)], 1),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), lambda n, c, d: [torch.randn(n, c, dtype=d)], 1),
    "layer_norm": (
        lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b),
        lambda n, c, d: [torch.randn(n, c, dtype=d), torch.randn(c, dtype=d), torch.randn(c, dtype=d)],
        1,
    ),
    "rms_norm": (rms_norm, lambda n, c, d: [torch.randn(n, c, dtype=d), torch.randn(c, dtype=d)], 1),
    "add_layer_norm": (
        lambda x, r, w: (x + r, F.layer_norm(x + r, (x.shape[-1],), w)),
        lambda n, c, d: [torch.randn(n, c, dtype=d), torch.randn(n, c, dtype=d), torch.randn(c, dtype=d)],
        1,
    ),
    "cross_entropy": (
        lambda x, t: F.cross_entropy(x, t, reduction="none"),
        lambda n, c, d: [torch.randn(n, c, dtype=torch.float32), torch.randint(0, c, (n,))],
        1,
    ),
    "column_sum": (lambda x: x.float().sum(0), lambda n, c, d: [torch.randn(n, c, dtype=d)], 1),
    "sum_and_argmax": (
        lambda x: (x.sum(-1), x.argmax(-1)),
        lambda n, c, d: [torch.randn(n, c, dtype=torch.float32)],
        1,
    ),
    "gelu_bias": (
        lambda x, b: F.gelu(x + b, approximate="tanh"),
        lambda n, c, d: [torch.randn(n, c, dtype=d), torch.randn(c, dtype=d)],
        1,
    ),
}
SHAPES = [(37, 129), (1000, 1000), (4096, 4097), (64, 32000)]
DTYPES = [torch.float32, torch.bfloat16]


def loop_kernels(program) -> int:
    module = program.compiled.module
    externs = {id(n.result) for n in module.nodes if n.kind == "extern"}
    return sum(1 for k in module.kernels if not any(id(v) in externs for v in k.nodes))


def main() -> int:
    torch.manual_seed(0)
    failures = 0
    for name, (fn, make, kernels) in PROGRAMS.items():
        for rows, cols in SHAPES:
            for dtype in DTYPES:
                inputs = [x.cuda() for x in make(rows, cols, dtype)]
                label = f"{name} {rows}x{cols} {str(dtype).removeprefix('torch.')}"
                try:
                    program = tirc.compile(fn, inputs, backend="triton")
                    got, want = program(*inputs), fn(*inputs)
                    got = got if isinstance(got, tuple) else (got,)
                    want = want if isinstance(want, tuple) else (want,)
                    exact = fn(*[x.double() if x.is_floating_point() else x for x in inputs])
                    exact = exact if isinstance(exact, tuple) else (exact,)
                    for g, w, e in zip(got, want, exact):
                        close_to_eager(g, w, e)
                    count = loop_kernels(program)
                    status = "ok" if count == kernels else f"KERNELS {count} (want {kernels})"
                except Exception as err:  # report and go on: one line per case
                    status = f"FAIL {type(err).__name__}: {str(err).splitlines()[0][:200]}"
                failures += status != "ok"
                print(f"{label:40s} {status}", flush=True)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
