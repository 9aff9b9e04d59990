"""Run every GPU check of the Triton backend on an NVIDIA GPU (H100, H200),
with real sizes, fresh random inputs and odd shapes:

    python tests/gpu/run_all.py

Runs each `gpu_*.py` script beside this file in its own process and exits 1
if any fails. CI has no GPU: the same kernels run there through the
interpreter, at small sizes (tests/codegen/test_triton_*.py).
"""

import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = []
    for script in sorted(here.glob("gpu_*.py")):
        print(f"== {script.name}", flush=True)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    print(f"failed: {', '.join(failed)}" if failed else "all GPU checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
