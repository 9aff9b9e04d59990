"""SwiGLU feed-forward: W3(silu(W1 x) * W2 x), no biases."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w3(torch.nn.functional.silu(self.w1(x)) * self.w2(x))


def get_inputs():
    return [torch.randn(4, 37, 64)]


def get_init_inputs():
    return [64, 172]
