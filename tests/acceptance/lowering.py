"""Acceptance run of the lowering over a corpus of benchmark-convention problems.

    python tests/acceptance/lowering.py [PROBLEM ...] [-j N] [--timeout S]
                                        [--backend cpp|triton] [--device cpu|cuda] [--min-rate R]
    make acceptance-lowering

Each problem is a KernelBench-style file under tests/acceptance/problems/<category>/
(class Model, get_inputs, get_init_inputs; categories: single, fusion, models; see
problems/README.md). For each one this runs `python -m tirc compile FILE --check`
in a subprocess and classifies the outcome from its exit code: 0 match, 1
mismatch, 2 (or a crash) error, and timeout past --timeout seconds. A PROBLEM is
a path to a .py file or a directory, or a name under problems/ such as
`fusion`, `single/softmax` or `softmax`; none means the whole corpus.

Prints a table (problem, category, result, seconds, the last stderr line for
failures, and for matches the ATen ops that ran as fallback extern calls, read
from the lower-stage dump), then the counts and the pass rate (match / total)
overall and per category, and the fallback ops with the problems using each.
Exits 0 when the overall pass rate is at least --min-rate, else 1.
For --backend triton on a machine without a GPU, set TRITON_INTERPRET=1.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from corpus import find_problems  # beside this script (its directory is on sys.path)

PROBLEMS = Path(__file__).resolve().parent / "problems"
RESULTS = ("match", "mismatch", "error", "timeout")
EXTERN = re.compile(r"= extern (aten\.[\w.]+)\(")


def by_design_externs() -> frozenset[str]:
    """Extern calls that are not fallbacks (matmul, convolution), as the lowering names them."""
    # This script is itself named lowering.py: look for the package beyond its directory.
    here = Path(__file__).resolve().parent
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        from lowering import EXTERN_OPS
    except ImportError:
        return frozenset()
    finally:
        sys.path[:] = saved
    return frozenset(EXTERN_OPS)


@dataclass(frozen=True)
class Outcome:
    problem: str
    category: str
    result: str
    seconds: float
    message: str
    fallbacks: tuple[str, ...] = ()


def label(path: Path) -> tuple[str, str]:
    """(problem name, category): `fusion/swiglu` and `fusion` for problems/fusion/swiglu.py."""
    try:
        rel = path.resolve().relative_to(PROBLEMS)
    except ValueError:
        return path.stem, path.parent.name
    category = rel.parts[0] if len(rel.parts) > 1 else "other"
    return rel.with_suffix("").as_posix(), category


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def classify(returncode: int, stderr: str) -> tuple[str, str]:
    """(result, message) for a finished `tirc compile --check`."""
    message = last_line(stderr)
    if returncode == 0:
        return "match", ""
    if returncode == 1 and "Traceback" not in stderr:
        return "mismatch", message
    if returncode < 0:
        return "error", f"killed by signal {-returncode}" + (f": {message}" if message else "")
    return "error", message or f"exit code {returncode}, no message"


def fallbacks_in(dump_dir: Path, by_design: frozenset[str]) -> tuple[str, ...]:
    """The ATen ops the lower-stage dump calls as extern nodes, less those extern by design."""
    dumps = sorted(dump_dir.glob("*-lower.tir"))
    if not dumps:
        return ()
    return tuple(sorted(set(EXTERN.findall(dumps[0].read_text())) - by_design))


def run_one(
    path: Path, backend: str, timeout: float, by_design: frozenset[str], device: str = "cpu"
) -> Outcome:
    name, category = label(path)
    with tempfile.TemporaryDirectory(prefix="tirc-acceptance-") as dump_dir:
        command = [sys.executable, "-m", "tirc", "compile", str(path), "--check", "--backend", backend]
        command += ["--device", device]
        command += ["--dump-after", "lower", "--dump-dir", dump_dir]
        start = time.perf_counter()
        # A session of its own, so that a timeout also ends the compiler processes tirc started.
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return Outcome(name, category, "timeout", time.perf_counter() - start, f"over {timeout:g} s")
        seconds = time.perf_counter() - start
        result, message = classify(proc.returncode, stderr)
        fallbacks = fallbacks_in(Path(dump_dir), by_design)
    if result == "match" and fallbacks:
        message = "fallback: " + ", ".join(fallbacks)
    return Outcome(name, category, result, seconds, message, fallbacks)


def print_table(outcomes: list[Outcome]) -> None:
    width = max([len("problem"), *(len(o.problem) for o in outcomes)])
    cat_width = max([len("category"), *(len(o.category) for o in outcomes)])
    print(f"{'problem':<{width}}  {'category':<{cat_width}}  {'result':<8}  {'seconds':>7}  message")
    for o in outcomes:
        print(
            f"{o.problem:<{width}}  {o.category:<{cat_width}}  {o.result:<8}  {o.seconds:7.1f}  {o.message}"
        )


def summary_line(what: str, outcomes: list[Outcome]) -> str:
    counts = Counter(o.result for o in outcomes)
    parts = ", ".join(f"{counts[r]} {r}" for r in RESULTS if counts[r])
    pure = sum(o.result == "match" and not o.fallbacks for o in outcomes)
    parts += f"; {pure} match without fallbacks"
    rate = counts["match"] / len(outcomes) if outcomes else 0.0
    return f"{what:<10} {counts['match']:>3}/{len(outcomes):<3} pass rate {rate:6.1%}  ({parts})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help="problem files, directories or names (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="problems run in parallel (default 2)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per problem (default 300)")
    parser.add_argument("--backend", default="cpp", choices=("cpp", "triton"), help="default cpp")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="default cpu")
    parser.add_argument("--min-rate", type=float, default=0.95, help="pass rate needed to exit 0")
    args = parser.parse_args(argv)

    paths = find_problems(args.problems, PROBLEMS)
    if not paths:
        print("lowering.py: no problems found", file=sys.stderr)
        return 1
    start = time.perf_counter()
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        by_design = by_design_externs()
        futures = [pool.submit(run_one, p, args.backend, args.timeout, by_design, args.device) for p in paths]
        for done, future in enumerate(as_completed(futures), 1):
            o = future.result()
            outcomes.append(o)
            print(f"[{done}/{len(paths)}] {o.problem}: {o.result} ({o.seconds:.1f} s)", file=sys.stderr)
    wall = time.perf_counter() - start

    outcomes.sort(key=lambda o: (o.category, o.problem))
    print_table(outcomes)
    print()
    for category in sorted({o.category for o in outcomes}):
        print(summary_line(category, [o for o in outcomes if o.category == category]))
    print(summary_line("total", outcomes))
    users: dict[str, list[str]] = {}
    for o in outcomes:
        for op in o.fallbacks:
            users.setdefault(op, []).append(o.problem)
    if users:
        print("\nfallback ops (extern ATen calls for want of a lowering), by the problems using them:")
        for op, problems in sorted(users.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print(f"  {len(problems):3}  {op}: {', '.join(problems)}")
    rate = sum(o.result == "match" for o in outcomes) / len(outcomes)
    verdict = "pass" if rate >= args.min_rate else "FAIL"
    print(
        f"backend {args.backend}, -j {args.jobs}, wall {wall:.1f} s: {verdict} (min rate {args.min_rate:.0%})"
    )
    return 0 if rate >= args.min_rate else 1


if __name__ == "__main__":
    sys.exit(main())
