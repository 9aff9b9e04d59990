"""Squeeze-and-excitation block: global average pool, two 1x1 convs, sigmoid gate."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, reduction):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, channels // reduction, 1)
        self.fc2 = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x):
        s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(s))))
        return x * s


def get_inputs():
    return [torch.randn(4, 32, 15, 15)]


def get_init_inputs():
    return [32, 4]
