"""Conv2d, ReLU, 2x2 max pooling."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)


def get_inputs():
    return [torch.randn(2, 3, 32, 32)]


def get_init_inputs():
    return [3, 16]
