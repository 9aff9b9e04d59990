"""bf16: tanh-approximate GELU of a permuted input plus a bias, gelu(x.permute(0, 2, 1) + b)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features).bfloat16())

    def forward(self, x):
        return F.gelu(x.permute(0, 2, 1) + self.bias, approximate="tanh")


def get_inputs():
    return [torch.randn(5, 65, 129).bfloat16()]


def get_init_inputs():
    return [65]
