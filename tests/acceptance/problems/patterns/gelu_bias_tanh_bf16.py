"""GELU (tanh approximation) of x + bias, in bfloat16."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features).to(torch.bfloat16))

    def forward(self, x):
        return F.gelu(x + self.bias, approximate="tanh")


def get_inputs():
    return [torch.randn(37, 16, 129).to(torch.bfloat16)]


def get_init_inputs():
    return [129]
