import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        idx = (x.abs() * 3).long() % 4
        return torch.zeros(4, x.shape[1]).scatter_add(0, idx, x)


def get_inputs():
    return [torch.randn(6, 5)]


def get_init_inputs():
    return []
