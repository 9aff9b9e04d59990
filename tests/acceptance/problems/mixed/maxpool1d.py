import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.MaxPool1d(4, stride=2, padding=2, dilation=3)

    def forward(self, x):
        return self.m(x)


def get_inputs():
    return [torch.randn(4, 3, 37)]


def get_init_inputs():
    return []
