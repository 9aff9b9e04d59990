"""The model benchmark: eager PyTorch, Inductor (torch.compile, default mode)
and tirc on whole models and model blocks (bench/model_zoo.py), in one process.

    python bench/models.py [--device cuda|cpu] [--dtype f32,bf16] [--only a,b] [--small]
                           [--write bench/RESULTS.md] [--out rows.jsonl] [--no-inductor] [--list]

Per model and dtype: the model is built once (eval mode, random parameters,
calibrated batch-norm statistics), compiled by Inductor and by tirc (Triton
backend on cuda, C++ on cpu) on one random input, each compile timed with
its first call and empty caches, then all three are checked and timed on a
fresh random input. The check follows torch._dynamo.utils.same's fp64_ref:
every result's relative error against the model run in float64 may be at
most MULTIPLIER times eager's own error plus the dtype's floor, so TF32
convolutions and bf16 rounding in eager do not fail a compiler that does as
well. Times are triton.testing.do_bench medians on cuda (as bench/gpu.py)
and interleaved medians on cpu (bench/common.py).

A failure in one model (compile error, mismatch) is reported in its row and
the run goes on; each row is printed as it completes (and, with --out,
appended as a JSON line), so a run cut short still shows what it measured.
`--small` runs tiny shapes on the CPU (`--device cuda` with no GPU runs
tirc's Triton code through the interpreter, without Inductor): a check of
the script, not a measurement.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tirc  # noqa: E402  (before triton: it picks the interpreter when there is no GPU)
from common import geomean, medians, table, write_section  # noqa: E402
from gpu import REL_TOL, _flat, _rel_error  # noqa: E402
import heldout2_zoo  # noqa: E402
import heldout3_zoo  # noqa: E402
import heldout4_zoo  # noqa: E402
import heldout5_zoo  # noqa: E402
import heldout6_zoo  # noqa: E402
import heldout7_zoo  # noqa: E402
import heldout_zoo  # noqa: E402  (bench/ is on sys.path, as for common and gpu)
import model_zoo  # noqa: E402
from model_zoo import GROUPS, ModelSpec  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# As torch._dynamo.utils.same with fp64_ref: 2x eager's error in float32, 3x in low precision.
MULTIPLIER = {torch.float32: 2.0, torch.bfloat16: 3.0}
BACKENDS = {"cuda": "triton", "cpu": "cpp"}
SECTIONS = {
    "cuda": ("gpu-models", "## GPU models (`bench/models.py`)"),
    "cpu": ("cpu-models", "## CPU models (`bench/models.py --device cpu`)"),
}
# The suite the work is measured by, and models kept aside from the tuning
# (bench/heldout_zoo.py), to check its figures on programs it did not see.
ZOOS = {
    "suite": model_zoo.suite,
    "heldout": heldout_zoo.suite,
    "heldout2": heldout2_zoo.suite,
    "heldout3": heldout3_zoo.suite,
    "heldout4": heldout4_zoo.suite,
    "heldout5": heldout5_zoo.suite,
    "heldout6": heldout6_zoo.suite,
    "heldout7": heldout7_zoo.suite,
}


@dataclass
class Row:
    model: str
    group: str
    dtype: str
    shapes: str
    eager_ms: float | None = None
    inductor_ms: float | None = None
    tirc_ms: float | None = None
    inductor_compile_s: float | None = None
    tirc_compile_s: float | None = None
    eager_error: float | None = None  # each relative to the float64 run
    inductor_error: float | None = None
    tirc_error: float | None = None
    match: bool = False
    status: str = "ok"

    @property
    def tirc_over_inductor(self) -> float | None:
        return self.tirc_ms / self.inductor_ms if self.tirc_ms and self.inductor_ms else None

    @property
    def tirc_over_eager(self) -> float | None:
        return self.tirc_ms / self.eager_ms if self.tirc_ms and self.eager_ms else None

    def record(self) -> dict:
        return asdict(self) | {
            "tirc_over_inductor": self.tirc_over_inductor,
            "tirc_over_eager": self.tirc_over_eager,
        }


@dataclass(frozen=True)
class Setup:
    """Where and how one run measures: the requested device, the torch device
    that runs it (cpu for an interpreted `--device cuda --small`) and the size."""

    device: str
    torch_device: str
    size: str
    inductor: bool
    channels_last: bool
    scratch: str

    @property
    def backend(self) -> str:
        return BACKENDS[self.device]


def _sync(setup: Setup) -> None:
    if setup.torch_device == "cuda":
        torch.cuda.synchronize()


def _timed(fn, setup: Setup) -> float:
    start = time.perf_counter()
    fn()
    _sync(setup)
    return time.perf_counter() - start


def _layout(t: torch.Tensor, setup: Setup) -> torch.Tensor:
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    return t.contiguous(memory_format=formats[t.dim()]) if setup.channels_last and t.dim() in formats else t


def _inputs(spec: ModelSpec, dtype, setup: Setup, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    shapes = spec.shapes[setup.size]
    return [_layout(torch.randn(s, generator=g).to(setup.torch_device, dtype), setup) for s in shapes]


def _prepare(spec: ModelSpec, dtype, setup: Setup, seed: int) -> torch.nn.Module:
    model = spec.build(seed).to(setup.torch_device, dtype)
    for p in model.parameters():  # Module.to(memory_format=...) takes one format for 4-D and 5-D alike
        p.data = _layout(p.data, setup)
    return model


def _reference(model, inputs):
    """The model run in float64 on the same (rounded) parameters and inputs."""
    wide = copy.deepcopy(model).double()
    return wide(*[x.double() for x in inputs])


def _error(got, want, ref) -> float:
    """got's relative error against the float64 run; inf where its shapes,
    dtypes or NaNs differ from eager's result `want`."""
    if _rel_error(got, want) == math.inf:
        return math.inf
    return _rel_error([t.double() for t in _flat(got)], _flat(ref))


