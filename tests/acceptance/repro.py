"""The repro tooling's acceptance run, through the CLI as a user would run it.

    python tests/acceptance/repro.py [PROBLEM.py ...]   (make acceptance-repro)

For each model (default: problems/models and problems/models2):
- miscompile: compile with `--option inject_fault=codegen:miscompile[:OP:N]`
  (the first corruptible op, and the last one), dump every stage with
  `--save-inputs`;
  `tirc reduce DUMP --until mismatch` on the capture, lower, fusion and
  memplan dumps, timed; the reduced dump must hold at most 5 ops, replay to a
  mismatch in output 0, and round-trip byte for byte (`tirc fmt --check`);
- crash: for each pass, `inject_fault=PASS:crash` must leave repro-PASS.tir,
  which replays to the same error line and round-trips.
Prints a row per run and a summary; exits 1 on any failure. Minutes per model.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from codegen.faults import CORRUPTIONS  # noqa: E402
from ir_text import LoopNode, is_float, parse  # noqa: E402
from repro import op_count  # noqa: E402
from tests.acceptance.corpus import find_problems  # noqa: E402

PROBLEMS = ROOT / "tests" / "acceptance" / "problems"
REDUCED_STAGES = ("01-capture", "02-lower", "04-fusion", "05-memplan")
PASSES = ("lower", "schedule", "fusion", "memplan", "codegen")
MAX_OPS, MAX_SECONDS = 5, 120.0


def tirc(*args, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd
    )


def late_fault(lower: Path) -> str | None:
    """`codegen:miscompile:OP@LINE` for the first corruptible op of the last
    source line that has one: deep in the model, and stable while the
    reducer removes the program around it (an ordinal `:N` would make it
    keep N ops of that name; without one, the fault moves to the next op
    of that name and line when its op goes, and stays a fault)."""
    module = parse(lower.read_text(), str(lower))
    ops = [
        (op.op, node.loc.line)
        for node in module.nodes
        if isinstance(node, LoopNode) and node.loc is not None
        for op in node.body
        if op.op in CORRUPTIONS and all(is_float(v.type) for v in op.operands)
    ]
    if not ops:
        return None
    last_line = ops[-1][1]
    name = next(name for name, line in ops if line == last_line)
    return f"codegen:miscompile:{name}@{last_line}"


def error_line(text: str) -> str:
    return next((line for line in text.splitlines() if "error" in line), "")


def reduce_row(name: str, fault: str, dump: Path, work: Path) -> tuple[bool, str]:
    out = work / f"{dump.stem}.min.tir"
    started = time.monotonic()
    proc = tirc("reduce", dump, "--until", "mismatch", "-o", out)
    seconds = time.monotonic() - started
    problems = []
    if proc.returncode != 0:
        return False, f"{name:28} {fault:28} {dump.stem:11} reduce failed: {error_line(proc.stderr)}"
    ops_before = op_count(parse(dump.read_text(), str(dump)))
    ops_after = op_count(parse(out.read_text(), str(out)))
    if ops_after > MAX_OPS:
        problems.append(f"{ops_after} ops")
    if seconds > MAX_SECONDS:
        problems.append(f"{seconds:.0f} s")
    # The same mismatch: in the failing output, which is output 0 once it stands alone.
    original = re.search(r"output (-?\d+)", tirc("replay", dump).stderr)
    reduced = parse(out.read_text(), str(out))
    want = "output 0" if len(reduced.outputs) == 1 else f"output {original.group(1) if original else '?'}"
    replay = tirc("replay", out)
    if replay.returncode != 1 or want not in replay.stderr:
        problems.append(f"replay exit {replay.returncode}, not a mismatch in {want}")
    if tirc("fmt", "--check", out).returncode != 0:
        problems.append("no round trip")
    status = "ok" if not problems else "FAIL " + ", ".join(problems)
    return (
        not problems,
        f"{name:28} {fault:28} {dump.stem:11} {ops_before:4} -> {ops_after:2} ops {seconds:6.1f} s  {status}",
    )


def dumps_with_fault(problem: Path, directory: Path, fault: str) -> subprocess.CompletedProcess:
    # --save-inputs: the dumps replay on the model's real values. Seeded N(0, 1)
    # values would give a BatchNorm negative variances, NaNs everywhere, and
    # NaN matches NaN: a miscompile would hide.
    return tirc(
        "compile", problem, "--save-inputs", "--dump-after=all", "--dump-dir", directory,
        "--option", f"inject_fault={fault}",
    )  # fmt: skip


def miscompile_rows(problem: Path, work: Path) -> list[tuple[bool, str]]:
    rows = []
    first = work / "first"
    proc = dumps_with_fault(problem, first, "codegen:miscompile")
    if proc.returncode != 0:
        return [(False, f"{problem.stem:28} compile failed: {error_line(proc.stderr)}")]
    faults = {"codegen:miscompile": first}
    fault = late_fault(first / "02-lower.tir")
    if fault is not None and dumps_with_fault(problem, work / "later", fault).returncode == 0:
        faults[fault] = work / "later"
    for fault, directory in faults.items():
        if tirc("replay", directory / "02-lower.tir").returncode == 0:
            # A corrupted op whose effect stays within tolerance (x + 1e-6 as x - 1e-6).
            rows.append((True, f"{problem.stem:28} {fault:28} {'':11} benign: no mismatch to reduce"))
            continue
        for stage in REDUCED_STAGES:
            rows.append(reduce_row(problem.stem, fault, directory / f"{stage}.tir", work))
    return rows


def crash_rows(problem: Path, work: Path) -> list[tuple[bool, str]]:
    rows = []
    for stage in PASSES:
        directory = work / f"crash-{stage}"
        proc = tirc("compile", problem, "--dump-dir", directory, "--option", f"inject_fault={stage}:crash")
        repro = directory / f"repro-{stage}.tir"
        problems = []
        if proc.returncode != 2 or not repro.is_file():
            problems.append(f"exit {proc.returncode}, reproducer {'there' if repro.is_file() else 'missing'}")
        else:
            replay = tirc("replay", repro)
            if replay.returncode != 2 or error_line(replay.stderr) != error_line(proc.stderr):
                problems.append(f"replay gives: {error_line(replay.stderr)}")
            if tirc("fmt", "--check", repro).returncode != 0:
                problems.append("no round trip")
        status = "ok" if not problems else "FAIL " + ", ".join(problems)
        rows.append((not problems, f"{problem.stem:28} {stage + ':crash':28} {'repro':11} {status}"))
    return rows


def main(argv: list[str]) -> int:
    problems = (
        find_problems(argv, PROBLEMS)
        if argv
        else (find_problems([], PROBLEMS / "models") + find_problems([], PROBLEMS / "models2"))
    )
    results = []
    for problem in problems:
        with tempfile.TemporaryDirectory(prefix="tirc-repro-") as tmp:
            ops = None
            capture = Path(tmp) / "capture"
            if (
                tirc(
                    "compile",
                    problem,
                    "--dump-after=capture",
                    "--dump-dir",
                    capture,
                    "--stop-after",
                    "capture",
                ).returncode
                == 0
            ):
                ops = op_count(parse((capture / "01-capture.tir").read_text(), "capture"))
            print(f"== {problem.relative_to(ROOT)}: {ops} capture ops", flush=True)
            for ok, row in miscompile_rows(problem, Path(tmp)) + crash_rows(problem, Path(tmp)):
                print(row, flush=True)
                results.append(ok)
    failed = results.count(False)
    print(f"\n{len(results) - failed}/{len(results)} checks ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
