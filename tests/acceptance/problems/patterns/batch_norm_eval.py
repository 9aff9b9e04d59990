"""nn.BatchNorm2d in eval mode (running statistics and affine parameters, all non-trivial)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.normal_()
            self.bn.bias.normal_()
        self.eval()

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(4, 23, 31, 29)]


def get_init_inputs():
    return [23]
