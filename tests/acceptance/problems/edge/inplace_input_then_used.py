"""An input updated in place twice, read between updates, and returned."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        x.add_(1)
        z = x * y
        x.mul_(2)
        y.sub_(z)
        return z + x, y


def get_inputs():
    return [torch.randn(37, 29), torch.randn(37, 29)]


def get_init_inputs():
    return []
