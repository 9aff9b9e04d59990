"""GPU check of split reductions (run by hand on an NVIDIA machine, not by pytest):

    python tests/gpu/gpu_split.py

Compiles reductions into few long rows (a full sum of 64M floats, a bf16
mean, four rows of 4M, a vector norm, NaN-propagating max and min, any and
all, a column sum with five columns) for device cuda with the Triton backend,
on fresh random inputs; checks that each was split (a kernel of partials and
a combining kernel) and compares with eager PyTorch (a long float32 sum also
against float64: no farther from it than twice eager is). Exits 1 on any
mismatch. The interpreter runs the same kernels at small sizes in CI
(tests/codegen/test_triton_split.py).
"""

import sys

import torch

import tirc
from checks import close_to_eager


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def with_nan(*shape):
    x = randn(*shape)
    x.view(-1)[torch.randint(0, x.numel(), (), device="cuda")] = float("nan")
    return x


def one_true(n):
    x = torch.zeros(n, dtype=torch.bool, device="cuda")
    x[torch.randint(0, n, (), device="cuda")] = True
    return x


# name: (fn, make inputs)
PROGRAMS = {
    "sum_64M": (lambda x: x.sum(), lambda: [randn(64 * 2**20)]),
    "sum_odd": (lambda x: x.sum(), lambda: [randn(64 * 2**20 + 3)]),
    "bf16_mean_16M": (lambda x: x.mean(), lambda: [randn(16 * 2**20, dtype=torch.bfloat16)]),
    "f16_sum_16M": (lambda x: x.sum(), lambda: [randn(16 * 2**20 + 1, dtype=torch.float16)]),
    "rows_4x4M": (lambda x: x.sum(1), lambda: [randn(4, 4 * 2**20)]),
    "columns_4M_x5": (lambda x: x.sum(0), lambda: [randn(4 * 2**20 + 1, 5)]),
    "vector_norm": (lambda x: torch.linalg.vector_norm(x), lambda: [randn(32 * 2**20)]),
    "dot": (lambda x, y: (x * y).sum(), lambda: [randn(16 * 2**20), randn(16 * 2**20)]),
    "abs_max": (lambda x: x.abs().max(), lambda: [randn(32 * 2**20)]),
    "max_nan": (lambda x: x.amax(), lambda: [with_nan(16 * 2**20 + 7)]),
    "min_nan": (lambda x: x.amin(), lambda: [with_nan(16 * 2**20 + 7)]),
    "int64_sum": (lambda a: a.sum(), lambda: [torch.randint(-1000, 1000, (16 * 2**20,), device="cuda")]),
    "any_all": (lambda b: (b.any(), (~b).all()), lambda: [one_true(16 * 2**20 + 5)]),
}


def _times(fn, program, inputs) -> str:
    """Median times of eager and tirc (not a check: for the record)."""
    from triton.testing import do_bench

    eager = do_bench(lambda: fn(*inputs), return_mode="median")
    ours = do_bench(lambda: program(*inputs), return_mode="median")
    return f"(eager {eager * 1e3:.0f} us, tirc {ours * 1e3:.0f} us)"


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def main() -> int:
    print(
        f"torch {torch.__version__}, triton {__import__('triton').__version__}, {torch.cuda.get_device_name()}"
    )
    torch.manual_seed(0)
    failures = 0
    for name, (fn, make) in PROGRAMS.items():
        try:
            program = tirc.compile(fn, make(), backend="triton", device="cuda")
            fresh = make()
            got, want = _tuple(program(*[x.clone() for x in fresh])), _tuple(fn(*fresh))
            exact = _tuple(fn(*[x.double() if x.is_floating_point() else x for x in fresh]))
            for g, w, e in zip(got, want, exact):
                close_to_eager(g, w, e, slack=1e-6, equal_nan=True)
            status = "ok" if "_split,(" in "".join(program.code.split()) else "NOT SPLIT"
            times = _times(fn, program, fresh)
        except Exception as err:  # report every failure, then exit 1
            status = f"FAIL {type(err).__name__}: {str(err).splitlines()[0][:300]}"
            times = ""
        failures += status != "ok"
        print(f"{name:16s} {status} {times}", flush=True)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
