import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Identity()

    def forward(self, x):
        return torch.cumsum(x * (x > 0), dim=1)


def get_inputs():
    return [torch.randn(4, 1000)]


def get_init_inputs():
    return []
