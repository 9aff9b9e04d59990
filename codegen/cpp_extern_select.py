"""Choosing the library that runs a CPU matmul, by timing, at compile time
(Inductor's algorithm selection, for extern calls).

A float32 `aten.addmm` / `aten.mm` of a row-major activation and a
transposed row-major weight (what `nn.Linear` lowers to) has two
implementations in PyTorch's CPU build: ATen's, which calls the BLAS (MKL),
and oneDNN's `mkldnn._linear_pointwise`. Which is faster depends on the
processor: MKL picks its AVX-512 kernels on Intel processors only, so on an
AMD one oneDNN's is much faster (measured: docs/design-notes.md, "C++
kernels"). Both are timed on random inputs of the call's shapes; oneDNN
replaces the ATen op only when it is faster by more than MARGIN, so noise
keeps ATen's.

The choice is made at the end of the lower stage, as a rewrite the lower
dump shows:

    %buf1 = extern mkldnn._linear_pointwise.default(%x, %up.weight, %up.bias, "none", [], "") : ...

so a re-fed dump runs what it says and never times anything: the dumps
from lower on are the same program on every machine. A fresh compile is
not: the choice, and so the count of extern calls it reports (oneDNN's
linear needs no transposing view of the weight), depends on the processor;
TIRC_AUTOTUNE=0 gives ATen's op everywhere. oneDNN's linear has no float64
kernel: the reference interpreter runs it in float64 as ATen's addmm
(lowering/float64_equivalents.py), for replay's float64 second look; only
the "none" post-op emitted here has that stand-in. Winners are
cached as JSON under `TIRC_CACHE_DIR/extern-select/`, keyed by the shapes,
the processor, the thread count and torch's version, and written atomically
under a filelock: compiling the same program again reads them back and
generates the same bytes.

Nothing is timed for other backends or devices, with TIRC_AUTOTUNE=0, or
where torch has no oneDNN: ATen's op stays.
"""

from __future__ import annotations

import functools
import os
import statistics
import time

import torch

from ir_text import ExternNode, Module, Value
from scheduler import users

from .timed_records import timed_record

ONEDNN_LINEAR = "mkldnn._linear_pointwise.default"
AS_STRIDED = "aten.as_strided.default"
MARGIN = 0.10
# Timing stops once one candidate is this much faster over ROUNDS_MIN rounds
# or more (a run of each), after ROUNDS_MAX rounds, or after TIME_BUDGET_S
# seconds of runs; and after ROUNDS_BEHIND rounds in which oneDNN is not
# ahead by half of MARGIN, as it would have to gain the other half in the
# rounds left (a close race otherwise runs to the budget, a large part of a
# cold compile). One round is not clear: a single slow first run (a thread
# waking up) can make oneDNN look clearly faster where it is slower.
# (Measured: docs/design-notes.md, "C++ kernels".)
CLEAR_RATIO = 1.25
ROUNDS_MIN = 3
ROUNDS_MAX = 7
ROUNDS_BEHIND = 2
TIME_BUDGET_S = 0.02


def enabled(device: str) -> bool:
    """Whether compiling for this device times matmul libraries: a CPU whose
    torch has oneDNN's linear."""
    if device != "cpu" or os.environ.get("TIRC_AUTOTUNE") == "0":
        return False
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def extern_target(device: str) -> str:
    """What the choices depend on beyond the program: the processor, the
    thread count and torch's version ("" when nothing is timed)."""
    return _machine() if enabled(device) else ""


def _machine() -> str:
    return f"{_processor()} threads {torch.get_num_threads()} torch {torch.__version__}"


def select_externs(module: Module, device: str, timer=None) -> Module:
    """Rewrite each linear-shaped matmul to oneDNN's linear where that times
    faster. `timer(run) -> seconds` (default: one call's wall time) is for
    tests, which choose with made-up times."""
    if timer is None:
        if not enabled(device):
            return module
        timer = _one_run
    producers = {id(r): n for n in module.nodes for r in n.results}
    rewritten, bypassed = [], set()
    for node in module.nodes:
        linear = _linear_operands(node, producers)
        if linear is not None and _onednn_wins(*linear, timer):
            x, weight, bias = linear
            bypassed.add(id(producers[id(node.args[-1])]))
            node = ExternNode(node.results, ONEDNN_LINEAR, (x, weight, bias, "none", (), ""), (), node.loc)
        rewritten.append(node)
    module.nodes = rewritten
    return _without_unused(module, bypassed)


