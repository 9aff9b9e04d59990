"""Matmul with a weight, an explicit bias add, then GELU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        return torch.nn.functional.gelu(x @ self.weight + self.bias)


def get_inputs():
    return [torch.randn(37, 129)]


def get_init_inputs():
    return [129, 256]
