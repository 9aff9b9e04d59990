import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.LayerNorm((8, 16))

    def forward(self, x):
        return self.m(x)


def get_inputs():
    return [torch.randn(4, 3, 8, 16)]


def get_init_inputs():
    return []
