"""torch.index_select of rows, with repeated indices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, idx):
        return torch.index_select(x, 0, idx)


def get_inputs():
    return [torch.randn(64, 37), torch.randint(0, 64, (100,))]


def get_init_inputs():
    return []
