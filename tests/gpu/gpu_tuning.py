"""GPU check of launch-config tuning (run by hand on an NVIDIA machine):

    python tests/gpu/gpu_tuning.py

On a real GPU the memplan stage times each large kernel's configs and pins
the winner in the dump (`triton_config`). Checks, for kernels of every kind
at real sizes: the results match eager; the memplan dump pins a config for
every kernel with alternatives; compiling the same program again times
nothing (the on-disk winners); and a re-fed memplan dump regenerates the
same output_code.py byte for byte, also timing nothing. Exits 1 on failure.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import tirc
from codegen import triton_tune

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = {
    "softmax_bf16": (
        lambda x: torch.softmax(x, -1),
        lambda: [torch.randn(4096, 4096, device="cuda").bfloat16()],
    ),
    "long_rows": (lambda x: torch.log_softmax(x, -1), lambda: [torch.randn(1024, 40000, device="cuda")]),
    "column_sum": (lambda x: x.sum(0), lambda: [torch.randn(4096, 4097, device="cuda")]),
    "pointwise": (lambda x: torch.tanh(x) * 2 + 1, lambda: [torch.randn(8192, 1025, device="cuda")]),
}


def main() -> int:
    timed = []
    real = triton_tune._do_bench
    triton_tune._do_bench = lambda run: timed.append(1) or real(run)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TIRC_CACHE_DIR"] = str(Path(tmp) / "cache")
        os.environ["TIRC_NO_CODE_CACHE"] = "1"  # the second compile runs the pipeline
        for name, (fn, make) in PROGRAMS.items():
            torch.manual_seed(0)
            dumps = Path(tmp) / name
            program = tirc.compile(
                fn, make(), backend="triton", device="cuda", dump_after="memplan", dump_dir=dumps
            )
            first = len(timed)
            memplan = (dumps / "05-memplan.tir").read_text()
            pins = memplan.count("triton_config")
            fresh = make()
            want, got = fn(*fresh), program(*fresh)
            ok = torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2)
            again = tirc.compile(fn, make(), backend="triton", device="cuda")
            timed_again = len(timed) - first
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tirc",
                    "compile",
                    str(dumps / "05-memplan.tir"),
                    "--dump-dir",
                    str(dumps / "re"),
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            same = done.returncode == 0 and (dumps / "re" / "output_code.py").read_text() == program.code
            fine = (
                ok and pins >= 1 and first >= 2 and timed_again == 0 and again.code == program.code and same
            )
            failures += not fine
            print(
                f"{name}: match={ok} pins={pins} timed={first} timed_again={timed_again} "
                f"refed_identical={same} {'ok' if fine else 'FAIL ' + done.stderr[-300:]}",
                flush=True,
            )
            timed.clear()
    print("tuning: all ok" if not failures else f"tuning: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
