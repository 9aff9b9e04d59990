"""The training benchmark: one step (forward, loss, backward) of eager
PyTorch, Inductor (torch.compile, default mode) and tirc (torch.compile with
backend="tirc": AOTAutograd's forward and backward graphs, each compiled by
tirc), side by side in one run.

    python bench/train.py --device cpu|cuda [--write bench/RESULTS.md] [--only mlp,...] [--small]

Each implementation trains its own copy of the same model; a step is
`zero_grad(set_to_none=True)`, the forward, the loss and `backward()` (the
optimizer step is eager for everyone, so it is left out). Every gradient is
checked against eager's on the first step: the largest difference over the
largest eager gradient of the model, which must stay under 1e-4 (fp32), or
2e-3 where convolutions run in TF32 (the GPU's default).
Times are medians of interleaved steps (CPU: bench/common.py's rounds; GPU:
each step synchronized). Peak memory is the allocator's peak over one step
beyond what the model and its inputs hold (GPU only). Compile time is the
first step's time less an eager step's.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import geomean, medians, table, write_section  # noqa: E402
from tirc.dynamo import tirc_backend  # noqa: E402 (the callable: works without the package installed)

GRADIENT_TOLERANCE = 1e-4
TF32_TOLERANCE = 2e-3  # TF32 keeps 10 mantissa bits: about 1e-3 relative


class MLP(nn.Module):
    def __init__(self, width: int, depth: int, classes: int):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.GELU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


class Block(nn.Module):
    """A GPT-2-style block: causal attention, layer norms, a GELU MLP."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class BasicBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + x)


