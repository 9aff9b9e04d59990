"""Sum over a middle dimension, keepdim."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(8, 129, 37)]


def get_init_inputs():
    return []
