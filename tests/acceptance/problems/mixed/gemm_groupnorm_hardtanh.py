import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.Sequential(nn.Linear(32, 64), nn.GroupNorm(8, 64), nn.Hardtanh())

    def forward(self, x):
        return self.m(x)


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return []