def _linear_operands(node, producers) -> tuple[Value, Value, Value | None] | None:
    """(x, weight, bias) of an addmm/mm computing x @ weight.T + bias with a
    row-major float32 x [M, K] and weight [N, K] (the second operand an
    `aten.as_strided` transposing it) and a bias [N] or none; else None."""
    if node.kind != "extern" or node.kwargs:
        return None
    if node.target == "aten.addmm.default" and len(node.args) == 3:
        bias, x, weight_t = node.args
    elif node.target == "aten.mm.default" and len(node.args) == 2:
        bias, (x, weight_t) = None, node.args
    else:
        return None
    if not all(isinstance(v, Value) for v in (x, weight_t)) or not isinstance(bias, (Value, type(None))):
        return None
    if len(x.type.shape) != 2 or len(weight_t.type.shape) != 2:
        return None
    (m, k), (_, n) = x.type.shape, weight_t.type.shape
    view = producers.get(id(weight_t))
    if view is None or view.kind != "extern" or view.target != AS_STRIDED or len(view.args) != 3:
        return None
    weight = view.args[0]
    layouts = [(x, (m, k), (k, 1)), (weight_t, (k, n), (1, k)), (weight, (n, k), (k, 1))]
    if bias is not None:
        layouts.append((bias, (n,), (1,)))
    for value, shape, strides in layouts:
        layout = (tuple(value.type.shape), tuple(value.type.strides), value.type.dtype)
        if layout != (shape, strides, "f32"):
            return None
    return x, weight, bias


def _onednn_wins(x: Value, weight: Value, bias: Value | None, timer) -> bool:
    (m, k), n = x.type.shape, weight.type.shape[0]
    parts = ["linear f32", repr((m, k, n, bias is not None)), _machine()]

    def measure() -> dict:
        times = _time_candidates(m, k, n, bias is not None, timer)
        winner = ONEDNN_LINEAR if times[ONEDNN_LINEAR] < times["aten"] * (1 - MARGIN) else "aten"
        return {"shape [M, K, N]": [m, k, n], "bias": bias is not None, "times_s": times, "winner": winner}

    def valid(record: dict) -> bool:
        return record.get("winner") in (ONEDNN_LINEAR, "aten")

    return timed_record("extern-select", parts, measure, valid)["winner"] == ONEDNN_LINEAR


def _time_candidates(m: int, k: int, n: int, has_bias: bool, timer) -> dict[str, float]:
    """Median seconds of each candidate on random inputs of the shapes."""
    gen = torch.Generator().manual_seed(0)
    x = _random_matrix(m, k, gen)
    weight = _random_matrix(n, k, gen)
    bias = torch.randn(n, generator=gen) if has_bias else None

    def aten():
        if bias is None:
            return torch.ops.aten.mm.default(x, weight.t())
        return torch.ops.aten.addmm.default(bias, x, weight.t())

    def onednn():
        return torch.ops.mkldnn._linear_pointwise.default(x, weight, bias, "none", [], "")

    with torch.no_grad():
        try:
            # The first calls set the libraries up; a candidate that fails or
            # disagrees never wins.
            if not torch.allclose(onednn(), aten(), rtol=1e-3, atol=1e-3 * k**0.5):
                return {"aten": 0.0, ONEDNN_LINEAR: float("inf")}
        except RuntimeError:
            return {"aten": 0.0, ONEDNN_LINEAR: float("inf")}
        times: dict[str, list[float]] = {"aten": [], ONEDNN_LINEAR: []}
        spent = 0.0
        # Alternate single runs until one candidate is clearly ahead
        # (CLEAR_RATIO), oneDNN cannot win any more (ROUNDS_BEHIND),
        # ROUNDS_MAX rounds pass or TIME_BUDGET_S is spent: a cold compile
        # pays for every run.
        for rounds in range(1, ROUNDS_MAX + 1):
            for name, run in (("aten", aten), (ONEDNN_LINEAR, onednn)):
                times[name].append(float(timer(run)))
            spent += times["aten"][-1] + times[ONEDNN_LINEAR][-1]
            ours, theirs = statistics.median(times["aten"]), statistics.median(times[ONEDNN_LINEAR])
            clear = rounds >= ROUNDS_MIN and max(ours, theirs) > min(ours, theirs) * CLEAR_RATIO
            if clear or spent > TIME_BUDGET_S:
                break
            if rounds >= ROUNDS_BEHIND and theirs > ours * (1 - MARGIN / 2):
                break
    return {name: statistics.median(t) for name, t in times.items()}


def _random_matrix(rows: int, cols: int, gen) -> torch.Tensor:
    """A matrix whose entries vary along both dimensions (a random column plus
    a random row), so a candidate that mixes up the layout disagrees; built
    from rows + cols random numbers, as a cold compile pays for them all
    (measured: docs/design-notes.md, "C++ kernels")."""
    return torch.randn(rows, 1, generator=gen) + torch.randn(1, cols, generator=gen)


def _one_run(run) -> float:
    """Seconds of one call of run()."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


@functools.lru_cache(maxsize=None)
def _processor() -> str:
    """The processor's model name (which library is faster depends on it)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _without_unused(module: Module, bypassed: set[int]) -> Module:
    """Drop the transposing views the rewrite bypassed that nothing reads any more."""
    user_map = users(module)
    module.nodes = [n for n in module.nodes if id(n) not in bypassed or user_map[id(n.results[0])]]
    return module
