"""Min over a dimension, values and indices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.min(x, dim=2)


def get_inputs():
    return [torch.randn(8, 37, 65)]


def get_init_inputs():
    return []
