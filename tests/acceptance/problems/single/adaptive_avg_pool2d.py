"""Adaptive average pooling to 5x5 from 17x17 (uneven windows)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.adaptive_avg_pool2d(x, (5, 5))


def get_inputs():
    return [torch.randn(2, 8, 17, 17)]


def get_init_inputs():
    return []
