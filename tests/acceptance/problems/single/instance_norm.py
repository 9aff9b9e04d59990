"""nn.InstanceNorm2d (no affine, no running statistics)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(4, 8, 17, 17)]


def get_init_inputs():
    return [8]
