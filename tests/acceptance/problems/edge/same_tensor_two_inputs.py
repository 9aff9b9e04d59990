"""One tensor passed as both inputs (aliased arguments)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a * b + b, (a - b).abs().sum()


def get_inputs():
    t = torch.randn(37, 29)
    return [t, t]


def get_init_inputs():
    return []
