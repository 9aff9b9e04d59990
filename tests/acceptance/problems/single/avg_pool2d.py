"""Average pooling, 2x2, stride 2."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.avg_pool2d(x, kernel_size=2)


def get_inputs():
    return [torch.randn(2, 8, 32, 32)]


def get_init_inputs():
    return []
