"""Two chained reductions with pointwise between: (x - x.mean(-1)).abs().max(-1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        centered = x - x.mean(dim=-1, keepdim=True)
        return centered.abs().amax(dim=-1)


def get_inputs():
    return [torch.randn(9, 37, 257)]


def get_init_inputs():
    return []
