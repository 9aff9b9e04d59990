"""Compile time by graph size (`make bench-compile`): synthetic programs of
about 1k, 5k and 20k captured ATen ops (MLP stacks, residual conv stacks,
transformer layers), each compiled cold: a fresh process, empty caches.
Prints the seconds of each stage (tirc's `.timings`), the seconds per op,
and, per family, the time per op at the largest size over the smallest
(how far from linear the pipeline scales). With --inductor, torch.compile's
cold compile of the same program runs beside it, in its own fresh process,
up to --inductor-max-ops (Inductor's CPU compile of 20k ops takes long).

    python bench/compile_scaling.py [--ops 1000,5000,20000] [--families mlp,convres,transformer]
                                    [--backend cpp|triton] [--inductor] [--write bench/RESULTS.md]

Sizes are reached by stacking layers: a layer's op count is measured from
the capture of a one-layer and a two-layer program, and the stack is as
deep as the target needs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Each family: the layer's source (a torch.nn.Module named Layer, built as
# Layer()) and the input's shape. Small widths: the graph's size is the point,
# not its arithmetic.
FAMILIES = {
    "mlp": (
        """
class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm = nn.Linear(32, 32), nn.LayerNorm(32)

    def forward(self, x):
        return x + self.norm(F.gelu(self.fc(x)))
""",
        (4, 32),
    ),
    "convres": (
        """
class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.na, self.nb = nn.BatchNorm2d(8), nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(x + self.nb(self.b(torch.relu(self.na(self.a(x))))))
""",
        (1, 8, 6, 6),
    ),
    "transformer": (
        """
class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(32, 96), nn.Linear(32, 32)
        self.up, self.down = nn.Linear(32, 64), nn.Linear(64, 32)
        self.n1, self.n2 = nn.LayerNorm(32), nn.LayerNorm(32)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, 4, d // 4).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) * (d // 4) ** -0.5, dim=-1)
        x = x + self.out((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.n2(x))))
""",
        (2, 8, 32),
    ),
}

PROGRAM = """
import torch
from torch import nn
from torch.nn import functional as F
{layer}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(*[Layer() for _ in range({depth})])

    def forward(self, x):
        return self.layers(x)


def get_inputs():
    return [torch.randn{shape}]
"""

# Run in a fresh process: compile the program at argv[1] with tirc (argv[2]:
# its backend, argv[3]: the dump directory) or, with argv[2] "inductor", with
# torch.compile; print one JSON line.
RUN = """
import json, sys, time, runpy
import torch
spec = runpy.run_path(sys.argv[1])
model = spec["Model"]().eval()
inputs = spec["get_inputs"]()
start = time.perf_counter()
with torch.no_grad():
    if sys.argv[2] == "inductor":
        torch.compile(model)(*inputs)
        print(json.dumps({"total": time.perf_counter() - start}))
    else:
        import tirc
        program = tirc.compile(model, inputs, backend=sys.argv[2], dump_after="capture", dump_dir=sys.argv[3])
        program(*inputs)
        print(json.dumps({"total": time.perf_counter() - start, "timings": program.timings}))
