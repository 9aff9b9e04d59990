"""Bool reductions: (x > 2).any over rows and (x > -3).all over columns, returned together."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x > 2.0).any(dim=1), (x > -3.0).all(dim=0)


def get_inputs():
    return [torch.randn(257, 129)]


def get_init_inputs():
    return []
