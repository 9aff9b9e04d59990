"""Compile time of whole models (`make bench-gpu-compile`, `make bench-cpu-compile`):
for each model of the zoos (bench/*_zoo.py), in fresh processes, tirc's cold
compile (empty tirc and Triton caches), tirc's warm compile (a second process
on the same caches), and Inductor's cold compile (empty Inductor and Triton
caches); each includes the first call, which builds the kernels. Prints
tirc's stages and their share beside Inductor's total, and the ratios the
compile-time criteria use (cold tirc / cold Inductor, warm / cold tirc).

    python bench/compile_models.py resnet50,mobilenet_v2 [--device cuda|cpu] [--profile DIR]
                                  [--write bench/RESULTS.md]

--profile writes each cold tirc compile's cProfile (cumulative and own time,
top functions) to DIR/NAME.txt, its stats to DIR/NAME.prof, and the row
with every timing to DIR/NAME.json.
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

# One compile in a fresh process: argv[1] the model, argv[2] the device,
# argv[3] "tirc" or "inductor", argv[4] a cProfile report path or "".
RUN = """
import json, sys, time
sys.path.insert(0, sys.argv[5])
import torch
from profile_models import _specs
name, device, compiler, report = sys.argv[1:5]
spec = _specs()[name]
model = spec.build().to(device)
size = "cuda" if device == "cuda" else "cpu"
inputs = [torch.randn(s, device=device) for s in spec.shapes[size]]
profile = None
if report:
    import cProfile
    profile = cProfile.Profile()
start = time.perf_counter()
with torch.no_grad():
    if profile is not None:
        profile.enable()
    if compiler == "inductor":
        torch.compile(model)(*inputs)
        timings = {}
    else:
        import tirc
        backend = "triton" if device == "cuda" else "cpp"
        program = tirc.compile(model, inputs, backend=backend, device=device)
        program(*inputs)
        timings = dict(program.timings)
    if device == "cuda":
        torch.cuda.synchronize()
    total = time.perf_counter() - start
    if profile is not None:
        profile.disable()
        import io, pstats
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats("cumulative").print_stats(60)
        stats.sort_stats("tottime").print_stats(40)
        open(report, "w").write(out.getvalue())
        stats.dump_stats(report[: -len(".txt")] + ".prof")
print(json.dumps({"total": total, "timings": timings}))
"""


def _run(name: str, device: str, compiler: str, cache: Path, report: str = "") -> dict:
    env = dict(
        os.environ,
        TIRC_CACHE_DIR=str(cache / "tirc"),
        TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
        TRITON_CACHE_DIR=str(cache / "triton"),
    )
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    args = [sys.executable, "-c", RUN, name, device, compiler, report, str(ROOT / "bench")]
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else "failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(names: list[str], device: str, profile_dir: Path | None) -> list[dict]:
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            report = str(profile_dir / f"{name}.txt") if profile_dir else ""
            try:
                cold = _run(name, device, "tirc", work / "tirc", report)
                warm = _run(name, device, "tirc", work / "tirc")
                inductor = _run(name, device, "inductor", work / "inductor")
            except RuntimeError as error:
                print(f"{name}: failed: {error}", flush=True)
                continue
        row = {"model": name, "cold": cold, "warm": warm["total"], "inductor": inductor["total"]}
        rows.append(row)
        print(_line(row), flush=True)
        if profile_dir:
            (profile_dir / f"{name}.json").write_text(json.dumps(row, indent=1))
    return rows


def _stages(timings: dict) -> dict[str, float]:
    return {name: s for name, s in timings.items() if "." not in name}


def _line(row: dict) -> str:
    cold = row["cold"]["total"]
    stages = ", ".join(f"{n} {s:.1f}" for n, s in _stages(row["cold"]["timings"]).items())
    return (
        f"{row['model']:22s} tirc cold {cold:6.1f} s, warm {row['warm']:5.1f} s, "
        f"inductor {row['inductor']:6.1f} s; cold/inductor {cold / row['inductor']:.2f}, "
        f"warm/cold {row['warm'] / cold:.2f} ({stages})"
    )


def table(rows: list[dict]) -> list[str]:
    names: list[str] = []
    for row in rows:
        names += [n for n in _stages(row["cold"]["timings"]) if n not in names]
    head = ["model", "tirc cold s", "tirc warm s", "inductor cold s", "cold / inductor", "warm / cold"]
    head += [f"{n} s" for n in names]
    lines = ["| " + " | ".join(head) + " |", "|" + " ---: |" * len(head)]
    for row in rows:
        cold = row["cold"]["total"]
        stages = _stages(row["cold"]["timings"])
        cells = [row["model"], f"{cold:.1f}", f"{row['warm']:.2f}", f"{row['inductor']:.1f}"]
        cells += [f"{cold / row['inductor']:.2f}", f"{row['warm'] / cold:.2f}"]
        cells += [f"{stages[n]:.2f}" if n in stages else "" for n in names]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _environment(device: str) -> str:
    import torch

    where = torch.cuda.get_device_name() if device == "cuda" else platform.processor() or platform.machine()
    try:
        import triton

        version = f", triton {triton.__version__}"
    except ImportError:
        version = ""
    return f"{where}, {os.cpu_count()} cores, torch {torch.__version__}{version}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    rows = measure(args.models.split(","), args.device, args.profile)
    lines = [f"Compile times ({_environment(args.device)}):", "", *table(rows)]
    print("\n".join(lines))
    if args.write:
        with args.write.open("a") as out:
            out.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