def _within(error: float, eager_error: float, dtype) -> bool:
    return error <= MULTIPLIER[dtype] * eager_error + REL_TOL[dtype]


def _failure(err: Exception) -> str:
    text = str(err).splitlines()[0][:160] if str(err) else ""
    return f"{type(err).__name__}: {text}"


def _compile_inductor(model, example, setup: Setup):
    from torch._inductor.utils import fresh_cache

    torch._dynamo.reset()
    compiled = torch.compile(model)
    with fresh_cache():
        seconds = _timed(lambda: compiled(*example), setup)
    return compiled, seconds


def _compile_tirc(model, example, setup: Setup, key: str):
    with _cache_dir(os.path.join(setup.scratch, key)):
        start = time.perf_counter()
        program = tirc.compile(model, example, backend=setup.backend, device=setup.torch_device)
        program(*example)
        _sync(setup)
        return program, time.perf_counter() - start


@contextlib.contextmanager
def _cache_dir(path: str):
    """A cache of its own per model, so that every compile is cold (as Inductor's under fresh_cache())."""
    old = os.environ.get("TIRC_CACHE_DIR")
    os.environ["TIRC_CACHE_DIR"] = path
    try:
        yield
    finally:
        if old is None:
            del os.environ["TIRC_CACHE_DIR"]
        else:
            os.environ["TIRC_CACHE_DIR"] = old


def _times_ms(fns: dict, setup: Setup) -> dict:
    """Median milliseconds of each: do_bench on a GPU (as bench/gpu.py), interleaved rounds otherwise."""
    if setup.torch_device == "cuda":
        from triton.testing import do_bench

        return {k: do_bench(fn, warmup=50, rep=200, return_mode="median") for k, fn in fns.items()}
    quick = setup.size == "small"
    runs = medians(fns, min_runs=3 if quick else 10, budget_s=0.05 if quick else 1.5)
    return {k: v * 1e3 for k, v in runs.items()}


def measure(spec: ModelSpec, dtype_name: str, setup: Setup, seed: int) -> Row:
    """One row: compile both, check all three against float64, time them."""
    dtype = DTYPES[dtype_name]
    row = Row(
        spec.name, spec.group, dtype_name, " ".join("x".join(map(str, s)) for s in spec.shapes[setup.size])
    )
    model = _prepare(spec, dtype, setup, seed)
    example, fresh = _inputs(spec, dtype, setup, 2 * seed + 1), _inputs(spec, dtype, setup, 2 * seed + 2)
    ref, want = _reference(model, fresh), model(*fresh)
    row.eager_error = _error(want, want, ref)
    fns = {"eager": lambda: model(*fresh)}
    problems: dict = {}  # compiler -> what went wrong
    for name, compile_one in _compilers(setup, f"{spec.name}-{dtype_name}"):
        try:
            compiled, seconds = compile_one(model, example, setup)
            setattr(row, f"{name}_compile_s", seconds)
            error = _error(compiled(*fresh), want, ref)
            setattr(row, f"{name}_error", error)
            if not _within(error, row.eager_error, dtype):
                problems[name] = f"{name} mismatch"
            fns[name] = lambda compiled=compiled: compiled(*fresh)
        except Exception as err:  # one row per model, whatever breaks
            problems[name] = f"{name} {_failure(err)}"
    for name, ms in _times_ms(fns, setup).items():
        setattr(row, f"{name}_ms", ms)
    row.match = "tirc" not in problems and row.tirc_ms is not None
    row.status = "; ".join(problems.values()) or "ok"
    return row