"""


def _run(args: list[str], cache: Path) -> dict:
    env = dict(
        os.environ, TIRC_CACHE_DIR=str(cache / "tirc"), TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor")
    )
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _captured_ops(dump_dir: Path) -> int:
    """The ATen ops of the capture dump: its `%name = aten...` lines."""
    text = next(dump_dir.glob("*capture.tir")).read_text()
    return sum(1 for line in text.splitlines() if " = aten." in line or " = prims." in line)


def _program(work: Path, family: str, depth: int) -> Path:
    layer, shape = FAMILIES[family]
    path = work / f"{family}_{depth}.py"
    path.write_text(PROGRAM.format(layer=layer, depth=depth, shape=shape))
    return path


def _ops_per_layer(work: Path, family: str, backend: str) -> tuple[float, int]:
    """(ops per layer, ops outside the layers), from captures of 1 and 2 layers."""
    counts = []
    for depth in (1, 2):
        dump = work / f"probe_{family}_{depth}"
        _run([str(_program(work, family, depth)), backend, str(dump)], work / f"cache_probe_{depth}")
        counts.append(_captured_ops(dump))
    per = counts[1] - counts[0]
    return per, counts[0] - per


def measure(families, sizes, backend: str, inductor: bool, inductor_max: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for family in families:
            per, fixed = _ops_per_layer(work, family, backend)
            for target in sizes:
                depth = max(1, round((target - fixed) / per))
                program = _program(work, family, depth)
                dump = work / f"dump_{family}_{depth}"
                result = _run([str(program), backend, str(dump)], work / f"cache_{family}_{depth}")
                row = {
                    "family": family,
                    "target": target,
                    "depth": depth,
                    "ops": _captured_ops(dump),
                    **result,
                }
                if inductor and target <= inductor_max:
                    row["inductor"] = _run([str(program), "inductor"], work / f"icache_{family}_{depth}")[
                        "total"
                    ]
                rows.append(row)
                print(_line(row), flush=True)
    return rows


def _stages(row: dict) -> dict[str, float]:
    return {name: s for name, s in row["timings"].items() if "." not in name}


def _line(row: dict) -> str:
    stages = ", ".join(f"{name} {s:.1f}" for name, s in _stages(row).items())
    inductor = f", inductor {row['inductor']:.1f} s" if "inductor" in row else ""
    return (
        f"{row['family']:12s} {row['ops']:6d} ops: {row['total']:7.1f} s, "
        f"{1e3 * row['total'] / row['ops']:6.2f} ms/op{inductor} ({stages})"
    )


def table(rows: list[dict]) -> list[str]:
    names = []
    for row in rows:
        names += [n for n in _stages(row) if n not in names]
    head = ["family", "ops", "tirc s", "ms/op", "inductor s"] + [f"{n} s" for n in names]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        stages = _stages(row)
        inductor = f"{row['inductor']:.1f}" if "inductor" in row else "-"
        cells = [
            row["family"],
            str(row["ops"]),
            f"{row['total']:.1f}",
            f"{1e3 * row['total'] / row['ops']:.2f}",
        ]
        cells += [inductor] + [f"{stages[n]:.2f}" if n in stages else "-" for n in names]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for family in dict.fromkeys(row["family"] for row in rows):
        own = [r for r in rows if r["family"] == family]
        small, large = own[0], own[-1]
        ratio = (large["total"] / large["ops"]) / (small["total"] / small["ops"])
        lines.append(
            f"- {family}: time per op at {large['ops']} ops is {ratio:.2f}x that at {small['ops']} ops"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="1000,5000,20000", help="target op counts (default 1000,5000,20000)")
    parser.add_argument(
        "--families", default=",".join(FAMILIES), help="comma-separated: " + ", ".join(FAMILIES)
    )
    parser.add_argument("--backend", default="cpp", choices=("cpp", "triton"))
    parser.add_argument("--inductor", action="store_true", help="torch.compile's cold compile beside tirc's")
    parser.add_argument("--inductor-max-ops", type=int, default=5000, help="largest size Inductor compiles")
    parser.add_argument("--write", type=Path, help="replace this file's bench-compile section with the table")
    args = parser.parse_args()
    families = [f.strip() for f in args.families.split(",")]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown families: {', '.join(unknown)}")
    sizes = sorted(int(n) for n in args.ops.split(","))
    rows = measure(families, sizes, args.backend, args.inductor, args.inductor_max_ops)
    import torch  # the versions in the header only

    header = [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}; "
        f"backend {args.backend}; each compile cold (fresh process, empty caches), call included.",
        "",
    ]
    lines = header + table(rows)
    print("\n".join(lines))
    if args.write:
        _write(args.write, lines)


def _write(path: Path, lines: list[str]) -> None:
    begin, end = "<!-- bench-compile -->", "<!-- /bench-compile -->"
    section = "\n".join(
        [begin, "## Compile time by graph size (`bench/compile_scaling.py`)", "", *lines, end]
    )
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


if __name__ == "__main__":
    main()
