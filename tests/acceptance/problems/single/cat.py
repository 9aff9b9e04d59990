"""Concatenation of three tensors along dimension 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return torch.cat([a, b, c], dim=1)


def get_inputs():
    return [torch.randn(4, 17, 33), torch.randn(4, 5, 33), torch.randn(4, 11, 33)]


def get_init_inputs():
    return []
