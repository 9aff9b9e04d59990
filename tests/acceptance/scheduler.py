"""Acceptance run of the scheduler: tirc's kernel counts and peak memory beside Inductor's CPU backend.

    python tests/acceptance/scheduler.py [PROBLEM ...] [--problems DIR] [--timeout S]
                                         [--markdown FILE] [--keep-dumps DIR]
    make acceptance-scheduler

Each problem is a benchmark-convention file (class Model, get_inputs,
get_init_inputs) under --problems (default tests/acceptance/problems/patterns,
a corpus of fusion patterns). A PROBLEM is a file name (`softmax_lastdim`), a
path to a .py file, or a directory; none means every file under --problems.

For each problem:
- tirc through the CLI: `python -m tirc compile FILE --check --dump-after all
  --dump-dir D` in a subprocess (timeout --timeout); its exit code gives the
  `check` column (match / mismatch / error / timeout), and D/manifest.json's
  memplan entry the loop kernels, the extern calls and (when present) the
  planned peak ("peak_bytes").
- tirc through the API, in a worker process: the model built under
  torch.manual_seed(0) (eval mode), inputs drawn under torch.manual_seed(1),
  `tirc.compile(model, inputs, backend="cpp")` called and compared with eager
  with tirc.compare's tolerances (float64 reference as `tirc compile --check`).
- Inductor's CPU backend in the same worker: `torch.compile(model,
  backend="inductor")` (FX graph cache off, so every graph is really
  compiled). Its kernels are the C++ kernel launches in the generated
  `call()`, its externs the extern_kernels.* / aten.* calls there (the output
  code is captured through GraphLowering.save_output_code).
  `torch._inductor.metrics.generated_kernel_count` is shown beside it: on the
  CPU it counts the inner loop nests of an outer-loop-fused kernel one by one
  (a softmax is 1 kernel and counts 4), so it is not the number of kernels.
- Peak memory, measured the same way for eager, tirc's compiled call and
  Inductor's compiled call, after a warm-up call, under torch.no_grad(): the
  CPU allocator's allocations and frees during one call, as the profiler
  records them (torch.profiler, profile_memory=True), summed in time order;
  the peak is the largest running sum. Inputs and parameters exist before the
  call and are not counted; outputs are. Memory that compiled C++ code takes
  with malloc or on its stack is not seen (for tirc or Inductor alike).

Prints a table (problem, check, tirc kernels/externs, Inductor kernels/externs,
kernels ok = tirc <= Inductor, peak eager/tirc/Inductor, tirc's planned peak,
peak ok = tirc <= eager, a note) with totals. `--markdown FILE` writes the
same table as Markdown. Exits 1 if any row fails a check (a mismatch, an error
in tirc or Inductor, more kernels than Inductor, a higher peak than eager),
else 0. A problem that fails to compile, or crashes the worker, is a row with
the error; the run goes on with the next problem.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Beside this script (its directory is on sys.path).
from corpus import find_problems
from scheduler_measure import run_problem, self_test, short
from scheduler_table import COLUMNS, format_markdown, format_text, make_row, totals_row

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_PROBLEMS = HERE / "problems" / "patterns"
MARK = "@@scheduler-result@@ "


# --------------------------------------------------------------------------- problems


def problem_name(path: Path, directory: Path) -> str:
    try:
        return path.resolve().relative_to(directory.resolve()).with_suffix("").as_posix()
    except ValueError:
        return path.stem


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("USDT:")]
    return lines[-1] if lines else ""


# --------------------------------------------------------------------------- tirc CLI


def run_cli(path: Path, timeout: float, keep: Path | None) -> dict:
    """`tirc compile FILE --check` with all dumps; the check result and the memplan entry's counts."""
    result: dict = {"check": "error", "kernels": None, "externs": None, "plan_peak": None, "message": ""}
    with tempfile.TemporaryDirectory(prefix="tirc-scheduler-") as tmp:
        dump_dir = keep / path.stem if keep is not None else Path(tmp)
        command = [sys.executable, "-m", "tirc", "compile", str(path), "--check", "--backend", "cpp"]
        command += ["--dump-after", "all", "--dump-dir", str(dump_dir)]
        # A session of its own, so that a timeout also ends the compiler processes tirc started.
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            result.update(check="timeout", message=f"tirc compile over {timeout:g} s")
            return result
        message = last_line(stderr)
        if proc.returncode == 0:
            result["check"] = "match"
        elif proc.returncode == 1 and "Traceback" not in stderr:
            result.update(check="mismatch", message=message)
        elif proc.returncode < 0:
            result["message"] = f"tirc compile killed by signal {-proc.returncode}"
        else:
            result["message"] = message or f"tirc compile exit code {proc.returncode}"
        try:
            manifest = json.loads((dump_dir / "manifest.json").read_text())
        except (OSError, ValueError):
            return result
        for entry in manifest.get("files", []):
            if entry.get("stage") == "memplan":
                result["kernels"] = entry.get("kernels")
                result["externs"] = entry.get("extern_calls")
                result["plan_peak"] = entry.get("peak_bytes")
    return result


# --------------------------------------------------------------------------- worker side


