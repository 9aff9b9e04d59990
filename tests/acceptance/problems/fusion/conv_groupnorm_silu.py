"""Conv2d, GroupNorm, SiLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.gn = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        return torch.nn.functional.silu(self.gn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 4, 15, 15)]


def get_init_inputs():
    return [4, 16, 4]
