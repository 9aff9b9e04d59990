"""Reductions over all dims with keepdim, over (-1,-3) and over (0,2)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (
            x.sum(dim=(0, 1, 2), keepdim=True),
            x.amax(dim=(-1, -3)),
            x.mean(dim=(0, 2), keepdim=True),
            x.amin(dim=(2, 0, 1)),
        )


def get_inputs():
    return [torch.randn(5, 7, 9)]


def get_init_inputs():
    return []
