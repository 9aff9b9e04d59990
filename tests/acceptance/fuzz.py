"""Differential fuzzing beyond CI's budget: many random elementwise programs per
backend against eager PyTorch (make fuzz; BACKEND and N from the command line).

    python tests/acceptance/fuzz.py cpp 300
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]
sys.path.append(str(ROOT / "tests"))

import torch  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from program_strategies import elementwise_programs  # noqa: E402

import tirc  # noqa: E402

TOLERANCES = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)}


def main(backend: str, count: int) -> int:
    @settings(max_examples=count, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(program=elementwise_programs())
    def check(program):
        _description, fn, inputs = program
        compiled = tirc.compile(fn, inputs, backend=backend)
        gen = torch.Generator().manual_seed(7)
        fresh = [torch.randn(x.shape, generator=gen).to(x.dtype) for x in inputs]
        for got, want in zip(compiled(*fresh), fn(*fresh)):
            rtol, atol = TOLERANCES[want.dtype]
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)

    check()
    print(f"{count} random programs match eager on the {backend} backend")
    return 0


if __name__ == "__main__":
    sys.exit(
        main(sys.argv[1] if len(sys.argv) > 1 else "cpp", int(sys.argv[2]) if len(sys.argv) > 2 else 200)
    )
