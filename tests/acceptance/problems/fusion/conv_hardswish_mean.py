"""Conv2d, HardSwish, then mean over the spatial dimensions."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x):
        return torch.nn.functional.hardswish(self.conv(x)).mean(dim=[2, 3])


def get_inputs():
    return [torch.randn(4, 3, 17, 17)]


def get_init_inputs():
    return [3, 16]
