"""Reductions on (0, 5): sum over dim 0 (zeros), over dim 1 (shape (0,)), argmax over dim 1, var (nan), cumsum, softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (
            x.sum(dim=0),
            x.sum(dim=1),
            x.argmax(dim=1),
            x.var(dim=0),
            x.cumsum(0),
            torch.softmax(x, dim=0),
            x.amax(dim=1),
            x.mean(dim=0),
        )


def get_inputs():
    return [torch.randn(0, 5)]


def get_init_inputs():
    return []
