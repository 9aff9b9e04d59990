"""Conv2d, BatchNorm2d (eval), ReLU: the classic fold-and-fuse pattern."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.randn(out_channels) * 0.5)
            self.bn.running_var.copy_(torch.rand(out_channels) + 0.5)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 8, 16, 16)]


def get_init_inputs():
    return [8, 16]
