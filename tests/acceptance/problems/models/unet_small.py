"""A small U-Net-like network: one down step (conv, max pool), a bottleneck,
one up step (nearest interpolate, cat with the skip, conv), a 1x1 head."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, width, out_channels):
        super().__init__()
        self.enc = nn.Conv2d(in_channels, width, 3, padding=1)
        self.mid = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.dec = nn.Conv2d(3 * width, width, 3, padding=1)
        self.head = nn.Conv2d(width, out_channels, 1)

    def forward(self, x):
        skip = torch.relu(self.enc(x))
        y = torch.relu(self.mid(torch.nn.functional.max_pool2d(skip, 2)))
        y = torch.nn.functional.interpolate(y, scale_factor=2, mode="nearest")
        y = torch.relu(self.dec(torch.cat([y, skip], dim=1)))
        return self.head(y)


def get_inputs():
    return [torch.randn(2, 3, 32, 32)]


def get_init_inputs():
    return [3, 8, 2]
