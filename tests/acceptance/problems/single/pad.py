"""Constant padding, uneven on each side."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.pad(x, (1, 2, 3, 0), mode="constant", value=0.5)


def get_inputs():
    return [torch.randn(2, 4, 15, 17)]


def get_init_inputs():
    return []
