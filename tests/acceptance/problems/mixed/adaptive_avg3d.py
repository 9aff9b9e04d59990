import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.AdaptiveAvgPool3d((2, 3, 1))

    def forward(self, x):
        return self.m(x)


def get_inputs():
    return [torch.randn(2, 3, 7, 8, 5)]


def get_init_inputs():
    return []
