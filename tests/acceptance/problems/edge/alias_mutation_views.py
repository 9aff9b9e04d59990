"""Views that must see later in-place updates: a flat view of a tensor updated after, a transpose mutated."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = x * 2.0
        z = y.view(-1)
        y.add_(1.0)
        a = x.clone()
        b = a.t()
        b.mul_(3.0)
        b[0].zero_()
        r = y[0]
        y.mul_(10.0)
        return z, a, r


def get_inputs():
    return [torch.randn(7, 13)]


def get_init_inputs():
    return []
