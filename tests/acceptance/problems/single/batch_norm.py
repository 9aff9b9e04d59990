"""nn.BatchNorm2d in eval mode, with non-trivial running statistics."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.randn(channels) * 0.5)
            self.bn.running_var.copy_(torch.rand(channels) + 0.5)
            self.bn.weight.copy_(torch.randn(channels))
            self.bn.bias.copy_(torch.randn(channels))

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(4, 16, 15, 17)]


def get_init_inputs():
    return [16]
