"""Transposed 2D convolution, stride 2 (upsampling)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1
        )

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 8, 15, 15)]


def get_init_inputs():
    return [8, 4, 3]
