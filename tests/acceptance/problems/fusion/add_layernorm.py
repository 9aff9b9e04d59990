"""Residual add, then LayerNorm (post-norm transformer step)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x, residual):
        return self.ln(x + residual)


def get_inputs():
    return [torch.randn(4, 37, 256), torch.randn(4, 37, 256)]


def get_init_inputs():
    return [256]
