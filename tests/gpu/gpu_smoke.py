"""GPU check of the Triton backend (run by hand on an NVIDIA machine, not by pytest):

    python tests/gpu/gpu_smoke.py

Compiles elementwise programs for device cuda, at real and odd sizes, on fresh
random inputs, and compares with eager PyTorch. Exits 1 on any mismatch.
"""

import sys

import torch

import tirc

PROGRAMS = {
    "relu": (lambda x: torch.relu(x), ["f32"]),
    "gelu_bias": (lambda x, b: torch.nn.functional.gelu(x + b), ["f32", "bias"]),
    "gelu_tanh": (lambda x: torch.nn.functional.gelu(x, approximate="tanh"), ["f32"]),
    "swish": (lambda x: x * torch.sigmoid(x), ["f32"]),
    "hardtanh": (lambda x: torch.nn.functional.hardtanh(x), ["f32"]),
    "chain_bf16": (lambda x: (torch.tanh(x) * 2 + 1).exp(), ["bf16"]),
    "chain_f16": (lambda x: torch.sigmoid(x) * x - 0.5, ["f16"]),
    "where": (lambda x, b: torch.where(x > b, x, b * 2), ["f32", "bias"]),
    "int_ops": (lambda a: (a * 3 - 7) % 5, ["i64"]),
    "int_pow_floordiv": (lambda a: a**2 + torch.div(a, 7, rounding_mode="floor"), ["i64"]),
    "bool_logic": (lambda x, b: torch.logical_xor(x > 0, b > 0.5) | (x < -1), ["f32", "bias"]),
    "round_ops": (lambda x: torch.round(x * 4) + torch.trunc(x) - torch.floor(x), ["f32"]),
    "signs": (
        lambda x, b: torch.copysign(torch.fmax(x, b.log()), x - b)
        + torch.fmin(x, b) * torch.signbit(b - 0.5),
        ["f32", "bias"],
    ),
}
SHAPES = [(37,), (129, 37), (1000, 1000), (4096, 4097)]
TOL = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (1e-3, 1e-3)}


def make(kind, shape):
    if kind == "bias":
        return torch.randn(shape[-1], device="cuda")
    if kind == "i64":
        return torch.randint(-100, 100, shape, device="cuda")
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[kind]
    return torch.randn(shape, device="cuda", dtype=dtype)


def main() -> int:
    print(
        f"torch {torch.__version__}, triton {__import__('triton').__version__}, {torch.cuda.get_device_name()}"
    )
    failures = 0
    for name, (fn, kinds) in PROGRAMS.items():
        for shape in SHAPES:
            inputs = [make(k, shape) for k in kinds]
            try:
                compiled = tirc.compile(fn, inputs, backend="triton", device="cuda")
                fresh = [make(k, shape) for k in kinds]
                got, want = compiled(*fresh), fn(*fresh)
                rtol, atol = TOL.get(want.dtype, (0, 0))
                torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
                print(f"ok   {name} {shape}")
            except Exception as err:  # report every failure, then exit 1
                failures += 1
                print(f"FAIL {name} {shape}: {type(err).__name__}: {str(err).splitlines()[0][:300]}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
