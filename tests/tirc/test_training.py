"""Training through tirc: `tirc.compile(..., train=True)` and
`torch.compile(backend="tirc")` with autograd on give the loss, the
gradients of parameters and inputs and batch norm's updated statistics of
eager PyTorch, on both backends (Triton through its interpreter)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tirc


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(37, 129), nn.GELU(), nn.LayerNorm(129), nn.Linear(129, 10))

    def forward(self, x):
        return self.net(x)


class ConvBN(nn.Module):
    """A residual CNN with batch norm in training mode and a pooled head."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)) + y)
        return self.fc(F.max_pool2d(y, 2).mean((2, 3)))


class Block(nn.Module):
    """A pre-norm transformer block with causal attention."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GRUSteps(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell, self.out = nn.GRUCell(12, 20), nn.Linear(20, 3)

    def forward(self, x):
        h = x.new_zeros(x.shape[1], 20)
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
        return self.out(h)


class EmbeddingHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.out = nn.Embedding(50, 16), nn.Linear(16, 50)

    def forward(self, tokens):
        return self.out(torch.tanh(self.embed(tokens)))


def _cross_entropy(outputs, targets):
    return F.cross_entropy(outputs.flatten(0, -2), targets.flatten().to(outputs.device))


CASES = {
    "mlp": (MLP, lambda: [torch.randn(7, 37)], lambda out: out.pow(2).mean()),
    "conv_bn": (
        ConvBN,
        lambda: [torch.randn(4, 3, 13, 13)],
        lambda out: _cross_entropy(out, torch.arange(4)),
    ),
    "block": (Block, lambda: [torch.randn(3, 9, 32)], lambda out: out.sum()),
    "gru_cell": (GRUSteps, lambda: [torch.randn(5, 4, 12)], lambda out: out.pow(2).sum()),
    "embedding": (
        EmbeddingHead,
        lambda: [torch.randint(0, 50, (3, 11))],
        lambda out: _cross_entropy(out, torch.arange(33).view(3, 11) % 50),
    ),
}


def _step(module, inputs, loss_fn):
    loss = loss_fn(module(*inputs))
    loss.backward()
    return loss.detach()


def _assert_same_step(compiled_model, eager_model, run, inputs, loss_fn):
    """One step of `run` (the compiled model) and of eager on copies of the
    same parameters: the losses, every gradient and every buffer agree."""
    expected = _step(eager_model, inputs, loss_fn)
    actual = _step(run, inputs, loss_fn)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    # Tolerance scaled by the model's largest gradient: a bias before batch
    # norm has a gradient of rounding noise only (the norm removes the mean).
    scale = max(q.grad.abs().max().item() for q in eager_model.parameters())
    for (name, p), q in zip(compiled_model.named_parameters(), eager_model.parameters()):
        assert p.grad is not None, f"{name} got no gradient"
        torch.testing.assert_close(
            p.grad, q.grad, rtol=1e-4, atol=1e-5 * scale, msg=lambda m, name=name: f"{name}: {m}"
        )
    for (name, b), c in zip(compiled_model.named_buffers(), eager_model.buffers()):
        torch.testing.assert_close(b, c, msg=lambda m, name=name: f"buffer {name}: {m}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_api_training_step_matches_eager(case):
    make, inputs, loss_fn = CASES[case]
    torch.manual_seed(0)
    model = make().train()
    reference = copy.deepcopy(model)
    xs = inputs()
    compiled = tirc.compile(model, xs, train=True)
    assert compiled.forward_program is not None and compiled.backward_program is None
    _assert_same_step(model, reference, compiled, xs, loss_fn)
    assert compiled.backward_program is not None, "the first backward() compiles the backward graph"
    # a second step, after an optimizer step on the parameters in place
    for m in (model, reference):
        with torch.no_grad():
            for p in m.parameters():
                p -= 0.1 * p.grad
                p.grad = None
    _assert_same_step(model, reference, compiled, inputs(), loss_fn)


@pytest.mark.parametrize("case", ["mlp", "conv_bn"])
def test_api_training_step_matches_eager_on_triton(case):
    make, inputs, loss_fn = CASES[case]
    torch.manual_seed(1)
    model = make().train()
    reference = copy.deepcopy(model)
    xs = inputs()
    compiled = tirc.compile(model, xs, backend="triton", train=True)
    _assert_same_step(model, reference, compiled, xs, loss_fn)


def test_input_gradients_of_a_function():
    def f(x, w):
        return torch.sigmoid(x @ w).sum(1) * x[:, 0]

    x = torch.randn(37, 5, requires_grad=True)
    w = torch.randn(5, 3, requires_grad=True)
    compiled = tirc.compile(f, [x, w], train=True)
    compiled(x, w).sum().backward()
    got = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    f(x, w).sum().backward()
    torch.testing.assert_close(got[0], x.grad)
    torch.testing.assert_close(got[1], w.grad)


def test_train_needs_something_that_requires_grad():
    with pytest.raises(tirc.TircError, match="nothing requires a gradient"):
        tirc.compile(lambda x: x.exp(), [torch.randn(3)], train=True)


def test_torch_compile_trains_across_a_graph_break():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(13, 21), nn.Linear(21, 4)

        def forward(self, x):
            y = torch.tanh(self.a(x))
            torch._dynamo.graph_break()
            return self.b(y * 2.0)

    torch._dynamo.reset()
    torch.manual_seed(2)
    model = Broken()
    reference = copy.deepcopy(model)
    run = torch.compile(model, backend="tirc")
    x = torch.randn(6, 13)
    _assert_same_step(model, reference, run, [x], lambda out: out.pow(2).mean())


def test_torch_compile_without_gradients_compiles_for_inference():
    """No grad: the one-graph inference path, whose outputs need no autograd."""
    torch._dynamo.reset()
    model = MLP()
    with torch.no_grad():
        out = torch.compile(model, backend="tirc")(torch.randn(4, 37))
    assert out.grad_fn is None


def test_sgd_with_momentum_follows_eager_for_200_steps():
    """A small transformer trained 200 steps: the loss curve stays within
    1e-3 relative of eager's at every step."""
    torch.manual_seed(3)
    model = nn.Sequential(Block(d=16, heads=2), nn.LayerNorm(16), nn.Linear(16, 7))
    reference = copy.deepcopy(model)
    data = torch.randn(4, 6, 16)
    targets = torch.randint(0, 7, (4, 6))
    compiled = tirc.compile(model, [data], train=True)
    runs = {"tirc": (model, compiled), "eager": (reference, reference)}
    curves = {}
    for name, (params, run) in runs.items():
        optimizer = torch.optim.SGD(params.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for _ in range(200):
            optimizer.zero_grad()
            loss = _cross_entropy(run(data), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        curves[name] = torch.tensor(losses)
    relative = ((curves["tirc"] - curves["eager"]).abs() / curves["eager"].abs()).max().item()
    assert (
        curves["eager"][-1] < 0.5 * curves["eager"][0]
    ), "the model must learn for the test to mean anything"
    assert relative < 1e-3, f"loss curves differ by {relative:.2e} relative"


def test_torch_compile_trains_at_a_new_batch_size():
    """Dynamo marks a graph dynamic after a call with new sizes (the last
    batch of an epoch): each concrete size is compiled for training."""
    torch._dynamo.reset()
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(13, 17), nn.Tanh(), nn.Linear(17, 3))
    reference = copy.deepcopy(model)
    run = torch.compile(model, backend="tirc")
    for batch in (5, 9, 37):
        for m in (model, reference):
            m.zero_grad()
        _assert_same_step(model, reference, run, [torch.randn(batch, 13)], lambda out: out.pow(2).sum())
