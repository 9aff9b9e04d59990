"""bf16 pre-norm MLP with residual: x + fc2(silu(fc1(layernorm(x)))); the matmuls stay extern calls."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.ln = nn.LayerNorm(features)
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, features)
        self.to(torch.bfloat16)

    def forward(self, x):
        return x + self.fc2(F.silu(self.fc1(self.ln(x))))


def get_inputs():
    return [torch.randn(3, 33, 65).bfloat16()]


def get_init_inputs():
    return [65, 129]
