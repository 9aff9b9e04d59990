"""Divide each row by its (unbiased) standard deviation over the last dim: x / (x.std(-1) + eps)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x / (x.std(dim=-1, keepdim=True) + 1e-5)


def get_inputs():
    return [torch.randn(5, 37, 257)]


def get_init_inputs():
    return []