def worker(paths: list[Path]) -> int:
    """Run each problem and print one marked JSON line per problem on stdout."""
    # Run as a script, this directory comes first on sys.path, and its lowering.py
    # would hide tirc's `lowering` package.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        self_test()
    except Exception as err:
        print(MARK + json.dumps({"fatal": short(err)}), flush=True)
        return 1
    for path in paths:
        print(MARK + json.dumps({"start": str(path)}), flush=True)
        try:
            result = run_problem(path)
        except Exception as err:  # a bug of the harness itself: still one row
            result = {"error": f"harness: {short(err)}", "traceback": traceback.format_exc()[-2000:]}
        print(MARK + json.dumps({"done": str(path), "result": result}), flush=True)
    return 0


# --------------------------------------------------------------------------- driver side


class Worker:
    """A worker process over a list of problems, whose marked lines are read with a timeout."""

    def __init__(self, paths: list[Path], log: Path):
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", *map(str, paths)]
        self.log = log
        self.err = open(log, "a")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            env=env,
            start_new_session=True,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.lines.put(json.loads(line[len(MARK) :]))
        self.lines.put(None)

    def next(self, timeout: float):
        """The next message; None when the worker exited; raises queue.Empty on timeout."""
        return self.lines.get(timeout=timeout)

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.err.close()

    def last_error(self) -> str:
        try:
            return last_line(self.log.read_text()[-20000:])
        except OSError:
            return ""


def run_workers(paths: list[Path], timeout: float, log: Path, progress) -> dict[Path, dict]:
    """The in-process results for every path, restarting the worker after a crash or a timeout."""
    results: dict[Path, dict] = {}
    pending = list(paths)
    while pending:
        w = Worker(pending, log)
        current: Path | None = None
        started = time.monotonic()
        try:
            while True:
                # The first problem also waits for imports and the measurement's self-test.
                budget = timeout + (120 if current is None else 0)
                try:
                    msg = w.next(max(1.0, budget - (time.monotonic() - started)))
                except queue.Empty:
                    path = current or pending[0]
                    results[path] = {"error": f"worker: over {timeout:g} s"}
                    pending.remove(path)
                    progress(path, results[path])
                    break
                if msg is None:  # exited: a crash, or the end
                    if current is not None:
                        code = w.proc.wait()
                        why = f"signal {-code}" if code < 0 else f"exit code {code}"
                        last = w.last_error()
                        results[current] = {
                            "error": f"worker crashed ({why})" + (f": {last}" if last else "")
                        }
                        pending.remove(current)
                        progress(current, results[current])
                    elif pending:
                        for path in pending:
                            results[path] = {"error": f"worker exited: {w.last_error()}"[:300]}
                        pending.clear()
                    break
                if "fatal" in msg:
                    raise SystemExit(f"scheduler.py: {msg['fatal']}")
                if "start" in msg:
                    current = Path(msg["start"])
                    started = time.monotonic()
                elif "done" in msg:
                    path = Path(msg["done"])
                    results[path] = msg["result"]
                    pending.remove(path)
                    progress(path, results[path])
                    current = None
                    started = time.monotonic()
                    if not pending:
                        break
        finally:
            w.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help="problem names, files or directories (default: all)")
    parser.add_argument(
        "--problems",
        dest="directory",
        type=Path,
        default=DEFAULT_PROBLEMS,
        help=f"the corpus (default {DEFAULT_PROBLEMS.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds per problem and per part (default 600)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table as Markdown to this file")
    parser.add_argument("--keep-dumps", type=Path, help="keep tirc's dumps under DIR/<problem>/")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        return worker([Path(p) for p in args.problems])

    paths = find_problems(args.problems, args.directory)
    if not paths:
        print(f"scheduler.py: no problems found under {args.directory}", file=sys.stderr)
        return 1
    start = time.perf_counter()
    done = [0]

    def progress(path: Path, result: dict) -> None:
        done[0] += 1
        status = result.get("error") or result.get("ind_error") or "measured"
        print(f"[{done[0]}/{len(paths)}] {problem_name(path, args.directory)}: {status}", file=sys.stderr)

    # The CLI runs (one at a time) go on beside the worker, on the second core.
    with tempfile.TemporaryDirectory(prefix="tirc-scheduler-log-") as logs:
        with ThreadPoolExecutor(max_workers=1) as pool:
            cli_futures = {p: pool.submit(run_cli, p, args.timeout, args.keep_dumps) for p in paths}
            results = run_workers(paths, args.timeout, Path(logs) / "worker.log", progress)
            cli_results = {p: f.result() for p, f in cli_futures.items()}

    table = [list(COLUMNS)]
    numbers = []
    passed = 0
    for path in paths:
        cells, ok, nums = make_row(problem_name(path, args.directory), cli_results[path], results[path])
        table.append(cells)
        numbers.append(nums)
        passed += ok
    table.append(totals_row(numbers, passed))
    print(format_text(table))
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(format_markdown(table))
    wall = time.perf_counter() - start
    verdict = "pass" if passed == len(paths) else "FAIL"
    print(f"\n{passed}/{len(paths)} rows pass all checks; wall {wall:.0f} s: {verdict}")
    return 0 if passed == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
