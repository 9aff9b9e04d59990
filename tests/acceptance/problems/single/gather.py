"""torch.gather along dimension 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, idx):
        return torch.gather(x, 1, idx)


def get_inputs():
    return [torch.randn(16, 129), torch.randint(0, 129, (16, 37))]


def get_init_inputs():
    return []
