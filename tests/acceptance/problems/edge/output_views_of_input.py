"""Outputs that are views of the input: itself, its transpose, a slice, a flat view."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x, x.t(), x[1:, 2:], x.view(-1), x.unsqueeze(0)


def get_inputs():
    return [torch.randn(13, 37)]


def get_init_inputs():
    return []
