"""1D convolution, kernel 5, stride 2."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(4, 8, 129)]


def get_init_inputs():
    return [8, 16, 5]
