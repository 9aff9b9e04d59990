"""Depthwise-separable conv block: depthwise 3x3 (groups=C)-BN-ReLU, pointwise 1x1-BN-ReLU."""

import torch
import torch.nn as nn


def _randomize(bn):
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(bn.num_features) * 0.5)
        bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
    return bn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.dw = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.bn1 = _randomize(nn.BatchNorm2d(in_channels))
        self.pw = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn2 = _randomize(nn.BatchNorm2d(out_channels))

    def forward(self, x):
        x = torch.relu(self.bn1(self.dw(x)))
        return torch.relu(self.bn2(self.pw(x)))


def get_inputs():
    return [torch.randn(2, 16, 17, 17)]


def get_init_inputs():
    return [16, 32]
