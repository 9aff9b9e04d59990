"""The OpInfo sweep: every float32 CPU op in PyTorch's OpInfo database, compiled by
tirc's cpp backend and compared with eager (`make opinfo` writes docs/ops.md).

    python -m tests.opinfo.sweep                        # all ops, summary on stdout
    python -m tests.opinfo.sweep --ops add,nn.functional.relu --samples 1
    python -m tests.opinfo.sweep --limit 20 -j 2 --timeout 60
    python -m tests.opinfo.sweep --write docs/ops.md --json ops.json

For each op, up to --samples usable samples of `op.sample_inputs("cpu", float32)`
become programs `f(*tensors)` calling `op.op(input, *args, **kwargs)`: the tensor
leaves of the sample are f's inputs, everything else is closed over. Each program is
compiled with `tirc.compile(f, inputs, backend="cpp")` and its outputs compared with
eager's by `torch.testing.assert_close(..., equal_nan=True)` (the float32 defaults;
integer and bool outputs exactly). An op is

    lowered   every usable sample matched, and none called an ATen op as a fallback;
    fallback  every usable sample matched, and some sample ran an ATen fallback
              (the compiled callable's `fallback_ops`);
    failing   a sample failed to compile or run, mismatched, hung (timeout) or
              killed its worker (crashed), with a one-line reason;
    skipped   it has no usable sample (random, no tensor inputs, eager raises, ...).

Ops run in worker processes (-j of them) with a time limit per op, so a hang or a
crash marks that op failing instead of stopping the sweep. `run_op` is the same check
in-process (tests/opinfo/test_opinfo_subset.py uses it).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import itertools
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import shlex
import signal
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import torch
from torch.utils import _pytree as pytree

import tirc

STATUSES = ("lowered", "fallback", "failing", "skipped")

# Ops whose results are random or uninitialized memory, so eager and compiled cannot
# agree: samplers (rand*, normal, bernoulli, multinomial, cauchy, ...), dropout (random
# masks), rrelu (random slopes in training mode), fractional max pooling (random
# windows), randomized low-rank factorizations, and ops returning uninitialized memory
# (empty*, new_empty*, resize_*). Names are `OpInfo.name`, all variants included;
# substring matching would also catch deterministic ops such as nn.functional.normalize.
NONDETERMINISTIC_OPS = frozenset(
    {
        "bernoulli",
        "cauchy",
        "empty",
        "empty_like",
        "empty_permuted",
        "empty_strided",
        "exponential",
        "geometric",
        "log_normal",
        "multinomial",
        "new_empty",
        "new_empty_strided",
        "nn.functional.alpha_dropout",
        "nn.functional.dropout",
        "nn.functional.dropout2d",
        "nn.functional.dropout3d",
        "nn.functional.feature_alpha_dropout",
        "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d",
        "nn.functional.rrelu",
        "normal",
        "pca_lowrank",
        "rand_like",
        "randint",
        "randint_like",
        "randn",
        "randn_like",
        "resize_",
        "resize_as_",
        "svd_lowrank",
        "uniform",
    }
)

REPO = Path(__file__).resolve().parents[2]
COMPILER_PACKAGES = ("tirc", "ir_text", "lowering", "scheduler", "codegen", "repro")

# Unusable samples are passed over; at most this many samples per wanted sample are looked at.
SCAN_FACTOR = 4
REASON_WIDTH = 200


@dataclasses.dataclass
class OpResult:
    op: str  # OpInfo name, with ".variant" when the OpInfo has a variant_test_name
    status: str  # one of STATUSES
    reason: str = ""  # for failing and skipped ops
    samples: int = 0  # samples compiled and compared
    fallback_ops: tuple[str, ...] = ()  # ATen ops that ran as fallback calls (no lowering)
    extern_ops: tuple[str, ...] = ()  # extern calls by design (e.g. aten.mm)
    seconds: float = 0.0


class _Unusable(Exception):
    """The sample cannot be checked (the reason is why); it is passed over."""


RANDOM_ATEN = re.compile(
    r"\.(bernoulli|rand|randn|randint|normal|uniform|multinomial|exponential|geometric|cauchy|log_normal|poisson|native_dropout)"
)


def op_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def float32_ops() -> dict:
    """{op key: OpInfo} for the op_db entries with float32 CPU support, in op_db order."""
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ModuleNotFoundError as err:  # torch's test utilities need packages torch does not
        raise ModuleNotFoundError(f"{err}: the OpInfo database needs it (pip install {err.name})") from err

    ops = {}
    for op in op_db:
        if torch.float32 in op.supported_dtypes("cpu"):
            key = op_key(op)
            assert key not in ops, f"two OpInfos named {key}"
            ops[key] = op
    return ops


def select_ops(ops: dict, names: list[str] | None, limit: int | None) -> list[str]:
    """The op keys to run: `names` match a key exactly or an OpInfo name (all its variants)."""
    keys = list(ops)
    if names:
        unknown = [n for n in names if n not in ops and not any(ops[k].name == n for k in keys)]
        if unknown:
            raise SystemExit(f"unknown op(s): {', '.join(unknown)} (float32 CPU OpInfo names)")
        keys = [k for k in keys if k in names or ops[k].name in names]
    return keys[:limit] if limit is not None else keys


def _one_line(text: str) -> str:
    """The first line, with object ids and addresses masked so that reasons repeat across runs."""
    lines = str(text).strip().splitlines()
    line = " ".join(lines[0].split()) if lines else ""
    line = re.sub(r"\b0x[0-9a-fA-F]{6,}\b", "0x...", re.sub(r"\b\d{10,}\b", "<id>", line))
    return line if len(line) <= REASON_WIDTH else line[: REASON_WIDTH - 3] + "..."


def _describe(err: BaseException) -> str:
    """`Type: first line of the message`; for an internal error (not a TircError), the
    function of the compiler that raised it too."""
    if isinstance(err, tirc.TircError):
        # Its bare message: the `FILE:LINE:` prefix would point into this file.
        return f"{type(err).__name__}: {_one_line(err.message)}"
    message = _one_line(str(err))
    described = f"{type(err).__name__}: {message}" if message else type(err).__name__
    return described + _raised_in(err.__traceback__)


def _raised_in(tb) -> str:
    """` (in FILE:FUNCTION)` for the innermost frame in the repository's compiler packages."""
    where = ""
    for frame, _ in traceback.walk_tb(tb):
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(REPO) and path.relative_to(REPO).parts[0] in COMPILER_PACKAGES:
            where = f" (in {path.relative_to(REPO).as_posix()}:{frame.f_code.co_name})"
    return where


