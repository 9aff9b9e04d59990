"""ConvTranspose2d, add a constant, clamp to a range."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, add_value):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1)
        self.add_value = add_value

    def forward(self, x):
        return torch.clamp(self.conv(x) + self.add_value, min=-0.5, max=0.5)


def get_inputs():
    return [torch.randn(2, 8, 9, 9)]


def get_init_inputs():
    return [8, 4, 0.1]
