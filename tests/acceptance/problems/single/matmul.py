"""Matrix multiplication of two rectangular matrices (odd sizes)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(37, 129), torch.randn(129, 65)]


def get_init_inputs():
    return []
