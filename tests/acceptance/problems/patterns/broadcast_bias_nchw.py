"""NCHW pointwise with per-channel broadcasts: a [C] bias (viewed) and a [C,1,1] scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels))
        self.scale = nn.Parameter(torch.randn(channels, 1, 1))

    def forward(self, x):
        return torch.relu((x + self.bias.view(1, -1, 1, 1)) * self.scale)


def get_inputs():
    return [torch.randn(4, 19, 33, 35)]


def get_init_inputs():
    return [19]
