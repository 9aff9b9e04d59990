"""GELU (tanh approximation) of x + bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return torch.nn.functional.gelu(x + self.bias, approximate="tanh")


def get_inputs():
    return [torch.randn(8, 37, 129)]


def get_init_inputs():
    return [129]
