"""Residual of two column halves of one tensor: relu(x[:, :65] + x[:, 65:]) * x[:, :65]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        a = x[:, :65]
        b = x[:, 65:]
        return torch.relu(a + b) * a


def get_inputs():
    return [torch.randn(257, 130)]


def get_init_inputs():
    return []
