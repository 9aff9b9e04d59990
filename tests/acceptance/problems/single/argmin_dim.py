"""Argmin over the last dimension (int64 result)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmin(x, dim=-1)


def get_inputs():
    return [torch.randn(16, 257)]


def get_init_inputs():
    return []
