"""A chain of ten elementwise ops on two inputs (one kernel for any fusing compiler)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        a = x * 1.5
        a = a + y
        a = torch.sin(a)
        a = a * a
        a = a - 0.25
        a = torch.exp(a)
        a = a / (y.abs() + 1.0)
        a = torch.tanh(a)
        a = torch.sigmoid(a) + x
        return torch.relu(a)


def get_inputs():
    return [torch.randn(33, 129, 17), torch.randn(33, 129, 17)]


def get_init_inputs():
    return []
