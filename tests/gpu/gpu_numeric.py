"""GPU check of float and integer edge semantics (run by hand on an NVIDIA
machine, not by pytest):

    python tests/gpu/gpu_numeric.py

The programs of tests/codegen/test_numeric_edges.py (floor division and
remainder from the exact fmod, fmod by infinities, pow of -inf, atan2 at
signed zeros and infinities, relu and clamp of -0.0, integer scalars that
wrap) and tests/codegen/test_half_promotion.py (f16/bf16 ops with arguments
of other dtypes), compiled for the GPU, against eager on the GPU: the
compiled GPU path uses libdevice's fmod and atan2, which the interpreter in
CI cannot run. Exits 1 on any mismatch or error.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))

import test_half_promotion as halves  # noqa: E402
import test_numeric_edges as edges  # noqa: E402

import tirc  # noqa: E402


def _same(got, want, exact: bool) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if not want.is_floating_point():
        assert torch.equal(got, want), (got, want)
        return
    tol = 0 if exact else 2e-6
    torch.testing.assert_close(got, want, rtol=tol, atol=tol, equal_nan=True)
    zeros = want == 0
    assert torch.equal(got[zeros].signbit(), want[zeros].signbit()), "signs of zeros differ"


def _run(name, fn, inputs, exact) -> bool:
    inputs = [x.cuda() for x in inputs]
    try:
        compiled = tirc.compile(fn, inputs, backend="triton", device="cuda")
        got, want = compiled(*inputs), fn(*inputs)
        torch.cuda.synchronize()
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want, strict=True):
            _same(g, w, exact)
        print(f"ok   {name}")
        return True
    except Exception as err:  # report every failure, then exit 1
        print(f"FAIL {name}: {type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}")
        return False


def main() -> int:
    results = []
    for name, (fn, make) in sorted(edges.CASES.items()):
        for dtype in (torch.float32, torch.float64):
            inputs = [x.to(dtype) for x in make()]
            results.append(_run(f"{name} {dtype}", fn, inputs, name not in edges.APPROXIMATE))
    for name, (fn, _) in sorted(edges.INT_CASES.items()):
        u = torch.randint(0, 256, (1000,), dtype=torch.uint8)
        i = torch.randint(-128, 128, (1000,), dtype=torch.int8)
        results.append(_run(name, fn, [u, i], True))
    for name, (fn, make) in sorted(halves.CASES.items()):
        for dtype in (torch.float16, torch.bfloat16):
            results.append(_run(f"{name} {dtype}", fn, make(dtype), True))
    failures = results.count(False)
    print(f"{failures} failure(s) of {len(results)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
