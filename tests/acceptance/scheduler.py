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
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from corpus import find_problems  # beside this script (its directory is on sys.path)

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


def _flat(out) -> list:
    import torch

    return [x for x in torch.utils._pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]


class _QuietStderr:
    """Send fd 2 to /dev/null (the profiler prints start/stop lines from C++)."""

    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)


def measure_peak(fn, inputs: list) -> int:
    """Peak bytes the CPU allocator holds, beyond what it held before, during one call of
    fn(*inputs) (after a warm-up call): allocations and frees in time order, summed."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        fn(*inputs)
        with _QuietStderr():
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                out = fn(*inputs)
            del out
    # kineto_results keeps every [memory] event; prof.events() folds those inside an op into it.
    events = [
        (e.start_ns(), k, e.nbytes())
        for k, e in enumerate(prof.profiler.kineto_results.events())
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    ]
    running = peak = 0
    for _, _, nbytes in sorted(events):
        running += nbytes
        peak = max(peak, running)
    return peak


def self_test() -> None:
    """The measurement on cases whose answer is known, before any problem is trusted to it."""
    import torch

    x = torch.randn(1000, 1000)
    one = measure_peak(lambda t: t + 1, [x])  # 4 MB, plus the 1 wrapped as a scalar tensor
    if not 4_000_000 <= one < 4_000_100:
        raise RuntimeError(f"peak-memory self-test: x + 1 on 1000x1000 f32 measured {one} bytes, not 4 MB")
    two = measure_peak(lambda t: (t + 1).exp(), [x])  # the sum, alive while exp's output is made
    if not 8_000_000 <= two < 8_000_100:
        raise RuntimeError(f"peak-memory self-test: (x + 1).exp() measured {two} bytes, not 8 MB")


def load_problem(path: Path):
    """(model, inputs): the model built under seed 0 in eval mode, inputs drawn under seed 1."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"scheduler_problem_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    torch.manual_seed(0)
    spec.loader.exec_module(module)
    init = getattr(module, "get_init_inputs", lambda: [])()
    model = module.Model(*init).eval()
    torch.manual_seed(1)
    inputs = list(module.get_inputs())
    return model, inputs


def float64_reference(model, inputs):
    """A callable giving the program's outputs computed in float64 (None where it cannot run)."""
    import copy

    import torch

    def reference():
        try:
            wide = copy.deepcopy(model).double()
            args = [x.double() if x.dtype == torch.float32 else x for x in inputs]
            with torch.no_grad():
                return _flat(wide(*args))
        except Exception:
            return None

    return reference


def _call_body(code: str) -> str:
    """The text of the wrapper's `call` function in Inductor's output code."""
    match = re.search(r"^([ \t]*)def call\(", code, re.M)
    if match is None:
        return ""
    indent = len(match.group(1))
    lines = code[match.end() :].splitlines()[1:]
    body = []
    for line in lines:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return "\n".join(body)


EXTERN_CALL = re.compile(r"(?<![\w.])(extern_kernels\.\w+|(?:torch\.ops\.)?aten\.[\w.]+)\(")


def inductor_counts(codes: list[str]) -> tuple[int, int, list[str]]:
    """(kernel launches, extern calls, extern names) in the `call` functions of Inductor's output code."""
    kernels = externs = 0
    names: list[str] = []
    for code in codes:
        defined = re.findall(r"^(\w+) = async_compile\.cpp(?:_pybinding)?\(", code, re.M)
        body = _call_body(code)
        for name in set(defined):
            kernels += len(re.findall(rf"(?<![\w.]){re.escape(name)}\(", body))
        found = EXTERN_CALL.findall(body)
        externs += len(found)
        names.extend(found)
    return kernels, externs, sorted(set(names))


def short(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:300]


def run_problem(path: Path) -> dict:
    """Everything measured in-process for one problem (each part's error recorded, not raised)."""
    from unittest import mock

    import torch
    import torch._inductor.config as inductor_config
    import torch._inductor.metrics as metrics
    from torch._inductor.graph import GraphLowering

    import tirc
    from tirc.compare import compare_outputs

    r: dict = {}
    try:
        model, inputs = load_problem(path)
        with torch.no_grad():
            expected = _flat(model(*inputs))
        r["peak_eager"] = measure_peak(model, inputs)
    except Exception as err:
        r["error"] = f"eager: {short(err)}"
        return r

    # tirc, through the API.
    try:
        fn = tirc.compile(model, inputs, backend="cpp")
        actual = _flat(fn(*inputs))
        mismatch = compare_outputs(actual, expected, float64_reference(model, inputs))
        r["api_match"] = mismatch is None
        if mismatch is not None:
            r["api_message"] = mismatch.message[:300]
        r["peak_tirc"] = measure_peak(fn, inputs)
        r["api_externs"] = list(fn.extern_ops)
    except Exception as err:
        r["api_match"] = False
        r["api_message"] = f"tirc.compile: {short(err)}"

    # Inductor's CPU backend.
    codes: list[str] = []
    try:
        torch._dynamo.reset()
        metrics.reset()
        with mock.patch.object(GraphLowering, "save_output_code", lambda code: codes.append(code)):
            with inductor_config.patch(fx_graph_cache=False, fx_graph_remote_cache=False):
                compiled = torch.compile(model, backend="inductor")
                with torch.no_grad():
                    out = _flat(compiled(*inputs))
        r["ind_counter"] = metrics.generated_kernel_count
        r["ind_kernels"], r["ind_externs"], r["ind_extern_names"] = inductor_counts(codes)
        r["ind_graphs"] = len(codes)
        mismatch = compare_outputs(out, expected)
        if mismatch is not None:
            r["ind_message"] = f"inductor vs eager: {mismatch.message[:200]}"
        r["peak_inductor"] = measure_peak(compiled, inputs)
    except Exception as err:
        r["ind_error"] = f"inductor: {short(err)}"
    finally:
        torch._dynamo.reset()
    return r


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


