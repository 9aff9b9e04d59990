"""nn.GroupNorm with 4 groups of 6 channels on an NCHW tensor, affine."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)
        with torch.no_grad():
            self.gn.weight.normal_()
            self.gn.bias.normal_()

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(3, 24, 17, 19)]


def get_init_inputs():
    return [4, 24]
