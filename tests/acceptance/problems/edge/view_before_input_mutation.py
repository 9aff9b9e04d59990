"""A view of an input taken before the input is updated in place must show the update (eager's views alias)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        v = x[0]
        t = x.t()
        x.add_(1.0)
        x[1].mul_(3.0)
        return v * 1.0, t.sum(dim=0), x


def get_inputs():
    return [torch.randn(5, 7)]


def get_init_inputs():
    return []
