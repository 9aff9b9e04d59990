"""Softmax over dim 1 (not the innermost) of a 3-D float16 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(6, 37, 129).half()]


def get_init_inputs():
    return []
