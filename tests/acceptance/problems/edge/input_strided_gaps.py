"""Inputs with gaps and stride 0 everywhere: a row-padded slice, a 1-D stride-3 view, a 0-d value expanded to 2-D."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b, c):
        return a * 2.0 + a.sum(dim=1, keepdim=True), b.cumsum(0), c + a[:, :13], c.sum()


def get_inputs():
    return [torch.randn(37, 40)[:, :37], torch.randn(120)[::3], torch.randn(()).expand(37, 13)]


def get_init_inputs():
    return []
