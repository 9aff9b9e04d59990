"""nn.GroupNorm, 4 groups of 4 channels."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)
        with torch.no_grad():
            self.gn.weight.copy_(torch.randn(channels))
            self.gn.bias.copy_(torch.randn(channels))

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(4, 16, 15, 15)]


def get_init_inputs():
    return [4, 16]
