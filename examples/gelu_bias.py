"""GELU of x + bias, then a Swish-style gate: a small elementwise program."""

import torch


class Model(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(features))

    def forward(self, x):
        y = torch.nn.functional.gelu(x + self.bias)
        return y * torch.sigmoid(y)


def get_inputs():
    return [torch.randn(37, 129)]


def get_init_inputs():
    return [129]
