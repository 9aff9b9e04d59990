"""What the scheduler acceptance run measures in its worker process, one
problem at a time: peak memory through the profiler (and its self-test), the
problem loaded as the benchmark convention says, tirc's compiled call against
eager with a float64 reference, and Inductor's kernel and extern counts read
from its output code. torch and tirc are imported inside the functions, after
scheduler.py's worker has put the repository first on sys.path."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path


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
