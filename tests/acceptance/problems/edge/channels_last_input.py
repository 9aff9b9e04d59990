"""A channels_last NCHW input: channel mean, relu, and a per-channel sum."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.mean(dim=1), torch.relu(x) * 0.5, x.sum(dim=(0, 2, 3))


def get_inputs():
    return [torch.randn(2, 5, 7, 9).to(memory_format=torch.channels_last)]


def get_init_inputs():
    return []
