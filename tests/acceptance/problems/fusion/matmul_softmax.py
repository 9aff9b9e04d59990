"""Matmul followed by a row softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.softmax(a @ b, dim=-1)


def get_inputs():
    return [torch.randn(37, 64), torch.randn(64, 129)]


def get_init_inputs():
    return []
