"""GPU check of training through tirc (run by hand on an NVIDIA machine, not
by pytest):

    python tests/gpu/gpu_training.py

One training step of each model, through `tirc.compile(..., train=True)` and
`torch.compile(backend="tirc")` on the Triton backend, against eager on the
same parameters: the loss, every gradient and every buffer (batch norm's
statistics), fp32, fresh random inputs, odd sizes. The models are those of
tests/tirc/test_training.py at GPU sizes, with a bf16 autocast step of the
transformer block. Exits 1 on any mismatch.
"""

import copy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tirc"))

import tirc  # noqa: E402
from tirc.dynamo import tirc_backend  # noqa: E402
from test_training import Block, ConvBN, EmbeddingHead, GRUSteps, MLP, _cross_entropy  # noqa: E402

CASES = {
    "mlp": (MLP, lambda: [torch.randn(1000, 37)], lambda out: out.pow(2).mean()),
    "conv_bn": (
        ConvBN,
        lambda: [torch.randn(33, 3, 65, 63)],
        lambda out: _cross_entropy(out, torch.arange(33) % 5),
    ),
    "block": (lambda: Block(d=128, heads=4), lambda: [torch.randn(5, 129, 128)], lambda out: out.sum()),
    "gru_cell": (GRUSteps, lambda: [torch.randn(9, 37, 12)], lambda out: out.pow(2).sum()),
    "embedding": (
        EmbeddingHead,
        lambda: [torch.randint(0, 50, (7, 129))],
        lambda out: _cross_entropy(out, torch.arange(7 * 129).view(7, 129) % 50),
    ),
}


def _step(run, inputs, loss_fn, bf16: bool):
    with torch.autocast("cuda", torch.bfloat16, enabled=bf16):
        loss = loss_fn(run(*inputs))
    loss.backward()
    return loss.detach().float()


def check(name: str, mode: str, bf16: bool = False) -> str | None:
    # True float32 convolutions: TF32 (cuDNN's default) makes two algorithms
    # differ by about 1e-3, which would hide a real error of that size.
    torch.backends.cudnn.allow_tf32 = False
    make, inputs, loss_fn = CASES[name]
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = make().cuda().train()
    reference = copy.deepcopy(model)
    xs = [x.cuda() for x in inputs()]
    if mode == "api":
        run = tirc.compile(model, xs, backend="triton", train=True)
    else:
        torch._dynamo.reset()
        run = torch.compile(model, backend=tirc_backend)
    got = _step(run, xs, loss_fn, bf16)
    want = _step(reference, xs, loss_fn, bf16)
    rtol, atol = (2e-2, 2e-2) if bf16 else (1e-4, 1e-5)
    problems = []
    if not torch.allclose(got, want, rtol=rtol, atol=atol):
        problems.append(f"loss {got.item():.6g} vs {want.item():.6g}")
    # float64 judges: convolutions run in TF32 by default on the GPU, and two
    # TF32 algorithms (tirc's channels-last, eager's NCHW) differ by 1e-3.
    wide = copy.deepcopy(reference).double()
    for p in wide.parameters():
        p.grad = None
    _step(wide, [x.double() if x.is_floating_point() else x for x in xs], loss_fn, False)
    scale = max(q.grad.abs().max().item() for q in reference.parameters())
    for (pname, p), q, w in zip(model.named_parameters(), reference.parameters(), wide.parameters()):
        if p.grad is None:
            problems.append(f"{pname}: no gradient")
            continue
        err = (p.grad.float() - q.grad.float()).abs().max().item() / scale
        ours = (p.grad.double() - w.grad).abs().max().item() / scale
        theirs = (q.grad.double() - w.grad).abs().max().item() / scale
        if err > (2e-2 if bf16 else 1e-4) and ours > 2 * theirs + 1e-5:
            problems.append(
                f"{pname}: gradient off by {err:.2e} of the largest (float64: {ours:.1e}, eager {theirs:.1e})"
            )
    for (bname, b), c in zip(model.named_buffers(), reference.buffers()):
        if not torch.allclose(b.float(), c.float(), rtol=rtol, atol=atol):
            problems.append(f"buffer {bname} differs")
    return "; ".join(problems) or None


def main() -> int:
    failed = []
    runs = [(name, mode, False) for name in CASES for mode in ("api", "dynamo")] + [("block", "dynamo", True)]
    for name, mode, bf16 in runs:
        label = f"{name} ({mode}{', bf16 autocast' if bf16 else ''})"
        try:
            problem = check(name, mode, bf16)
        except Exception as err:  # noqa: BLE001 - a failing case is reported, the others still run
            problem = f"{type(err).__name__}: {' '.join(str(err).split())[:600]}"
        print(f"{label}: {problem or 'ok'}", flush=True)
        if problem:
            failed.append(label)
    print(f"failed: {', '.join(failed)}" if failed else "all training checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