def _compilers(setup: Setup, key: str) -> list:
    tirc_compile = ("tirc", lambda m, x, s: _compile_tirc(m, x, s, key))
    return ([("inductor", _compile_inductor)] if setup.inductor else []) + [tirc_compile]


def measure_safely(spec: ModelSpec, dtype_name: str, setup: Setup, seed: int) -> Row:
    """measure(), with anything that escapes it (building, eager, out of memory) in the row."""
    try:
        with torch.no_grad():
            return measure(spec, dtype_name, setup, seed)
    except Exception as err:
        shapes = " ".join("x".join(map(str, s)) for s in spec.shapes[setup.size])
        return Row(spec.name, spec.group, dtype_name, shapes, status=f"setup {_failure(err)}")
    finally:
        torch._dynamo.reset()
        if setup.torch_device == "cuda":
            torch.cuda.empty_cache()


# --- report -------------------------------------------------------------------------------------------


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _cells(r: Row) -> list[str]:
    return [
        r.model,
        r.group,
        r.dtype,
        r.shapes,
        _cell(r.eager_ms, ".3f"),
        _cell(r.inductor_ms, ".3f"),
        _cell(r.tirc_ms, ".3f"),
        _cell(r.tirc_over_inductor, ".2f"),
        _cell(r.tirc_over_eager, ".2f"),
        f"{_cell(r.inductor_compile_s, '.1f')} / {_cell(r.tirc_compile_s, '.1f')}",
        f"{_cell(r.tirc_error, '.1e')} ({_cell(r.eager_error, '.1e')})",
        "yes" if r.match and r.status == "ok" else ("yes; " + r.status if r.match else "NO: " + r.status),
    ]


HEADER = [
    "model",
    "group",
    "dtype",
    "input",
    "eager ms",
    "inductor ms",
    "tirc ms",
    "tirc/inductor",
    "tirc/eager",
    "compile s: inductor / tirc",
    "tirc error (eager's)",
    "match",
]


def _geomeans(rows: list[Row], key) -> str:
    groups: dict = {}
    for r in rows:
        if r.tirc_over_inductor is not None and r.match:
            groups.setdefault(key(r), []).append(r.tirc_over_inductor)
    return ", ".join(f"{k} {geomean(v):.3f} ({len(v)})" for k, v in groups.items()) or "-"


def summary(rows: list[Row]) -> list[str]:
    # Mismatched rows stay out of the means: a wrong result's speed means nothing.
    ratios = [r for r in rows if r.tirc_over_inductor is not None and r.match]
    worst = max(ratios, key=lambda r: r.tirc_over_inductor, default=None)
    slower = [
        f"{r.model} {r.dtype} {r.tirc_over_eager:.2f}" for r in rows if r.match and r.tirc_over_eager > 1
    ]
    order = {g: k for k, g in enumerate(GROUPS)}
    by_group = sorted(rows, key=lambda r: order[r.group])
    return [
        f"- geometric mean tirc/inductor: {_geomean_text(ratios)}",
        f"- per group: {_geomeans(by_group, lambda r: r.group)}",
        f"- per dtype: {_geomeans(rows, lambda r: r.dtype)}",
        f"- worst tirc/inductor: {f'{worst.model} {worst.dtype} {worst.tirc_over_inductor:.2f}' if worst else '-'}",
        f"- slower than eager (tirc/eager): {', '.join(slower) or 'none'}",
        f"- tirc mismatches or failures: {', '.join(f'{r.model} {r.dtype}' for r in rows if not r.match) or 'none'}",
        "- other problems: "
        + (
            "; ".join(f"{r.model} {r.dtype}: {r.status}" for r in rows if r.match and r.status != "ok")
            or "none"
        ),
    ]


def _geomean_text(ratios: list[Row]) -> str:
    n = len(ratios)
    return f"{geomean(r.tirc_over_inductor for r in ratios):.3f} over {n} matching rows" if ratios else "-"


def machine(setup: Setup) -> str:
    import triton

    if setup.torch_device == "cuda":
        where = f"GPU: {torch.cuda.get_device_name()}"
    elif setup.device == "cuda":
        where = "cpu (Triton interpreter)"
    else:
        from cpu import machine as cpu_machine

        return f"Machine: {cpu_machine()}, triton {triton.__version__}"
    return f"{where}; torch {torch.__version__}; triton {triton.__version__}"


