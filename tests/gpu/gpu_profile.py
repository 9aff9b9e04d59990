"""GPU check of `--profile` (tirc/profiling.py), run by hand on an NVIDIA
machine, not by pytest:

    python tests/gpu/gpu_profile.py [NAME ...]

Each program (a CNN block, an MLP, a softmax and layer norm) is compiled by
`tirc compile --backend triton --device cuda --profile` in a process of its
own (or those NAMEd), at sizes where the GPU's work, not the wrapper's
Python, takes the time (the wrapper's host time, tens of microseconds, is
not attributed). Checked: the manifest's "profile" lists every launch and extern op of
the memory plan; every Triton kernel was given device time (the profiler
correlated its GPU kernel with the range around its launch); the attributed
sum is within 10% of the measured total (the median wall time of `call`,
synchronized); the Chrome trace names the kernels; and `tirc replay
--profile` of the memplan dump profiles too. Prints each table. Exits 1 on
any failure.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ir_text import parse  # noqa: E402

PROGRAMS = {
    "cnn_block": '''import torch
from torch import nn


class Model(nn.Module):
    """A ResNet basic block."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(128, 128, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(128)
        self.c2 = nn.Conv2d(128, 128, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(128)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + x)


def get_inputs():
    return [torch.randn(128, 128, 56, 56)]
''',
    "mlp": """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4096, 4096)
        self.norm = nn.LayerNorm(4096)
        self.l2 = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.l2(nn.functional.gelu(self.norm(self.l1(x))))


def get_inputs():
    return [torch.randn(4096, 4096)]
""",
    "softmax_layernorm": """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8192)

    def forward(self, x):
        return self.norm(torch.softmax(x * 0.5, -1) + x)


def get_inputs():
    return [torch.randn(16384, 8192)]
""",
}

FAILURES = []


def check(name: str, ok: bool, detail: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}", flush=True)
    if not ok:
        FAILURES.append(name)


def tirc(*args) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], env=env, capture_output=True, text=True, timeout=900
    )


def planned_names(memplan_path: Path) -> tuple[set[str], set[str]]:
    """(launched kernels, extern ops) of the dump's wrapper."""
    module = parse(memplan_path.read_text(), memplan_path.name)
    kernels = {k.name.name: k for k in module.kernels}
    nodes = {id(n.result): n for n in module.nodes}
    launched, externs = set(), set()
    for line in module.wrapper:
        if line.op == "launch":
            launched.add(line.kernel.name)
        elif line.op == "extern":
            externs.add(nodes[id(kernels[line.kernel.name].nodes[0])].target)
    return launched, externs


def table_of(stderr: str) -> str:
    lines = stderr.splitlines()
    start = next((k for k, line in enumerate(lines) if line.startswith("tirc: profile")), len(lines))
    return "\n".join(lines[start:])


def profile_one(name: str, source: str, tmp: Path) -> None:
    (tmp / f"{name}.py").write_text(source)
    dumps, trace = tmp / f"{name}-dumps", tmp / f"{name}-trace.json"
    proc = tirc(
        "compile",
        tmp / f"{name}.py",
        "--backend",
        "triton",
        "--device",
        "cuda",
        "--dump-after=memplan",
        "--dump-dir",
        dumps,
        "--profile-trace",
        trace,
    )
    check(f"{name}: compile --profile exits 0", proc.returncode == 0, proc.stderr[-2000:])
    if proc.returncode != 0:
        return
    print(table_of(proc.stderr), flush=True)
    profile = json.loads((dumps / "manifest.json").read_text())["profile"]
    rows = {row["name"]: row for row in profile["kernels"]}
    launched, externs = planned_names(dumps / "05-memplan.tir")
    check(f"{name}: every launch and extern listed", set(rows) == launched | externs, f"{sorted(rows)}")
    untimed = [k for k in launched if rows.get(k, {}).get("us", 0) <= 0]
    check(f"{name}: every kernel has device time", not untimed, f"untimed: {untimed}")
    ratio = profile["attributed_us"] / profile["total_us"]
    check(
        f"{name}: attributed {profile['attributed_us']:.0f} us within 10% of total {profile['total_us']:.0f} us",
        0.9 <= ratio <= 1.1,
        f"ratio {ratio:.3f}",
    )
    names = {event.get("name") for event in json.loads(trace.read_text())["traceEvents"]}
    missing = [k for k in launched if f"tirc:{k}" not in names]
    check(f"{name}: the trace names the kernels", not missing, f"missing: {missing}")
    replay = tirc("replay", dumps / "05-memplan.tir", "--profile")
    check(
        f"{name}: replay --profile",
        replay.returncode == 0 and all(f"  {k} " in replay.stderr for k in launched),
        replay.stderr[-2000:],
    )


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 1
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tirc-gpu-profile-") as tmp:
        for name in sys.argv[1:] or PROGRAMS:
            profile_one(name, PROGRAMS[name], Path(tmp))
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
