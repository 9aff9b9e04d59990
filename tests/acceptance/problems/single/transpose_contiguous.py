"""Transpose of two dimensions, made contiguous."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.transpose(1, 2).contiguous()


def get_inputs():
    return [torch.randn(4, 37, 65)]


def get_init_inputs():
    return []