class ResNetStack(nn.Module):
    def __init__(self, c: int, blocks: int, classes: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.blocks = nn.Sequential(*[BasicBlock(c) for _ in range(blocks)])
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class LMHead(nn.Module):
    """Hidden states to vocabulary logits (cross-entropy is the loss)."""

    def __init__(self, d: int, vocab: int):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        return self.head(self.ln(x))


@dataclass(frozen=True)
class Workload:
    name: str
    make: Callable  # (device, small) -> (model, inputs, targets)
    loss: Callable  # (outputs, targets) -> loss


def _classes_loss(out, targets):
    return F.cross_entropy(out.flatten(0, -2).float(), targets.flatten())


def _mse_loss(out, targets):
    return F.mse_loss(out, targets)


def _mlp(device, small):
    batch, width = (8, 64) if small else ((256, 1024) if device == "cpu" else (4096, 4096))
    return MLP(width, 3, 100), [torch.randn(batch, width)], torch.randint(0, 100, (batch,))


def _block(device, small):
    b, t, d, h = (2, 16, 32, 2) if small else ((4, 128, 256, 4) if device == "cpu" else (16, 512, 768, 12))
    return Block(d, h), [torch.randn(b, t, d)], torch.randn(b, t, d)


def _resnet(device, small):
    b, c, s = (2, 8, 8) if small else ((8, 32, 32) if device == "cpu" else (64, 64, 56))
    return ResNetStack(c, 2 if small else 4, 10), [torch.randn(b, 3, s, s)], torch.randint(0, 10, (b,))


def _lm_head(device, small):
    n, d, v = (16, 32, 100) if small else ((512, 256, 8192) if device == "cpu" else (8192, 768, 50257))
    return LMHead(d, v), [torch.randn(n, d)], torch.randint(0, v, (n,))


WORKLOADS = [
    Workload("mlp", _mlp, _classes_loss),
    Workload("transformer_block", _block, _mse_loss),
    Workload("resnet_basic_blocks", _resnet, _classes_loss),
    Workload("cross_entropy_head", _lm_head, _classes_loss),
]


@dataclass
class Row:
    name: str
    times: dict  # implementation -> median step seconds
    compile_s: dict
    peak: dict  # implementation -> bytes (GPU), or {}
    error: dict  # implementation -> largest gradient difference / largest gradient
    tf32: bool = False  # convolutions ran in TF32


def _stepper(model, run, inputs, targets, loss_fn):
    def step():
        model.zero_grad(set_to_none=True)
        loss_fn(run(*inputs), targets).backward()

    return step


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _gradient_error(model, reference) -> float:
    scale = max(q.grad.abs().max().item() for q in reference.parameters() if q.grad is not None)
    worst = 0.0
    for p, q in zip(model.parameters(), reference.parameters()):
        if q.grad is None:
            continue
        if p.grad is None:
            return float("inf")
        worst = max(worst, (p.grad.float() - q.grad.float()).abs().max().item())
    return worst / scale


def _gpu_medians(steps: dict, runs: int = 30) -> dict:
    times = {name: [] for name in steps}
    for _ in range(runs):
        for name, step in steps.items():
            torch.cuda.synchronize()
            t = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _peak(step, device) -> int | None:
    if device != "cuda":
        return None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def run_workload(w: Workload, device: str, small: bool, inductor: bool) -> Row:
    torch.manual_seed(0)
    model, inputs, targets = w.make(device, small)
    model = model.to(device).train()
    inputs = [x.to(device) for x in inputs]
    targets = targets.to(device)
    backends = {"eager": None, "tirc": tirc_backend}
    if inductor:
        backends["inductor"] = "inductor"
    models, steps, compile_s = {}, {}, {}
    for name, backend in backends.items():
        models[name] = copy.deepcopy(model)
        run = models[name] if backend is None else torch.compile(models[name], backend=backend)
        steps[name] = _stepper(models[name], run, inputs, targets, w.loss)
        _sync(device)
        start = time.perf_counter()
        steps[name]()  # the first step compiles
        _sync(device)
        compile_s[name] = time.perf_counter() - start
    error = {name: _gradient_error(models[name], models["eager"]) for name in backends if name != "eager"}
    eager_step = compile_s["eager"]
    compile_s = {name: max(0.0, s - eager_step) for name, s in compile_s.items() if name != "eager"}
    times = _gpu_medians(steps) if device == "cuda" else medians(steps, min_runs=10, budget_s=3.0)
    peak = {name: _peak(step, device) for name, step in steps.items()} if device == "cuda" else {}
    convolutions = any(isinstance(m, nn.Conv2d) for m in model.modules())
    tf32 = device == "cuda" and convolutions and torch.backends.cudnn.allow_tf32
    return Row(w.name, times, compile_s, peak, error, tf32)


def _matches(r: Row) -> bool:
    """tirc's gradients are as close to eager's as the tolerance allows: 1e-4
    of the largest gradient in float32, TF32_TOLERANCE where convolutions
    run in TF32 (a GPU's default, torch.backends.cudnn.allow_tf32): two TF32
    algorithms (tirc's channels-last, eager's NCHW) differ by about 1e-3.
    tests/gpu/gpu_training.py checks the same models with TF32 off."""
    return r.error["tirc"] < (TF32_TOLERANCE if r.tf32 else GRADIENT_TOLERANCE)


def report(rows: list[Row], device: str, inductor: bool) -> list[str]:
    header = ["workload", "eager ms", "tirc ms", "tirc / eager"]
    if inductor:
        header += ["Inductor ms", "tirc / Inductor"]
    if device == "cuda":
        header += ["peak MB eager", "peak MB tirc"] + (["peak MB Inductor"] if inductor else [])
    header += ["tirc compile s"] + (["Inductor compile s"] if inductor else []) + ["grad error tirc"]
    header += (["grad error Inductor"] if inductor else []) + ["status"]
    lines = []
    for r in rows:
        t = r.times
        cells = [r.name, f"{1e3 * t['eager']:.3f}", f"{1e3 * t['tirc']:.3f}", f"{t['tirc'] / t['eager']:.3f}"]
        if inductor:
            cells += [f"{1e3 * t['inductor']:.3f}", f"{t['tirc'] / t['inductor']:.3f}"]
        if device == "cuda":
            names = ["eager", "tirc"] + (["inductor"] if inductor else [])
            cells += [f"{r.peak[n] / 2**20:.1f}" for n in names]
        cells += [f"{r.compile_s['tirc']:.1f}"] + ([f"{r.compile_s['inductor']:.1f}"] if inductor else [])
        cells += [f"{r.error['tirc']:.1e}"] + ([f"{r.error['inductor']:.1e}"] if inductor else [])
        cells += ["ok" if _matches(r) else "FAIL"]
        lines.append(cells)
    out = [table(header, lines), ""]
    out.append(
        f"- geometric mean of tirc / eager: {geomean(r.times['tirc'] / r.times['eager'] for r in rows):.3f}"
    )
    if inductor:
        ratio = geomean(r.times["tirc"] / r.times["inductor"] for r in rows)
        out.append(f"- geometric mean of tirc / Inductor: {ratio:.3f}")
    if device == "cuda" and inductor:
        over = [
            f"{r.name} {r.peak['tirc'] / r.peak['inductor']:.2f}"
            for r in rows
            if r.peak["tirc"] > r.peak["inductor"]
        ]
        out.append(f"- peak memory above Inductor's (tirc / Inductor): {', '.join(over) or 'none'}")
    slower = [r.name for r in rows if r.times["tirc"] >= r.times["eager"]]
    out.append(f"- slower than eager: {', '.join(slower) or 'none'}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--write", type=Path, help="markdown file whose train-DEVICE section gets the table")
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--small", action="store_true", help="tiny shapes, no Inductor: a smoke test")
    parser.add_argument("--no-inductor", action="store_true", help="leave Inductor out")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU here")
    workloads = [w for w in WORKLOADS if not args.only or w.name in args.only.split(",")]
    inductor = not (args.small or args.no_inductor)
    where = (
        torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    )
    header = [f"{where}; torch {torch.__version__}; fp32, training mode", ""]
    print("\n".join(header), flush=True)
    rows = []
    for w in workloads:
        torch._dynamo.reset()
        row = run_workload(w, args.device, args.small, inductor)
        print(f"{w.name}: " + ", ".join(f"{n} {1e3 * s:.3f} ms" for n, s in row.times.items()), flush=True)
        rows.append(row)
    text = "\n".join(header + report(rows, args.device, inductor)) + "\n"
    print(text)
    if args.write is not None:
        title = f"## Training step ({'GPU' if args.device == 'cuda' else 'CPU'}: `bench/train.py --device {args.device}`)"
        write_section(args.write, f"train-{args.device}", f"{title}\n\n{text}")
    failed = [r.name for r in rows if not _matches(r)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
