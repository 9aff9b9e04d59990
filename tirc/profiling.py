"""`--profile`: the compiled program run under torch.profiler, its time
attributed to each kernel launch and extern call (docs/cli.md, "Profiling").

While the profile is taken, the loaded module's kernels, its backend's
launcher (codegen's Backend.launcher) and its `runtime.extern_call` are
stand-ins that run each launch inside a `record_function` range named
`tirc:k0` or `tirc:aten.mm.default`; the generated code is the same, and
the module is put back as it was afterwards. A range's time is its wall
time on the CPU and, on CUDA, the device time of the GPU kernels launched
inside it (the profiler correlates each kernel with the range around its
launch). The total is measured apart, without the profiler: the median wall
time of `call` (on CUDA, per call of batches launched back to back, the
device synchronized around each batch), against which the attributed sum
is set. Bytes moved are the memory plan's estimate: the storage of every buffer
a launch reads or writes, each once."""

from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import time
import types
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.autograd import DeviceType

from codegen import backend_named, launched_kernels
from ir_text import Module, TircError, resolve_target, to_torch
from lowering import copy_with_layout

from .api import gc_paused
from .files import atomic_path

RANGE = "tirc:"
WARM_UP = 3  # calls before anything is timed: the first ones build, tune and cache
# (seconds, fewest runs, most runs) of each measurement, taken in ROUNDS
# rounds of each: the total's runs are cheap, the profiled ones cost the
# profiler's parsing of their events.
TOTAL_RUNS = (1.0, 20, 1000)
PROFILED_RUNS = (0.5, 10, 100)
ROUNDS = 10
# Calls per timed batch of the total on CUDA (_steady_times).
BATCH = 10
# Runs at the start of each round that are not counted, as long as they
# take less than SETTLE_SECONDS: after the profiler's own work (starting,
# parsing events) the next calls of a short program run slower, for several
# calls (docs/design-notes.md, "Profiling").
SETTLE, SETTLE_SECONDS = 3, 0.01
UNATTRIBUTED = "unattributed (wrapper: allocation, input checks, Python)"


def wanted(args) -> bool:
    """Whether the command asks for a profile (`--profile` or `--profile-trace`)."""
    return bool(getattr(args, "profile", False) or getattr(args, "profile_trace", None))


def check_flags(args) -> None:
    """Refuse, before anything is compiled, what cannot be profiled: a compile
    that stops before code is generated, a training compile (two programs),
    a trace file whose directory is not there."""
    if not wanted(args):
        return
    if getattr(args, "train", False):
        raise TircError(
            "--profile: a training compile is two programs; profile one of them by replaying its dump"
            " (tirc replay DIR/forward/05-memplan.tir --profile)",
            file="tirc",
        )
    stop_after = getattr(args, "stop_after", None)
    if stop_after not in (None, "memplan"):
        raise TircError(
            f"--profile runs the compiled program, and --stop-after {stop_after} stops before code is generated",
            file="tirc",
        )
    trace = getattr(args, "profile_trace", None)
    if trace is not None and not Path(trace).resolve().parent.is_dir():
        raise TircError(f"--profile-trace {trace}: no such directory", file="tirc")


def profile_command(args, compiled, options, inputs: list[torch.Tensor], writer=None) -> None:
    """After a compile or replay: profile the compiled program on `inputs`,
    print the table on stderr, record it in the manifest (`writer`, the dump
    directory's DumpWriter) and write the trace that `--profile-trace` names."""
    if not wanted(args):
        return
    trace = getattr(args, "profile_trace", None)
    profile = profile_program(
        compiled.load(), compiled.module, inputs, options.backend, options.device, trace
    )
    for line in table(profile):
        print(line, file=sys.stderr)
    if writer is not None:
        writer.add_profile(profile)


