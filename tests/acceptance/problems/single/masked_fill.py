"""masked_fill with a boolean mask input."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        return x.masked_fill(mask, -1.5)


def get_inputs():
    return [torch.randn(8, 37, 65), torch.randn(8, 37, 65) > 0.3]


def get_init_inputs():
    return []
