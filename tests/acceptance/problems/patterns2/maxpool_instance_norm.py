"""max_pool2d (3x3, stride 2, padding 1) followed by an affine instance norm."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, affine=True)

    def forward(self, x):
        return self.norm(F.max_pool2d(x, kernel_size=3, stride=2, padding=1))


def get_inputs():
    return [torch.randn(3, 17, 33, 37)]


def get_init_inputs():
    return [17]