def profile_program(
    loaded, module: Module, inputs: list[torch.Tensor], backend: str, device: str, trace: str | None = None
) -> dict:
    """The profile of `loaded.call` (the generated module of the memplan-stage
    `module`) on copies of `inputs`: the manifest's "profile" object."""
    inputs = [copy_with_layout(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    call = loaded.call
    totals: list[float] = []
    per_run: dict[str, tuple[list[float], int]] = {}
    with torch.no_grad(), _gc_off():
        per_call = min(_wall_times(call, inputs, device, WARM_UP)[1:] or [1.0])
        total_runs = -(-_runs(per_call, *TOTAL_RUNS) // ROUNDS)
        runs = -(-_runs(per_call, *PROFILED_RUNS) // ROUNDS)
        settle = _runs(per_call, SETTLE_SECONDS, 0, SETTLE)
        # In rounds, so that a change of the machine's load between the
        # measurements weighs on the total and the profiled runs alike.
        for k in range(ROUNDS):
            totals += _steady_times(call, inputs, device, settle, total_runs)
            with _instrumented(loaded, module, backend):
                events = _profiled(call, inputs, device, settle + runs, trace if k == ROUNDS - 1 else None)
            for name, (times, calls) in _per_run(events, settle + runs, device).items():
                per_run.setdefault(name, ([], calls))[0].extend(times[settle:])
    measured = {name: (statistics.median(times), calls) for name, (times, calls) in per_run.items()}
    return _summary(planned_launches(module), measured, runs * ROUNDS, statistics.median(totals) * 1e6)


def _runs(per_call: float, seconds: float, least: int, most: int) -> int:
    return max(least, min(most, int(seconds / max(per_call, 1e-9))))


@contextlib.contextmanager
def _gc_off():
    """No collection in the middle of a timed call (as timeit does): what
    is garbage now is collected first, then the collector is paused."""
    gc.collect()
    with gc_paused():
        yield


def _synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _wall_times(call, inputs: list, device: str, runs: int) -> list[float]:
    """Seconds of each of `runs` calls, each started with the device idle and
    ended when it is idle again; the outputs are dropped after the clock stops."""
    times = []
    for _ in range(runs):
        _synchronize(device)
        start = time.perf_counter()
        outputs = call(list(inputs))
        _synchronize(device)
        times.append(time.perf_counter() - start)
        del outputs
    return times


def _steady_times(call, inputs: list, device: str, settle: int, runs: int) -> list[float]:
    """Seconds per call once `settle` calls have run: on the CPU, of each
    call; on CUDA, of batches of BATCH calls launched back to back, the
    device synchronized only around each batch, so that the host's work for
    a call (allocation, input checks, launches) overlaps the device's work
    for the one before, as in a training or serving loop and as Triton's
    do_bench measures. A call synchronized alone would add the host's time
    and the launch latency to every call of a program the device bounds."""
    if device != "cuda":
        return _wall_times(call, inputs, device, settle + runs)[settle:]
    _wall_times(call, inputs, device, settle)
    times = []
    for _ in range(max(1, runs // BATCH)):
        _synchronize(device)
        start = time.perf_counter()
        for _ in range(BATCH):
            outputs = call(list(inputs))
            del outputs
        _synchronize(device)
        times.append((time.perf_counter() - start) / BATCH)
    return times


def _profiled(call, inputs: list, device: str, runs: int, trace: str | None):
    """The profiler's events of `runs` calls; the Chrome trace written to `trace`."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with warnings.catch_warnings():
        # torch 2.11 warns that each profile keeps its own events only: that is what is wanted.
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
        with torch.profiler.profile(activities=activities) as prof:
            _wall_times(call, inputs, device, runs)
    if trace is not None:
        _export_trace(prof, Path(trace))
    return prof.events()


def _export_trace(prof, path: Path) -> None:
    """prof.export_chrome_trace, through a temporary file beside `path`
    renamed over it: never half a trace."""
    with atomic_path(path.resolve()) as tmp:
        prof.export_chrome_trace(str(tmp))


# ---- the stand-ins

# A range as record_function makes it, without its cost: record_function
# spends about 6 us inside the range it opens (measured in
# docs/design-notes.md, "Profiling"), which a kernel of a few microseconds
# would be charged; Inductor's kernels use the fast one too.
_range = getattr(torch._C._profiler, "_RecordFunctionFast", torch.profiler.record_function)


class _Timed:
    """A kernel's stand-in: each call runs inside its kernel's range. A
    backend's launcher gets one as its kernel argument, and unwraps it."""

    def __init__(self, symbol: str, kernel):
        self.range = RANGE + symbol
        self.kernel = kernel

    def __call__(self, *args):
        with _range(self.range):
            return self.kernel(*args)


def _timed_launcher(launch):
    def launch_timed(kernel, *args, **kwargs):
        if not isinstance(kernel, _Timed):
            return launch(kernel, *args, **kwargs)
        with _range(kernel.range):
            return launch(kernel.kernel, *args, **kwargs)

    return launch_timed


def _timed_runtime(runtime):
    """The generated code's `runtime` (codegen/runtime.py) with its
    extern_call run inside a range named by the ATen op."""
    extern_call = runtime.extern_call

    def extern_call_timed(op, *args):
        with _range(RANGE + str(op)):
            return extern_call(op, *args)

    return types.SimpleNamespace(**{**vars(runtime), "extern_call": extern_call_timed})


@contextlib.contextmanager
def _instrumented(loaded, module: Module, backend: str):
    """`loaded`'s kernels, launcher and runtime replaced by stand-ins, and put back afterwards."""
    space = vars(loaded)
    stand_ins = {
        name: _Timed(symbol, space[name]) for name, symbol in launched_kernels(module, space).items()
    }
    launcher = backend_named(backend).launcher
    if launcher is not None and launcher in space:
        stand_ins[launcher] = _timed_launcher(space[launcher])
    if "runtime" in space:
        stand_ins["runtime"] = _timed_runtime(space["runtime"])
    saved = {name: space[name] for name in stand_ins}
    space.update(stand_ins)
    try:
        yield
    finally:
        space.update(saved)


# ---- what the plan says, what was measured


@dataclass
class Planned:
    """A kernel's or an extern op's launches in one run of the memory plan."""

    kind: str  # "kernel" or "extern"
    calls: int = 0
    bytes: int = 0


def planned_launches(module: Module) -> dict[str, Planned]:
    """Each loop kernel (by its symbol) and each extern op (by its ATen name:
    the calls of one op are one row) that the wrapper runs, with the bytes
    its launches move: the storage of each buffer a launch reads or writes,
    once (an in-place output and the input it overwrites: twice). An extern
    op that returns a view of its argument (its schema says so) moves none."""
    kernels = {k.name.name: k for k in module.kernels or ()}
    nodes = {id(n.result): n for n in module.nodes}
    planned: dict[str, Planned] = {}
    for line in module.wrapper or ():
        if line.op == "launch":
            name, kind, moved = line.kernel.name, "kernel", _bytes_moved(line)
        elif line.op == "extern":
            node = nodes[id(kernels[line.kernel.name].nodes[0])]
            name, kind = node.target, "extern"
            moved = 0 if _returns_view(node.target) else _bytes_moved(line)
        else:
            continue
        entry = planned.setdefault(name, Planned(kind))
        entry.calls += 1
        entry.bytes += moved
    return planned


def _bytes_moved(line) -> int:
    values = {id(v): v for v in (*line.operands, *line.results)}.values()
    return sum(v.type.storage_size * to_torch(v.type.dtype).itemsize for v in values)


def _returns_view(target: str) -> bool:
    overload = resolve_target(target)
    return overload is not None and all(r.alias_info is not None for r in overload._schema.returns)


def _per_run(events, runs: int, device: str) -> dict[str, tuple[list[float], int]]:
    """Name -> (microseconds of each run, calls per run) of each range in
    the events of `runs` profiled runs."""
    ranges: dict[str, list] = {}
    for event in events:
        # On CUDA the profiler mirrors each range on the GPU's timeline too.
        if event.device_type == DeviceType.CPU and event.name.startswith(RANGE):
            ranges.setdefault(event.name[len(RANGE) :], []).append(event)
    out = {}
    for name, found in ranges.items():
        found.sort(key=lambda e: e.time_range.start)
        times = [_device_us(e) if device == "cuda" else e.cpu_time_total for e in found]
        calls, left = divmod(len(times), runs)
        if left:  # not one set of launches per run (never, for generated code): the mean
            out[name] = ([sum(times) / runs] * runs, round(len(times) / runs))
            continue
        out[name] = ([sum(times[r * calls : (r + 1) * calls]) for r in range(runs)], calls)
    return out


def _device_us(event) -> float:
    """The device time of the kernels launched inside `event` and its
    children (an extern's ATen ops), without the ranges' own mirror."""
    own = sum(k.duration for k in event.kernels if not k.name.startswith(RANGE))
    return own + sum(_device_us(child) for child in event.cpu_children)


def _summary(planned: dict[str, Planned], measured: dict, runs: int, total_us: float) -> dict:
    rows = []
    # A name only measured can come from extern_call alone: kernels' stand-ins are the plan's.
    for name in [*planned, *(n for n in measured if n not in planned)]:
        plan = planned.get(name, Planned("extern"))
        us, calls = measured.get(name, (0.0, plan.calls))
        rows.append(
            {
                "name": name,
                "kind": plan.kind,
                "calls": calls,
                "us": round(us, 3),
                "share": round(us / total_us, 4) if total_us > 0 else 0.0,
                "bytes": plan.bytes,
                "gbps": round(plan.bytes / us / 1e3, 3) if us > 0 else 0.0,
            }
        )
    rows.sort(key=lambda row: (-row["us"], row["name"]))
    attributed = sum(row["us"] for row in rows)
    return {
        "runs": runs,
        "total_us": round(total_us, 3),
        "attributed_us": round(attributed, 3),
        "unattributed_us": round(total_us - attributed, 3),
        "kernels": rows,
    }


# ---- the table


def table(profile: dict) -> list[str]:
    """The lines `--profile` prints on stderr."""
    total = profile["total_us"]
    rows = [
        (r["name"], r["kind"], str(r["calls"]), r["us"], _size(r["bytes"]), f"{r['gbps']:.1f}")
        for r in profile["kernels"]
    ]
    rows += [
        ("attributed", "", "", profile["attributed_us"], "", ""),
        (UNATTRIBUTED, "", "", profile["unattributed_us"], "", ""),
        ("total (median wall time of call)", "", "", total, "", ""),
    ]
    width = max(len(row[0]) for row in rows)
    lines = [
        f"tirc: profile ({profile['runs']} profiled runs, medians per run)",
        f"  {'name':<{width}}  {'kind':<6}  calls         us   share      bytes     GB/s",
    ]
    for name, kind, calls, us, size, gbps in rows:
        share = 100.0 * us / total if total > 0 else 0.0
        lines.append(
            f"  {name:<{width}}  {kind:<6}  {calls:>5}  {us:9.1f}  {share:5.1f}%  {size:>9}  {gbps:>7}".rstrip()
        )
    return lines


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
