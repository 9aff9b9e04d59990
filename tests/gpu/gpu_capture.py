"""GPU check of programs whose capture depends on the device (run by hand on
an NVIDIA machine, not by pytest):

    python tests/gpu/gpu_capture.py

- a 0-d constant traced on the CPU (`y[:, 0] = 0.0`, `torch.tensor(-1e4)`)
  in a program of GPU tensors;
- recurrent layers, which trace through cuDNN's weight flattening unless
  capture turns cuDNN off;
- scaled dot-product attention with a boolean mask of odd length, whose
  bias the memory-efficient kernel wants in aligned rows;
- a training batch norm whose running statistics are read after the update.

Each against eager PyTorch on fresh random inputs; exits 1 on any mismatch.
"""

import sys

import torch
import torch.nn.functional as F

import tirc
from checks import TOL, close_to_eager


def set_column_then_update(x, y):
    y[:, 0] = 0.0
    x.mul_(2).add_(y)
    return x.sum(dim=0), y * 2


def masked_with_a_constant(x, m):
    return torch.where(m > 0, x, torch.tensor(-1e4, dtype=x.dtype)).softmax(-1)


def attention(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class Recurrent(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(24, 40, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x):
        out, _ = self.rnn(x)
        return out


class TrainThenEval(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(37, momentum=0.3)

    def forward(self, x):
        self.bn.train()
        a = self.bn(x)
        self.bn.eval()
        return a, self.bn(x), self.bn.running_var + 0


class ConvBlock(torch.nn.Module):
    """1x1 expansion, depthwise 5x5 stride 2, squeeze-excitation, projection
    (an MBConv), batch norms in training mode, channels-last input."""

    def __init__(self):
        super().__init__()
        self.expand = torch.nn.Conv2d(8, 32, 1, bias=False)
        self.bn0 = torch.nn.BatchNorm2d(32)
        self.depthwise = torch.nn.Conv2d(32, 32, 5, stride=2, padding=2, groups=32, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(32)
        self.squeeze = torch.nn.Conv2d(32, 2, 1)
        self.excite = torch.nn.Conv2d(2, 32, 1)
        self.project = torch.nn.Conv2d(32, 12, 1, bias=False)

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        h = F.silu(self.bn0(self.expand(x)))
        h = F.silu(self.bn1(self.depthwise(h)))
        s = torch.sigmoid(self.excite(F.silu(self.squeeze(h.mean((2, 3), keepdim=True)))))
        return self.project(h * s)


def cuda(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def attention_inputs(dtype, length):
    def make():
        q = cuda(2, 4, 129, 64, dtype=dtype)
        mask = torch.rand(2, 1, 129, length, device="cuda") > 0.3
        return [q, cuda(2, 4, length, 64, dtype=dtype), cuda(2, 4, length, 64, dtype=dtype), mask]

    return make


CASES = {
    "set_column_then_update": (set_column_then_update, lambda: [cuda(129, 37), cuda(129, 37)]),
    "masked_with_a_constant": (masked_with_a_constant, lambda: [cuda(129, 1000), cuda(129, 1000)]),
    "attention_f16_297": (attention, attention_inputs(torch.float16, 297)),
    "attention_bf16_1000": (attention, attention_inputs(torch.bfloat16, 1000)),
    "attention_f32_37": (attention, attention_inputs(torch.float32, 37)),
}


def check(name, fn, make) -> bool:
    try:
        compiled = tirc.compile(fn, make(), backend="triton", device="cuda")
        torch.manual_seed(1)
        fresh = make()
        mine, theirs = [t.clone() for t in fresh], [t.clone() for t in fresh]
        got, want = compiled(*mine), fn(*theirs)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip([*got, *mine], [*want, *theirs], strict=True):
            rtol, atol = TOL.get(w.dtype, (0, 0))
            torch.testing.assert_close(g, w, rtol=rtol, atol=atol)
        print(f"ok   {name}")
        return True
    except Exception as err:  # report every failure, then exit 1
        print(f"FAIL {name}: {type(err).__name__}: {str(err).splitlines()[0][:300]}")
        return False


def check_module(name, make_model, make_input) -> bool:
    """Outputs and updated buffers against eager's, or no farther from a
    float64 run than twice eager is: cuDNN's recurrent layers compute float32
    in TF32 (torch.backends.cudnn.allow_tf32), tirc's matmuls in float32."""
    try:
        models = []
        for dtype in (torch.float32, torch.float32, torch.float64):
            torch.manual_seed(0)
            models.append(make_model().to("cuda", dtype))
        model, eager, exact = models
        compiled = tirc.compile(model, [make_input()], backend="triton", device="cuda")
        x = make_input()
        got, want, reference = compiled(x), eager(x), exact(x.double())
        if not isinstance(want, tuple):
            got, want, reference = (got,), (want,), (reference,)
        pairs = zip(
            [*got, *model.buffers()], [*want, *eager.buffers()], [*reference, *exact.buffers()], strict=True
        )
        for g, w, r in pairs:
            close_to_eager(g, w, r.to(w.dtype) if not w.is_floating_point() else r)
        print(f"ok   {name}")
        return True
    except Exception as err:
        print(f"FAIL {name}: {type(err).__name__}: {str(err).splitlines()[0][:300]}")
        return False


def main() -> int:
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    torch.manual_seed(0)
    results = [check(name, fn, make) for name, (fn, make) in CASES.items()]
    for kind in ("LSTM", "GRU"):
        results.append(
            check_module(
                f"{kind.lower()}_bidirectional", lambda k=kind: Recurrent(k), lambda: cuda(3, 13, 24)
            )
        )
    results.append(check_module("batch_norm_train_then_eval", TrainThenEval, lambda: cuda(129, 37) * 2 + 1))
    results.append(check_module("conv_block", ConvBlock, lambda: cuda(2, 8, 15, 13)))
    failures = results.count(False)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
