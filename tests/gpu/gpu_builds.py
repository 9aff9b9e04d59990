"""GPU check of kernel builds in worker processes (run by hand on an NVIDIA machine):

    python tests/gpu/gpu_builds.py

ResNet-18 (bench/model_zoo.py: repeated blocks, enough ops to start the
workers) is compiled cold (empty tirc and Triton caches)
with the default pool of build workers, and again in a fresh process with
TIRC_COMPILE_WORKERS=0. Checks: the results match eager; with the pool, the
compiling process itself compiles no kernel to a GPU binary (every build
ran in a worker: CUDABackend.make_cubin is never called here); without it,
it does; and both compiles generate the same output_code.py. Exits 1 on
failure.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
import torch
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/bench")
import tirc
import model_zoo
from triton.backends.nvidia.compiler import CUDABackend

built = []
real = CUDABackend.make_cubin
CUDABackend.make_cubin = lambda self, *a, **k: built.append(1) or real(self, *a, **k)

spec = {s.name: s for s in model_zoo.suite()}["resnet18"]
model = spec.build().cuda()
x = torch.randn(4, 3, 67, 67, device="cuda")
with torch.no_grad():
    program = tirc.compile(model, [x], backend="triton")
    fresh = torch.randn(4, 3, 67, 67, device="cuda")
    # cuDNN's convolutions run TF32 in both: a loose bound, as gpu_tuning's.
    ok = torch.allclose(program(fresh), model(fresh), rtol=2e-2, atol=2e-2)
torch.cuda.synchronize()
print(json.dumps({"match": ok, "built_here": len(built), "code": program.code,
                  "timings": dict(program.timings)}))
"""


def run(workers: str | None, cache: Path) -> dict:
    # Launch configs from the heuristic: timed ones could differ between the runs.
    env = dict(
        os.environ,
        TIRC_CACHE_DIR=str(cache / "tirc"),
        TRITON_CACHE_DIR=str(cache / "triton"),
        TIRC_AUTOTUNE="0",
    )
    env.pop("TIRC_COMPILE_WORKERS", None)
    if workers is not None:
        env["TIRC_COMPILE_WORKERS"] = workers
    done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        pooled = run(None, Path(tmp) / "pooled")
        alone = run("0", Path(tmp) / "alone")
    fine = (
        pooled["match"]
        and alone["match"]
        and pooled["built_here"] < alone["built_here"]
        and pooled["code"] == alone["code"]
    )
    for name, row in (("pool", pooled), ("in process", alone)):
        stages = {
            k: round(v, 2) for k, v in row["timings"].items() if k in ("memplan", "build", "build.kernels")
        }
        print(f"{name}: match={row['match']} compiled here={row['built_here']} {stages}")
    print(f"same code={pooled['code'] == alone['code']} {'ok' if fine else 'FAIL'}")
    return 0 if fine else 1


if __name__ == "__main__":
    sys.exit(main())