def report(rows: list[Row], setup: Setup, startup: float) -> str:
    layout = "channels-last" if setup.channels_last else "contiguous (NCHW)"
    return "\n".join(
        [
            machine(setup) + ".",
            f"Inputs {layout}; sizes `{setup.size}`; compile times are cold (empty caches) and include the "
            f"first call; errors are relative to a float64 run. Start-up (first graph, not in the table): "
            f"{startup:.1f} s.",
            "",
            table(HEADER, [_cells(r) for r in rows]),
            "",
            *summary(rows),
        ]
    )


# --- main ---------------------------------------------------------------------------------------------


def _setup(args, parser, scratch: str) -> Setup:
    has_gpu = torch.cuda.is_available()
    device = args.device or ("cuda" if has_gpu else "cpu")
    if device == "cuda" and not has_gpu and not args.small:
        parser.error("no CUDA GPU: --device cuda runs without one only with --small")
    torch_device = "cuda" if device == "cuda" and has_gpu else "cpu"
    # Inductor compiles for the machine it runs on: beside an interpreted Triton run it would measure nothing.
    inductor = not args.no_inductor and torch_device == device
    size = "small" if args.small else device
    return Setup(device, torch_device, size, inductor, args.channels_last, scratch)


def _selected(args, parser) -> list[ModelSpec]:
    specs = ZOOS[args.zoo]()
    if not args.only:
        return specs
    wanted = [n.strip() for n in args.only.split(",")]
    unknown = sorted(set(wanted) - {s.name for s in specs})
    if unknown:
        parser.error(f"no model named {', '.join(unknown)} (see --list)")
    return [s for s in specs if s.name in wanted]


def _dtypes(args, parser, device: str) -> list[str]:
    names = (args.dtype or ("f32,bf16" if device == "cuda" else "f32")).split(",")
    bad = [n for n in names if n not in DTYPES]
    if bad:
        parser.error(f"unknown dtype {', '.join(bad)} (choose from {', '.join(DTYPES)})")
    return names


def _list(specs: list[ModelSpec], size: str) -> str:
    rows = [[s.name, s.group, " ".join("x".join(map(str, t)) for t in s.shapes[size]), s.note] for s in specs]
    return table(["model", "group", f"input ({size})", "note"], rows)


def _warm_up(setup: Setup) -> float:
    """Both compilers' process start-up on an unrelated graph, so that the first row is not charged with it."""
    x = [torch.randn(64, 64, device=setup.torch_device)]
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).to(setup.torch_device)
    start = time.perf_counter()
    with torch.no_grad():
        for _, compile_one in _compilers(setup, "warm-up"):
            compile_one(model, x, setup)
    return time.perf_counter() - start


def run(specs, dtypes, setup: Setup, out: Path | None) -> tuple[list[Row], float]:
    startup = _warm_up(setup)
    print(f"start-up {startup:.1f} s", flush=True)
    rows = []
    # Dtype by dtype: a run cut short by a time limit has every model in the first dtype.
    for dtype_name in dtypes:
        for k, spec in enumerate(specs):
            row = measure_safely(spec, dtype_name, setup, seed=k)
            rows.append(row)
            print(" | ".join(_cells(row)), flush=True)
            if out is not None:
                with out.open("a") as f:
                    f.write(json.dumps(row.record()) + "\n")
    return rows, startup


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=sorted(BACKENDS), help="default: cuda when available")
    parser.add_argument("--dtype", help="comma-separated: f32,bf16 (default: f32, and bf16 on cuda)")
    parser.add_argument("--only", help="comma-separated model names (see --list)")
    parser.add_argument("--zoo", choices=sorted(ZOOS), default="suite", help="the models (default: suite)")
    parser.add_argument("--small", action="store_true", help="tiny shapes on the CPU: a check of the script")
    parser.add_argument(
        "--write", type=Path, help="markdown file whose gpu-models or cpu-models section gets the table"
    )
    parser.add_argument("--out", type=Path, help="append each row as a JSON line as it completes")
    parser.add_argument("--no-inductor", action="store_true", help="eager and tirc only")
    parser.add_argument("--channels-last", action="store_true", help="channels-last inputs and parameters")
    parser.add_argument("--list", action="store_true", help="list the models and their input shapes")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    specs = _selected(args, parser)
    with tempfile.TemporaryDirectory(prefix="tirc-models-") as scratch:
        setup = _setup(args, parser, scratch)
        if args.list:
            print(_list(specs, setup.size))
            return 0
        rows, startup = run(specs, _dtypes(args, parser, setup.device), setup, args.out)
    section, title = SECTIONS[setup.device]
    if args.zoo != "suite":
        section, title = f"{section}-{args.zoo}", f"{title}, held-out models (`--zoo {args.zoo}`)"
    text = report(rows, setup, startup)
    print()
    print(text)
    if args.write:
        write_section(args.write, section, f"{title}\n\n{text}")
    return 0 if all(r.match for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
