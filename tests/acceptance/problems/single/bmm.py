"""Batched matrix multiplication."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(4, 33, 48), torch.randn(4, 48, 17)]


def get_init_inputs():
    return []