def _program(op, sample):
    """(f, tensors): f(*tensors) calls op.op on the sample with these tensor leaves."""
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [k for k, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    tensors = [leaves[k] for k in slots]
    if not tensors:
        raise _Unusable("no tensor inputs")
    if any(t.layout != torch.strided or type(t) is not torch.Tensor for t in tensors):
        raise _Unusable("a sparse, nested or subclass tensor input")
    callee = op.op

    def f(*inputs):
        filled = list(leaves)
        for k, t in zip(slots, inputs):
            filled[k] = t
        first, args, kwargs = pytree.tree_unflatten(filled, spec)
        return callee(first, *args, **kwargs)

    return f, tensors


def _is_tensor_tree(value) -> bool:
    if isinstance(value, torch.Tensor):
        return value.layout == torch.strided
    if isinstance(value, (tuple, list)):
        return len(value) > 0 and all(_is_tensor_tree(v) for v in value)
    return False


def _eager(f, tensors):
    """Eager's output on fresh clones, or _Unusable when it cannot serve as the expected result."""
    inputs = [t.clone() for t in tensors]
    versions = [t._version for t in inputs]
    try:
        with torch.no_grad():
            out = f(*inputs)
    except Exception as err:
        raise _Unusable(f"eager raised {_describe(err)}") from None
    # An in-place op returns (a view of) the input it mutated: comparing the outputs
    # alone would not check the mutation, so such samples are passed over.
    if any(t._version != v for t, v in zip(inputs, versions)):
        raise _Unusable("eager mutates an input in place")
    if not _is_tensor_tree(out):
        what = "a non-strided tensor" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"
        raise _Unusable(f"output is {what}, not a strided tensor or tuple/list of them")
    # A sample can be random where its op is not (sdpa with dropout_p > 0): eager
    # under another seed then gives other values, and no compiler could match.
    torch.manual_seed(12345)
    with torch.no_grad():
        again = f(*[t.clone() for t in tensors])
    if _mismatch(again, out) is not None:
        raise _Unusable("random output (two eager runs under different seeds differ)")
    return out


def _mismatch(got, want) -> str | None:
    """None when `got` matches eager's `want`, else a one-line reason."""
    got_leaves, want_leaves = pytree.tree_leaves(got), pytree.tree_leaves(want)
    if len(got_leaves) != len(want_leaves):
        return f"mismatch: {len(got_leaves)} outputs, eager has {len(want_leaves)}"
    for k, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        if not isinstance(g, torch.Tensor):
            return f"mismatch: output {k} is a {type(g).__name__}, not a tensor"
        try:
            torch.testing.assert_close(g, w, equal_nan=True)
        except AssertionError as err:
            return _difference(g, w) or f"mismatch: {_one_line(str(err))}"
    return None


def _difference(got: torch.Tensor, want: torch.Tensor) -> str | None:
    """The shape, dtype or largest difference (NaN against a number counts as inf)."""
    if got.shape != want.shape:
        return f"mismatch: shape {tuple(got.shape)}, eager {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"mismatch: dtype {got.dtype}, eager {want.dtype}"
    wide = torch.complex128 if want.is_complex() else torch.float64
    g, w = got.to(wide), want.to(wide)
    same = (g == w) | (g.isnan() & w.isnan())
    diff = torch.where(same, 0.0, (g - w).abs().nan_to_num(nan=float("inf"), posinf=float("inf")))
    largest = diff.max().item() if diff.numel() else 0.0
    return f"mismatch: max abs diff {largest:.3g}" if largest else None


def _check(f, tensors, want) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(failure reason or None, fallback ops, extern ops) of compiling and running f."""
    try:
        fn = tirc.compile(f, [t.clone() for t in tensors], backend="cpp")
        got = fn(*[t.clone() for t in tensors])
    except Exception as err:
        return _describe(err), (), ()
    fallback = tuple(getattr(fn, "fallback_ops", ()) or ())
    extern = tuple(getattr(fn, "extern_ops", ()) or ())
    return _mismatch(got, want), fallback, extern


def run_op(op, samples: int = 3) -> OpResult:
    """Compile up to `samples` usable samples of the OpInfo `op` and compare them with eager."""
    start = time.perf_counter()
    if op.name in NONDETERMINISTIC_OPS:
        result = OpResult(op_key(op), "skipped", "random or uninitialized output")
    else:
        result = _run_samples(op, samples)
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def _run_samples(op, samples: int) -> OpResult:
    key = op_key(op)
    torch.manual_seed(0)  # sample values are drawn from the global generator
    try:
        candidates = list(
            itertools.islice(
                op.sample_inputs("cpu", torch.float32, requires_grad=False), samples * SCAN_FACTOR
            )
        )
    except Exception as err:
        return OpResult(key, "skipped", f"sample_inputs raised {_describe(err)}")
    checked, failure, fallback, extern, passed_over = 0, None, set(), set(), []
    for sample in candidates:
        try:
            f, tensors = _program(op, sample)
            want = _eager(f, tensors)
        except _Unusable as why:
            passed_over.append(str(why))
            continue
        failure, fallback_ops, extern_ops = _check(f, tensors, want)
        random_ops = [name for name in extern_ops if RANDOM_ATEN.search(name)]
        if random_ops:
            # Seeded inside the OpInfo wrapper at trace time (sdpa's dropout):
            # eager replays that seed, a compiled program cannot.
            passed_over.append(f"random ATen op in the program ({random_ops[0]})")
            failure = None
            continue
        if failure is not None:
            break
        checked += 1
        fallback.update(fallback_ops)
        extern.update(extern_ops)
        if checked == samples:
            break
    if failure is not None:
        status, reason = "failing", failure
    elif not checked:
        status, reason = "skipped", passed_over[0] if passed_over else "no samples"
    else:
        status, reason = ("fallback" if fallback else "lowered"), ""
    return OpResult(key, status, reason, checked, tuple(sorted(fallback)), tuple(sorted(extern)))


# ---------------------------------------------------------------------------------------
# Worker processes: one op at a time each, killed and replaced on a timeout or a crash.


def _worker_main(conn, samples: int) -> None:
    warnings.simplefilter("ignore")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # generated code or ops printing must not garble the sweep's output
    ops = float32_ops()
    conn.send("ready")
    while True:
        try:
            key = conn.recv()
        except EOFError:
            return
        if key is None:
            return
        conn.send(dataclasses.asdict(run_op(ops[key], samples)))


class _Worker:
    def __init__(self, context, samples: int):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, samples), daemon=True)
        self.process.start()
        child.close()
        self.ready = False
        self.key: str | None = None  # the op it is running
        self.deadline = 0.0
        self.started = 0.0

    def assign(self, key: str, timeout: float) -> None:
        self.conn.send(key)
        self.key, self.started = key, time.monotonic()
        self.deadline = self.started + timeout

    def exit_reason(self) -> str:
        """Why the process ended (it has ended, or is killed here)."""
        self.process.join(5)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        code = self.process.exitcode
        if code is not None and code < 0:
            return f"crashed ({signal.Signals(-code).name})"
        return f"crashed (exit code {code})"

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def sweep(keys: list[str], samples: int = 3, jobs: int = 2, timeout: float = 60.0, progress=None):
    """OpResults of `keys` (op keys) run in `jobs` worker processes, in completion order."""
    context = multiprocessing.get_context("spawn")  # no fork of a process running OpenMP threads
    pending = collections.deque(keys)
    workers = [_Worker(context, samples) for _ in range(max(1, min(jobs, len(keys))))]
    results = []

    def finish(worker, result: OpResult) -> None:
        results.append(result)
        if progress:
            progress(len(results), len(keys), result)
        worker.key = None

    try:
        while pending or any(w.key for w in workers):
            for worker in workers:
                if worker.ready and worker.key is None and pending:
                    worker.assign(pending.popleft(), timeout)
            busy = [w for w in workers if w.key]
            wait = min((w.deadline for w in busy), default=time.monotonic() + 60) - time.monotonic()
            ready = multiprocessing.connection.wait([w.conn for w in workers], timeout=max(0.0, wait))
            for k, worker in enumerate(workers):
                if worker.conn in ready:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        if worker.key is None:
                            raise RuntimeError(
                                f"a sweep worker died between ops: {worker.exit_reason()}"
                            ) from None
                        seconds = round(time.monotonic() - worker.started, 3)
                        finish(worker, OpResult(worker.key, "failing", worker.exit_reason(), seconds=seconds))
                        worker.stop()
                        workers[k] = _Worker(context, samples)
                        continue
                    if message == "ready":
                        worker.ready = True
                    else:
                        message["fallback_ops"] = tuple(message["fallback_ops"])
                        message["extern_ops"] = tuple(message["extern_ops"])
                        finish(worker, OpResult(**message))
                elif worker.key and time.monotonic() > worker.deadline:
                    worker.process.kill()
                    finish(worker, OpResult(worker.key, "failing", "timeout", seconds=timeout))
                    worker.stop()
                    workers[k] = _Worker(context, samples)
    finally:
        for worker in workers:
            worker.stop()
    return results


# ---------------------------------------------------------------------------------------
# Reporting.


def summarize(results) -> dict:
    counts = collections.Counter(r.status for r in results)
    summary = {status: counts.get(status, 0) for status in STATUSES}
    tried = summary["lowered"] + summary["fallback"] + summary["failing"]
    summary["total"] = len(results)
    summary["pass_rate"] = (summary["lowered"] + summary["fallback"]) / tried if tried else 0.0
    return summary


def common_failures(results, count: int = 15) -> list[tuple[str, int]]:
    reasons = collections.Counter(r.reason for r in results if r.status == "failing")
    return sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:count]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(results, command: str, date: str, samples: int) -> str:
    summary = summarize(results)
    passed = summary["lowered"] + summary["fallback"]
    tried = passed + summary["failing"]
    lines = [
        "# OpInfo sweep: tirc's cpp backend against eager",
        "",
        f"Generated by `{command}` on {date} with torch {torch.__version__}.",
        "Regenerate it with `make opinfo`; do not edit by hand.",
        "",
        f"Each float32 CPU op of PyTorch's OpInfo database, up to {samples} samples each, compiled",
        'with `tirc.compile(f, inputs, backend="cpp")` and compared with eager by',
        "`torch.testing.assert_close(equal_nan=True)`. **lowered**: every sample matched with no",
        "ATen fallback; **fallback**: every sample matched and some ran an ATen op as a fallback",
        "call; **failing**: a sample raised, mismatched, timed out or crashed; **skipped**: no",
        "usable sample (random output, no tensor inputs, eager raises, ...).",
        "",
        "## Summary",
        "",
        "| status | ops |",
        "|---|---:|",
        *(f"| {status} | {summary[status]} |" for status in STATUSES),
        f"| total | {summary['total']} |",
        "",
        f"Pass rate (lowered + fallback) / (lowered + fallback + failing): "
        f"{100 * summary['pass_rate']:.1f}% ({passed}/{tried}).",
        "",
    ]
    failures = common_failures(results)
    if failures:
        lines += ["## Most common failure reasons", "", "| ops | reason |", "|---:|---|"]
        lines += [f"| {n} | {_cell(reason)} |" for reason, n in failures]
        lines.append("")
    lines += ["## Ops", "", "| op | status | fallback ops | reason |", "|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r.op):
        fallback = ", ".join(f"`{name}`" for name in r.fallback_ops)
        lines.append(f"| `{r.op}` | {r.status} | {fallback} | {_cell(r.reason)} |")
    return "\n".join(lines) + "\n"


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _print_progress(done: int, total: int, result: OpResult) -> None:
    detail = f": {result.reason}" if result.reason else ""
    if result.fallback_ops:
        detail += f" [{', '.join(result.fallback_ops)}]"
    width = len(str(total))
    print(
        f"[{done:{width}}/{total}] {result.op} {result.status} ({result.seconds:.1f}s){detail}",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m tests.opinfo.sweep", description=__doc__.split("\n")[0])
    parser.add_argument("--ops", help="comma-separated op names (OpInfo name, or name.variant)")
    parser.add_argument("--limit", type=int, help="only the first N ops (op_db order)")
    parser.add_argument("--samples", type=int, default=3, help="usable samples per op (default 3)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per op (default 60)")
    parser.add_argument("--write", type=Path, help="write the markdown report here (docs/ops.md)")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)

    ops = float32_ops()
    names = [n.strip() for n in args.ops.split(",") if n.strip()] if args.ops else None
    keys = select_ops(ops, names, args.limit)
    # One OpenMP thread per worker: -j workers share the machine (inherited by the workers).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    command = " ".join(["python -m tests.opinfo.sweep", *map(shlex.quote, argv)])
    date = datetime.date.today().isoformat()

    start = time.monotonic()
    results = sweep(keys, args.samples, args.jobs, args.timeout, progress=_print_progress)
    wall = time.monotonic() - start

    summary = summarize(results)
    print(
        f"{summary['total']} ops in {wall:.0f}s: {summary['lowered']} lowered, {summary['fallback']} fallback, "
        f"{summary['failing']} failing, {summary['skipped']} skipped; "
        f"pass rate {100 * summary['pass_rate']:.1f}%"
    )
    if args.write:
        write_atomically(args.write, render_markdown(results, command, date, args.samples))
        print(f"wrote {args.write}")
    if args.json:
        payload = {
            "command": command,
            "date": date,
            "torch": torch.__version__,
            "samples": args.samples,
            "summary": summary,
            "ops": [dataclasses.asdict(r) for r in sorted(results, key=lambda r: r.op)],
        }
        write_atomically(args.json, json.dumps(payload, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
