"""cumsum along the last dim, then pointwise ops on the running sums."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        c = torch.cumsum(x, dim=-1)
        return torch.tanh(c * 0.1) + x


def get_inputs():
    return [torch.randn(37, 257)]


def get_init_inputs():
    return []