# --------------------------------------------------------------------------- the table


COLUMNS = (
    "problem",
    "check",
    "tirc kernels",
    "tirc externs",
    "inductor kernels",
    "inductor externs",
    "kernels ok",
    "peak eager",
    "peak tirc",
    "peak inductor",
    "planned peak",
    "peak ok",
    "note",
)


def kib(n) -> str:
    return "-" if n is None else f"{n / 1024:.1f}K"


def num(n) -> str:
    return "-" if n is None else str(n)


def make_row(name: str, cli: dict, r: dict) -> tuple[list[str], bool, dict]:
    """(cells, whether the row passes, its numbers for the totals)."""
    notes: list[str] = []
    check = cli["check"]
    if cli.get("message"):
        notes.append(cli["message"])
    if "error" in r:
        notes.append(r["error"])
    if r.get("api_match") is False:
        if check == "match":
            check = "api-mismatch"
        notes.append(f"api: {r.get('api_message', '')}")
    if "ind_error" in r:
        notes.append(r["ind_error"])
    if r.get("ind_message"):
        notes.append(r["ind_message"])
    if r.get("ind_graphs", 1) != 1:
        graphs = r["ind_graphs"]
        notes.append(
            "inductor: no graph (Dynamo ran it eagerly)" if graphs == 0 else f"inductor: {graphs} graphs"
        )
    fallbacks = [n for n in r.get("ind_extern_names", []) if not n.startswith("extern_kernels.")]
    if fallbacks:
        notes.append("inductor fallback: " + ", ".join(fallbacks))
    if r.get("ind_kernels") is not None and r.get("ind_counter") != r.get("ind_kernels"):
        notes.append(f"inductor generated_kernel_count {r.get('ind_counter')}")
    tk, ik = cli.get("kernels"), r.get("ind_kernels")
    kernels_ok = tk is not None and ik is not None and tk <= ik
    pe, pt = r.get("peak_eager"), r.get("peak_tirc")
    peak_ok = pe is not None and pt is not None and pt <= pe
    cells = [
        name,
        check,
        num(tk),
        num(cli.get("externs")),
        num(ik),
        num(r.get("ind_externs")),
        "yes" if kernels_ok else "NO",
        kib(pe),
        kib(pt),
        kib(r.get("peak_inductor")),
        kib(cli.get("plan_peak")),
        "yes" if peak_ok else "NO",
        "; ".join(notes),
    ]
    passed = check == "match" and "error" not in r and "ind_error" not in r and kernels_ok and peak_ok
    numbers = {
        "tirc kernels": tk,
        "tirc externs": cli.get("externs"),
        "inductor kernels": ik,
        "inductor externs": r.get("ind_externs"),
        "peak eager": pe,
        "peak tirc": pt,
        "peak inductor": r.get("peak_inductor"),
        "planned peak": cli.get("plan_peak"),
        "check": check == "match",
        "kernels ok": kernels_ok,
        "peak ok": peak_ok,
    }
    return cells, passed, numbers


def totals_row(rows: list[dict], passed: int) -> list[str]:
    def total(key, fmt):
        values = [r[key] for r in rows if r[key] is not None]
        missing = len(rows) - len(values)
        return fmt(sum(values)) + (f" ({missing} -)" if missing else "")

    def count(key):
        return f"{sum(r[key] for r in rows)}/{len(rows)}"

    return [
        "total",
        count("check"),
        total("tirc kernels", str),
        total("tirc externs", str),
        total("inductor kernels", str),
        total("inductor externs", str),
        count("kernels ok"),
        total("peak eager", kib),
        total("peak tirc", kib),
        total("peak inductor", kib),
        total("planned peak", kib),
        count("peak ok"),
        f"{passed}/{len(rows)} rows pass",
    ]


def format_text(table: list[list[str]], note_width: int = 90) -> str:
    cut = [
        row[:-1] + [row[-1] if len(row[-1]) <= note_width else row[-1][: note_width - 3] + "..."]
        for row in table
    ]
    widths = [max(len(row[k]) for row in cut) for k in range(len(COLUMNS))]
    lines = []
    for i, row in enumerate(cut):
        cells = [
            c.ljust(w) if k in (0, 1, len(COLUMNS) - 1) else c.rjust(w)
            for k, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
        if i == 0 or i == len(cut) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_markdown(table: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    header, *body = table
    align = ["---" if k in (0, 1, len(COLUMNS) - 1) else "---:" for k in range(len(COLUMNS))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for k, row in enumerate(body):
        cells = [cell(c) for c in row]
        if k == len(body) - 1:  # totals in bold
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
