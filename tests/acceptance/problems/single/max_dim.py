"""Max values over a dimension (values only)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.max(x, dim=1).values


def get_inputs():
    return [torch.randn(8, 129, 37)]


def get_init_inputs():
    return []
