"""Max pooling, 3x3 kernel, stride 2, padding 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.max_pool2d(x, kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(2, 8, 33, 33)]


def get_init_inputs():
    return []
