"""A tiny dense-routed mixture of experts: RMSNorm, softmax router, weighted sum of 3 SiLU expert MLPs, residual."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(nn.functional.silu(self.fc1(x)))


class Model(nn.Module):
    def __init__(self, dim, hidden, num_experts):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.router = nn.Linear(dim, num_experts)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])
        self.out_norm = RMSNorm(dim)

    def forward(self, x):
        h = self.norm(x)
        weights = torch.softmax(self.router(h), dim=-1)
        mixed = torch.zeros_like(h)
        for i, expert in enumerate(self.experts):
            mixed = mixed + weights[..., i : i + 1] * expert(h)
        return self.out_norm(x + mixed)


def get_inputs():
    return [torch.randn(2, 29, 48)]


def get_init_inputs():
    return [48, 64, 3]
