"""Sort descending along the last dimension, values and indices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sort(x, dim=-1, descending=True)


def get_inputs():
    return [torch.randn(8, 37)]


def get_init_inputs():
    return []
